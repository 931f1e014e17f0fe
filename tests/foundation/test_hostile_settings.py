"""Environment numbers that are no numbers (issue #25, the same class as `--timeout nan`): NaN
and infinity fall back to the default where a bad value always did, the write lock's timings
name the variable, and a Unicode digit in a test hook is not taken for a count."""

from __future__ import annotations

import pytest

from box_memory import settings


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
@pytest.mark.parametrize(
    ("var", "read", "default"),
    [
        ("BOX_MEMORY_PROGRESS_AFTER_S", settings.progress_after_s, 1.0),
        ("BOX_MEMORY_LISTING_TRUST_S", settings.listing_trust_s, 60.0),
        ("BOX_MEMORY_TOOL_TIMEOUT_S", settings.tool_timeout_s, 300.0),
        ("BOX_MEMORY_READ_TIMEOUT_S", settings.read_timeout_s, 30.0),
    ],
)
def test_a_non_finite_number_is_the_default(monkeypatch, var: str, read, default: float, value: str) -> None:
    monkeypatch.setenv(var, value)
    assert read() == default


@pytest.mark.parametrize(
    "var", ["BOX_MEMORY_LOCK_STALE_S", "BOX_MEMORY_LOCK_WAIT_S", "BOX_MEMORY_LOCK_RENEW_S"]
)
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "abc"])
def test_lock_timing_names_the_variable(monkeypatch, var: str, value: str) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ValueError, match=f"{var} must be a number of seconds"):
        settings.lock_timing()


def test_a_bad_lock_timing_is_one_line_from_the_cli(cli, ws, monkeypatch) -> None:
    monkeypatch.setenv("BOX_MEMORY_LOCK_WAIT_S", "nan")
    env = cli.json("write", "x", "--title", "Blocked by a bad setting", "-w", str(ws), code=1)
    assert "BOX_MEMORY_LOCK_WAIT_S must be a number of seconds" in env["errors"][0]["message"]


def test_unicode_digits_in_test_hooks_are_ignored(monkeypatch) -> None:
    monkeypatch.setenv("BOX_MEMORY_FAIL_READ", "a.md:²,b.md:1")
    assert settings.injected_faults("read") == {"b.md": 1}
    monkeypatch.setenv("BOX_MEMORY_HANG_READ", "a.md:²,b.md:0.5")
    assert settings.injected_hangs() == {"a.md": 3600.0, "b.md": 0.5}
