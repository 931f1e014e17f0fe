"""Every command's Box calls end by one overall deadline (BOX_MEMORY_DEADLINE_S), retries included.

Against the emulator over real HTTP: a sustained 429 whose Retry-After is longer than the deadline
ends a command at once with a sentence naming the wait; a Box that answers slowly ends a command
at the deadline, not after each call's own retries and timeouts add up.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from box_memory import settings
from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend
from tests.conftest import Cli


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _timed(cli: Cli, *args: str) -> tuple[Any, float]:
    started = time.monotonic()
    res = cli(*args)
    return res, time.monotonic() - started


def test_a_retry_after_longer_than_the_deadline_ends_the_command_at_once(
    cloud: Backend, emu: Emulator, cli: Cli
) -> None:
    before = _tree(cloud.root)
    emu.configure(error_rate=1.0, error_kinds=("429",), retry_after_s=3600)
    emu.reset_calls()
    for args in (("write", "We decided to wait.", "--title", "Rate limited"), ("recall", "anything")):
        res, elapsed = _timed(cli, *args, "-w", cloud.spec)
        assert res.exit_code == 4, (args, res.output)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        line = lines[0]
        assert "429" in line and "asks to wait 3600 s (Retry-After)" in line, line
        assert "deadline (BOX_MEMORY_DEADLINE_S)" in line and line.endswith("; try again later"), line
        assert elapsed < 10, (args, elapsed)  # not 4 x 30 s of capped waits per call
    # One attempt per command: the server said when to come back, so it was not asked again.
    assert Counter(c.outcome for c in emu.calls) == {"http_429": 2}
    env = cloud.run("recall", "anything", code=4)
    assert env["errors"][0]["code"] == "rate_limited"
    emu.configure(error_rate=0.0)
    assert _tree(cloud.root) == before  # the refused write changed nothing in Box


def test_a_short_retry_after_is_still_waited_out(cloud: Backend, emu: Emulator) -> None:
    emu.configure(error_rate=0.5, error_kinds=("429",), retry_after_s=0, seed=3)
    emu.reset_calls()
    assert cloud.data("write", "We decided to retry.", "--title", "Retried")["id"]
    assert Counter(c.outcome for c in emu.calls)["http_429"] > 0


def test_a_slow_box_ends_the_command_at_its_deadline(
    cloud: Backend, emu: Emulator, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_DEADLINE_S", "2")
    emu.configure(latency_ms=1500)  # each call: 1.5 s; a write makes about ten
    args = ("write", "We decided to be patient.", "--title", "Slow", "-w", cloud.spec, "--json")
    res, elapsed = _timed(cli, *args)
    env = json.loads(res.stdout)
    assert res.exit_code == 4, env
    assert env["errors"][0]["code"] == "deadline_exceeded", env
    message = env["errors"][0]["message"]
    assert "did not finish within its 2 s deadline (BOX_MEMORY_DEADLINE_S; 0 for none)" in message
    assert elapsed < 2 + 0.5 + 4, elapsed  # the deadline, its grace, and closing the session


def test_a_write_cut_by_the_deadline_still_releases_the_lock(
    cloud: Backend, emu: Emulator, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_DEADLINE_S", "3")
    emu.configure(latency_ms=400)  # a write makes about ten calls: it is cut after taking the lock
    args = ("write", "We decided to hurry.", "--title", "Cut", "-w", cloud.spec, "--json")
    cut = json.loads(cli(*args).stdout)
    said = json.dumps(cut)
    assert "within its 3 s deadline" in said, cut  # the deadline cut it (an error or a warning)
    assert "could not release the workspace lock" not in said, cut  # the grace let it put the lock back
    monkeypatch.delenv("BOX_MEMORY_DEADLINE_S")
    emu.configure(latency_ms=0)
    res, elapsed = _timed(cli, "write", "We decided to go on.", "--title", "After", "-w", cloud.spec)
    assert res.exit_code == 0, res.output
    assert elapsed < 10, elapsed  # not the lock's 15 s wait for a holder that never let go


@pytest.mark.parametrize(("deadline", "code"), [("1", 4), ("0", 0)])
def test_zero_turns_the_deadline_off(
    cloud: Backend, emu: Emulator, cli: Cli, monkeypatch: pytest.MonkeyPatch, deadline: str, code: int
) -> None:
    monkeypatch.setenv("BOX_MEMORY_DEADLINE_S", deadline)
    emu.configure(latency_ms=1200)  # a recall makes at least two calls
    res = cli("recall", "anything", "-w", cloud.spec)
    assert res.exit_code == code, res.output


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 180.0), ("30", 30.0), ("0", None), ("-5", 180.0), ("soon", 180.0), ("1e9", 180.0)],
)
def test_deadline_setting(value: str | None, expected: float | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv("BOX_MEMORY_DEADLINE_S", raising=False)
    else:
        monkeypatch.setenv("BOX_MEMORY_DEADLINE_S", value)
    assert settings.deadline_s() == expected


def test_brain_sync_is_long_by_design_and_has_no_deadline(
    emu: Emulator, cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cli.json("init", "--path", str(tmp_path / "ws"))  # a Box Brain source belongs to a workspace
    folder = emu.fs.root / "brain-docs"
    for n in range(3):
        (folder / f"doc-{n}.md").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"doc-{n}.md").write_text(f"document {n}\n", encoding="utf-8")
    monkeypatch.setenv("BOX_MEMORY_DEADLINE_S", "0.5")
    emu.configure(latency_ms=800)  # a listing, then the reads: 1.6 s at the very least
    res, elapsed = _timed(
        cli, "brain-sync", "--folder-id", emu.fs.id_for_path("brain-docs"), "--no-ai-summaries", "--json"
    )
    env = json.loads(res.stdout)
    assert res.exit_code == 0, env
    assert env["data"]["runs"][0]["status"] == "completed", env
    assert elapsed > 1.5, env  # well past the deadline
