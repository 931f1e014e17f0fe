"""Over MCP, errors name the tool's own parameters, and every tool schema documents every
parameter (closed sets listed as enums)."""

from __future__ import annotations

from pathlib import Path

import pytest

from box_memory.format.model import KINDS, STATUSES, WRITABLE_STATUSES
from box_memory.serve.server import MemoryServer
from box_memory.serve.tools import TOOLS


def _enum(prop: dict) -> list[str] | None:
    if "enum" in prop:
        return list(prop["enum"])
    for alt in prop.get("anyOf", []):
        if "enum" in alt:
            return list(alt["enum"])
    return None


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_every_parameter_is_described_and_closed_sets_are_enums(tool) -> None:
    schema = tool.describe().input_schema
    props = schema["properties"]
    assert props, tool.name
    for name, prop in props.items():
        assert isinstance(prop.get("description"), str) and len(prop["description"]) > 8, (tool.name, name)
    if "kind" in props:
        assert _enum(props["kind"]) == list(KINDS)
    if "status" in props:
        assert _enum(props["status"]) in (list(STATUSES), list(WRITABLE_STATUSES))


def test_tool_errors_name_tool_parameters_not_cli_flags(cli, ws: Path) -> None:
    server = MemoryServer(workspace=str(ws))
    res, is_error = server.call("write", {"content": "no title here"})
    msg = res["errors"][0]["message"]
    assert is_error and msg == "title is required"

    server.call("write", {"content": "first", "title": "Auth strategy"})
    res, is_error = server.call("write", {"content": "second", "title": "Auth strategy"})
    msg = res["errors"][0]["message"]
    assert is_error and "--" not in msg
    assert "pass supersedes ID" in msg and "new_slug" in msg

    res, is_error = server.call("write", {"content": "x", "supersedes": "nope"})
    assert is_error and res["errors"][0]["message"].startswith("supersedes needs a memory id")
    # The CLI keeps speaking in flags.
    env = cli.json("write", "x", "-w", str(ws), code=2)
    assert env["errors"][0]["message"] == "--title is required"
