"""`auth` and `mcp-check` through the real CLI: tokens are stored, used and never printed."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from box_memory.box import credentials
from box_memory.emulator import Emulator
from tests.auth.fakeoauth import FakeBoxOAuth
from tests.cloud.conftest import TOKEN, Backend
from tests.conftest import Cli


def test_mcp_check_pass_degraded_incompatible(emu: Emulator, cli: Cli) -> None:
    ok = cli.json("mcp-check")["data"]
    assert (ok["verdict"], ok["reachable"], ok["auth_ok"]) == ("PASS", True, True)
    assert ok["required_missing"] == [] and ok["user"]["login"] == "emulator.user@example.com"
    emu.configure(hidden_tools=("ai_qa_single_file", "get_download_url"))
    degraded = cli.json("mcp-check")["data"]
    assert degraded["verdict"] == "DEGRADED"
    assert sorted(degraded["optional_missing"]) == ["ai_qa_single_file", "get_download_url"]
    emu.configure(hidden_tools=("upload_file_version",))
    bad = cli.json("mcp-check", code=4)
    assert bad["data"]["verdict"] == "INCOMPATIBLE" and bad["data"]["required_missing"] == [
        "upload_file_version"
    ]
    assert "upload_file_version" in bad["errors"][0]["message"]


def test_missing_tool_is_a_clear_exit_4(make: Any, emu: Emulator) -> None:
    b: Backend = make("cloud")
    emu.configure(hidden_tools=("upload_file",))
    env = b.run("write", "x", "--title", "No upload tool", code=4)
    assert env["errors"][0]["code"] == "tool_missing" and "upload_file" in env["errors"][0]["message"]


def test_stored_token_is_used_and_never_shown(make: Any, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    b: Backend = make("cloud")
    monkeypatch.delenv("BOX_ACCESS_TOKEN")
    out = cli("auth", "token", "--token-stdin", "--json", input=TOKEN + "\n")
    assert out.exit_code == 0, out.output
    status = cli("auth", "status", "--json")
    data = json.loads(status.stdout)["data"]
    assert (data["logged_in"], data["source"], data["has_refresh"]) == (True, "store", False)
    human = cli("auth", "status")
    for res in (out, status, human):
        assert TOKEN not in res.stdout + res.stderr
    assert oct(credentials.credentials_path().stat().st_mode & 0o777) == "0o600"
    assert b.data("write", "with a stored token", "--title", "Stored")["slug"] == "stored"
    stray = cli("auth", "token", TOKEN)  # a token as an argument is refused without echoing it
    assert stray.exit_code == 2 and TOKEN not in stray.stdout + stray.stderr
    assert cli("auth", "token", "--token-stdin", input="\n").exit_code == 2
    gone = cli.json("auth", "logout", "--no-revoke")["data"]
    assert gone["removed"] is True
    after = b.run("recall", "x", code=4)
    assert "Not logged in" in after["errors"][0]["message"]


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBoxOAuth]:
    server = FakeBoxOAuth().start()
    for name, path in (("AUTHORIZE", "/authorize"), ("TOKEN", "/token"), ("REVOKE", "/revoke")):
        monkeypatch.setenv(f"BOX_OAUTH_{name}_URL", server.base_url + path)
    monkeypatch.delenv("BOX_ACCESS_TOKEN", raising=False)
    try:
        yield server
    finally:
        server.stop()


def _login_in_browser(oauth: FakeBoxOAuth, env: dict[str, str], *args: str) -> tuple[str, str]:
    """Run `auth login --no-browser` in a child, read the authorize URL it prints on stderr, play
    the browser (the fake server redirects to the CLI's loopback callback); (stdout, stderr)."""
    argv = [sys.executable, "-m", "box_memory", "auth", "login", "--no-browser", "--port", "0"]
    proc = subprocess.Popen(
        [*argv, "--timeout", "30", *args, "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    url = ""
    for _ in range(5):
        line = proc.stderr.readline()
        if line.startswith("http"):
            url = line.strip()
            break
    assert url.startswith(oauth.base_url + "/authorize?"), url
    httpx2.get(url, follow_redirects=True, timeout=10)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return out, err


def test_login_in_the_browser_then_logout(oauth: FakeBoxOAuth, cli: Cli) -> None:
    env = {**os.environ, "BOX_CLIENT_ID": oauth.client_id, "BOX_CLIENT_SECRET": oauth.client_secret}
    out, err = _login_in_browser(oauth, env)
    data = json.loads(out)["data"]
    assert (data["logged_in"], data["has_refresh"], data["source"]) == (True, True, "store")
    saved = credentials.load_credentials()
    assert saved is not None and saved.access_token in oauth.access_tokens
    for secret in saved.secrets():
        assert secret and secret not in out + err
    logout = cli.json("auth", "logout")["data"]
    assert logout["removed"] is True and set(logout["revoked"]) == {"access_token", "refresh_token"}
    assert credentials.load_credentials() is None


def test_login_scope_is_asked_for_stored_and_shown(oauth: FakeBoxOAuth, cli: Cli) -> None:
    env = {**os.environ, "BOX_CLIENT_ID": oauth.client_id, "BOX_CLIENT_SECRET": oauth.client_secret}
    out, _err = _login_in_browser(oauth, env, "--scope", "docgen.readwrite")
    assert oauth.authorize_requests[-1]["scope"] == "root_readwrite ai.readwrite docgen.readwrite"
    assert json.loads(out)["data"]["scopes"] == ["root_readwrite", "ai.readwrite", "docgen.readwrite"]
    status = cli.json("auth", "status")["data"]
    assert status["scopes"] == ["root_readwrite", "ai.readwrite", "docgen.readwrite"]
    assert "scopes: root_readwrite ai.readwrite docgen.readwrite" in cli("auth", "status").stdout
    bad = cli.json("auth", "login", "--scope", "Bad Scope!", code=2)
    assert "--scope" in bad["errors"][0]["message"]


def test_client_secret_as_an_argument_works_with_a_warning(oauth: FakeBoxOAuth) -> None:
    env = {**os.environ, "BOX_CLIENT_ID": oauth.client_id}
    env.pop("BOX_CLIENT_SECRET", None)
    out, err = _login_in_browser(oauth, env, "--client-secret", oauth.client_secret)
    warnings = json.loads(out)["warnings"]
    assert any("--client-secret on the command line is visible to other processes" in w for w in warnings)
    assert oauth.client_secret not in out + err


def test_client_secret_prompt_on_a_terminal_is_hidden(oauth: FakeBoxOAuth, tmp_path: Path) -> None:
    """Without --client-secret or BOX_CLIENT_SECRET, `auth login` on a terminal asks for the secret
    with echo off. The CLI runs in a child whose controlling terminal is a pseudo-terminal (stdin
    and stderr on it, stdout to a file); the fake OAuth server accepts the login only with the
    right secret, and the secret is never echoed or printed."""
    env = {**os.environ, "BOX_CLIENT_ID": oauth.client_id}
    env.pop("BOX_CLIENT_SECRET", None)
    out_file = tmp_path / "stdout.json"
    argv = [sys.executable, "-m", "box_memory", "auth", "login", "--no-browser", "--port", "0"]
    argv += ["--timeout", "30", "--json"]
    pid, leader = pty.fork()  # the child gets a new session with the pty as controlling terminal
    if pid == 0:  # pragma: no cover - the child process
        try:
            fd = os.open(out_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 1)
            os.execve(sys.executable, argv, env)
        finally:
            os._exit(127)
    seen = b""

    def read_until(marker: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 60
        while marker not in seen:
            assert time.monotonic() < deadline, seen
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                assert chunk, seen
                seen += chunk

    try:
        # click writes the prompt text, then getpass turns echo off and writes the final " ".
        read_until(b"Box app client secret: ")
        os.write(leader, oauth.client_secret.encode() + b"\n")
        read_until(b"/authorize?")
        read_until(b"\n")
        url = next(line for line in seen.decode().splitlines() if line.startswith("http"))
        httpx2.get(url.strip(), follow_redirects=True, timeout=10)
        deadline = time.monotonic() + 60
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            assert time.monotonic() < deadline
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                with contextlib.suppress(OSError):
                    seen += os.read(leader, 4096)
    finally:
        os.close(leader)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    result = json.loads(out_file.read_text())
    assert result["status"] == "ok" and result["warnings"] == [], result
    assert result["data"]["logged_in"] is True
    secret = oauth.client_secret.encode()
    assert secret not in seen and secret not in out_file.read_bytes()
    # The one place it is kept (cli.md: secrets live in a separate 0600 file): token refresh
    # sends it to Box.
    stored = json.loads(credentials.credentials_path().read_bytes())
    assert oct(credentials.credentials_path().stat().st_mode & 0o777) == "0o600"
    assert [k for k, v in stored.items() if oauth.client_secret in str(v)] == ["client_secret"]
