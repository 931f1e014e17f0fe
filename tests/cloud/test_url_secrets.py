"""A password in the Box MCP URL (`http://user:password@host/mcp`) never reaches any output."""

from __future__ import annotations

import json

import pytest

from box_memory.emulator import Emulator
from box_memory.redaction import MARK
from tests.cloud.conftest import Backend
from tests.conftest import Cli

PASSWORD = "Pw-in-the-url-93kq"  # the point of the test


@pytest.mark.parametrize("running", [True, False], ids=["server-up", "server-down"])
def test_the_urls_password_is_never_printed(
    cloud: Backend, emu: Emulator, cli: Cli, monkeypatch: pytest.MonkeyPatch, running: bool
) -> None:
    with_password = emu.url.replace("http://", f"http://alice:{PASSWORD}@", 1)
    monkeypatch.setenv("BOX_MCP_URL", with_password)
    if not running:
        emu.stop()
    outputs = []
    for args in (
        ("mcp-check",),
        ("recall", "anything", "-w", cloud.spec),
        ("write", "text", "--title", "Secret URL", "-w", cloud.spec),
        ("brain-sync", "--folder-id", "0", "--no-content"),
        ("brain", "status"),  # lists the source brain-sync recorded, with its server
    ):
        for extra in ((), ("--json",)):
            res = cli(*args, *extra)
            outputs.append((args, extra, res))
    check = json.loads(next(r.stdout for a, e, r in outputs if a == ("mcp-check",) and e))
    assert check["data"]["url"] == emu.url.replace("http://", f"http://{MARK}@", 1)
    for args, extra, res in outputs:
        text = res.stdout + res.stderr
        assert PASSWORD not in text and "alice" not in text, (args, extra, text)
        if not running and args != ("brain", "status"):  # each error names the server, no password
            assert res.exit_code == 4, (args, res.output)
            assert f"http://{MARK}@127.0.0.1:" in text, (args, extra, text)
