"""companion_check (our MCP server's tool) and `companion --check` with names no file system
holds (issue #25): a clear invalid_input naming the limit, not internal_error with raw OSError
text. And an OSError from any tool is reported as the CLI reports it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from box_memory.serve.server import MemoryServer
from tests.conftest import snapshot


def tool(ws: Path, args: dict[str, Any]) -> dict[str, Any]:
    res, is_error = MemoryServer(str(ws)).call("companion_check", args)
    assert is_error, res
    [err] = res["errors"]
    return err


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("a" * 5000, "is 5000 characters long; workspace paths stay within 260"),
        ("files/" + "a" * 5000, "is 5006 characters long"),
        ("x/" * 3000, "characters long"),
        ("files/" + "é" * 200, "has a name longer than 255 bytes"),
        ("/" + "a" * 5000, "(5001 characters) is outside the workspace"),
    ],
)
def test_companion_check_with_a_name_too_long_is_invalid_input(ws: Path, file: str, expected: str) -> None:
    before = snapshot(ws)
    err = tool(ws, {"file": file})
    assert err["code"] == "invalid_input", err
    assert expected in err["message"] and "Errno" not in err["message"]
    assert len(err["message"]) < 400  # the 5,000 characters are not echoed back
    assert snapshot(ws) == before


def test_the_cli_check_says_the_same(cli, ws: Path) -> None:
    env = cli.json("companion", "a" * 5000, "--check", "-w", str(ws), code=2)
    [err] = env["errors"]
    assert err["code"] == "invalid_input" and "workspace paths stay within 260" in err["message"]


def test_a_long_name_within_the_limits_is_still_checked(ws: Path) -> None:
    name = "files/" + "é" * 100  # 200 bytes: a legal name that does not exist
    err = tool(ws, {"file": name})
    assert err["code"] == "not_found"


def test_an_os_error_in_a_tool_is_os_error_not_internal_error(ws: Path) -> None:
    """Whatever the system refuses in a tool call reads as the CLI's `cannot use PATH: reason`,
    not `internal_error` with the exception's class and errno."""
    (ws / "files").mkdir(exist_ok=True)
    (ws / "files" / "a.pdf").write_bytes(b"%PDF-1.4")
    err = tool(ws, {"file": "files/a.pdf/x.pdf"})  # a file where a folder should be: ENOTDIR
    assert err["code"] == "os_error", err
    assert err["message"].startswith("cannot use ") and "not a directory" in err["message"]
    assert "Errno" not in err["message"] and "OSError" not in err["message"]
