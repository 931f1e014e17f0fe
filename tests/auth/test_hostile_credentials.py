"""Hostile credentials files and options (issue #25): a FIFO or /dev/zero in place of the
credentials file, times that are no times, and timeouts that are no durations each end in one
line and the documented exit code, never a hang, a MemoryError or a traceback."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from box_memory.box import credentials, oauth
from tests.helpers.child import run_bounded

HANG_LIMIT_S = 60  # far above a normal run (about a second); a hang fails here, not the suite
MEMORY_LIMIT = 2 * 1024**3  # address space of the child: reading /dev/zero fails fast, not the machine


def bm(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The real console entry point in its own process, killed if it does not end in time."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOX_")}
    env["BOX_MEMORY_HOME"] = str(home)
    env["BOX_MCP_URL"] = "http://127.0.0.1:9/"  # never reached: the credentials fail first
    return run_bounded(*args, env=env, timeout=HANG_LIMIT_S, memory=MEMORY_LIMIT)


def creds_file(home: Path) -> Path:
    path = home / "config" / "credentials.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("command", [("auth", "status"), ("mcp-check",)])
def test_a_fifo_at_the_credentials_file_is_refused_at_once(tmp_path: Path, command: tuple[str, ...]) -> None:
    home = tmp_path / "home"
    os.mkfifo(creds_file(home))  # nobody ever writes to it: a blocking open would wait for ever
    started = time.monotonic()
    done = bm(*command, home=home)
    assert time.monotonic() - started < HANG_LIMIT_S
    assert done.returncode == 4, done
    [line] = done.stderr.strip().splitlines()
    assert "credentials file" in line and "FIFO" in line and "Traceback" not in done.stderr


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_credentials_linked_to_dev_zero_are_refused_without_reading_or_chmod(
    tmp_path: Path, dev_zero_mode: int
) -> None:
    home = tmp_path / "home"
    creds_file(home).symlink_to("/dev/zero")
    before = dev_zero_mode
    done = bm("auth", "status", home=home)
    assert done.returncode == 4, done
    assert "character device" in done.stderr and "MemoryError" not in done.stderr
    # The old code tightened the file it found, following the link: as root that was /dev/zero.
    assert stat.S_IMODE(os.stat("/dev/zero").st_mode) == before


@pytest.mark.parametrize(
    "value", ["NaN", "Infinity", "-Infinity", "1e30", "-1e30", '"1e30"', "true", '"soon"']
)
def test_an_expiry_that_is_no_time_is_a_damaged_file(cli, value: str) -> None:
    path = credentials.credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"access_token": "tok-secret-123", "expires_at": ' + value + "}")
    env = cli.json("auth", "status", code=4)
    [err] = env["errors"]
    assert err["code"] == "credentials_unreadable"
    assert "expires_at is not a time" in err["message"] and "tok-secret-123" not in json.dumps(env)


def test_an_expiry_in_range_still_reads(cli) -> None:
    path = credentials.credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    for value in (time.time() + 3600, "2999-01-01T00:00:00Z"):
        path.write_text(json.dumps({"access_token": "tok-abc", "expires_at": value}))
        data = cli.json("auth", "status")["data"]
        assert data["logged_in"] and data["expired"] is False and data["expires_at"].endswith("Z")


@pytest.mark.parametrize("expires_in", [float("nan"), float("inf"), 1e300, -5, "soon", True])
def test_a_token_answer_with_an_absurd_expires_in_is_stored_as_unknown(expires_in: object) -> None:
    """What the token endpoint says is data: a NaN or 1e300 lifetime must not make the freshly
    rotated pair impossible to save (the old refresh token is already spent by then)."""
    creds = oauth.credentials_from_response(
        {"access_token": "new-access", "refresh_token": "new-refresh", "expires_in": expires_in},
        client_id="cid",
        client_secret=None,
        token_url_="https://example.invalid/token",
        revoke_url_="https://example.invalid/revoke",
        scope=None,
    )
    assert creds.expires_at is None
    credentials.save_credentials(creds)
    assert credentials.status().logged_in


def test_auth_token_refuses_a_lifetime_it_cannot_store() -> None:
    from box_memory.errors import InvalidInput

    for bad in (float("nan"), float("inf"), 1e300):
        with pytest.raises(InvalidInput):
            oauth.store_token("tok-abc", expires_in=bad)
    assert not credentials.credentials_path().exists()


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf", "1e300"])
def test_mcp_check_timeout_must_be_a_duration(cli, value: str) -> None:
    path = credentials.credentials_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"access_token": "tok-abc"}))
    env = cli.json("mcp-check", "--url", "http://127.0.0.1:9/", "--timeout", value, code=2)
    [err] = env["errors"]
    assert err["code"] == "invalid_input"
    assert err["message"].startswith("--timeout must be a number of seconds")


@pytest.mark.parametrize("value", ["nan", "-1", "0"])
def test_auth_login_timeout_must_be_a_duration(cli, value: str) -> None:
    env = cli.json("auth", "login", "--client-id", "cid", "--no-browser", "--timeout", value, code=2)
    assert env["errors"][0]["message"].startswith("--timeout must be a number of seconds")


@pytest.mark.parametrize("folder", ["²", "١٢٣"])
def test_mcp_check_write_test_folder_must_be_ascii_digits(cli, folder: str) -> None:
    """'²'.isdigit() is True; Box folder ids are ASCII digits, so this is a usage error, not a
    request to Box."""
    env = cli.json("mcp-check", "--url", "http://127.0.0.1:9/", "--deep", "--write-test", folder, code=2)
    assert "--write-test needs a Box folder id" in env["errors"][0]["message"]
