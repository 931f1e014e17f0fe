"""Every command's `--json` envelope and every MCP tool's structured result come from one renderer,
`box_memory.result.envelope`: a spy on it sees exactly one call per command or tool call, and what
was printed (or returned over MCP) is what it rendered. A command that built its own envelope would
print JSON the spy never saw."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import click
import orjson
import pytest
import typer

from box_memory import result
from box_memory.cli.app import app
from tests.conftest import Cli

# Arguments that take each command to its library call (success or a handled error). A new
# command must be added here: the walk below fails on any command it has no arguments for.
ARGS: dict[str, list[str]] = {
    "init": ["walk", "--path", "{tmp}/second"],
    "write": ["We decided to walk every command.", "--title", "Second walk"],
    "get": ["[[Walk]]"],
    "recall": ["walk"],
    "fetch": [],
    "companion": ["--stale"],
    "index-rebuild": ["--check"],
    "status": [],
    "log": ["--kind", "decision"],
    "report": ["-o", "{tmp}/report.html"],
    "team create": ["eng"],
    "team ls": [],
    "team inspect": ["default"],
    "team conflicts": [],
    "team remove": ["eng"],  # without --yes: a usage problem, rendered like any error
    "auth login": ["--scope", "NOT A SCOPE"],
    "auth token": ["stray-argument"],
    "auth status": [],
    "auth logout": ["--no-revoke"],
    "mcp-check": ["--write-test", "not-a-folder-id"],
    "brain-sync": ["--print-cron", "--path", "{tmp}/docs"],
    "brain status": [],
    "brain runs": [],
    "brain items": [],
    "brain review": [],
    "brain review edit": ["1", "--title", "x"],
    "brain accept": ["1"],
    "brain reject": ["1"],
    "brain purge": ["1"],
    "brain source enable": ["1"],
    "brain source disable": ["1"],
    "serve": ["--transport", "carrier-pigeon"],
    "import": ["{tmp}/docs"],
    "export": ["--output", "{tmp}/out.jsonl"],
}

TOOL_ARGS: dict[str, dict[str, Any]] = {
    "recall": {"query": "walk"},
    "get": {"ref": "[[Walk]]", "history": True},
    "write": {"content": "A memory written over MCP.", "title": "Third walk"},
    "companion_check": {"file": "files/none.bin"},  # not found: an error result
    "index_rebuild": {"check": True},
    "status": {},
    "brain_search": {"query": "walk"},
    "log": {"limit": 5},
    "report": {"html": True},
}


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every runnable command under `group` (a group with its own callback counts too)."""
    ctx = click.Context(group)
    out = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        path = (*prefix, name)
        if isinstance(cmd, click.Group):
            if cmd.invoke_without_command:
                out.append((path, cmd))
            out += commands(cmd, path)
        else:
            out.append((path, cmd))
    return out


class Spy:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[dict[str, Any]] = []
        real = result.envelope

        def envelope(command: str, res: result.Result, duration_ms: int) -> dict[str, Any]:
            env = real(command, res, duration_ms)
            self.calls.append(env)
            return env

        monkeypatch.setattr(result, "envelope", envelope)


def _plain(value: Any) -> Any:
    return json.loads(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str))


@pytest.fixture
def walk_ws(tmp_path: Path, cli: Cli) -> Path:
    ws = tmp_path / "ws"
    cli.json("init", "--path", str(ws))
    cli.json("write", "We walk every command once.", "--title", "Walk", "-w", str(ws))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "walk.md").write_text("# Walking\n\nA note to import.\n", encoding="utf-8")
    return ws


def test_every_command_renders_through_the_one_envelope(
    cli: Cli, walk_ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = commands(typer.main.get_command(app))  # type: ignore[arg-type]
    names = {" ".join(path) for path, _ in found}
    assert names == set(ARGS), f"commands without walk arguments: {names ^ set(ARGS)}"
    spy = Spy(monkeypatch)
    for path, cmd in found:
        name = " ".join(path)
        argv = [*path, *(a.replace("{tmp}", str(tmp_path)) for a in ARGS[name])]
        if any("--workspace" in p.opts for p in cmd.params):
            argv += ["-w", str(walk_ws)]
        before = len(spy.calls)
        res = cli(*argv, "--json")
        assert len(spy.calls) == before + 1, (name, res.stdout, res.stderr)
        printed = json.loads(res.stdout)
        assert printed == _plain(spy.calls[-1]), name
        assert printed["command"] == name and res.exit_code == printed["exit_code"], (name, printed)
        # Warnings travel in the envelope, never tucked inside the data.
        assert "warnings" not in printed["data"], name
        # Each reached its own code: a usage error (exit 2 before the command ran) would not.
        assert not any(e["code"] == "usage_error" for e in printed["errors"]), (name, printed)


def test_every_tool_renders_through_the_one_envelope(walk_ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp import Client

    from box_memory.serve.server import MemoryServer
    from box_memory.serve.tools import TOOL_RESULT_KEYS, TOOLS

    assert {t.name for t in TOOLS} == set(TOOL_ARGS)
    spy = Spy(monkeypatch)
    seen: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}

    async def main() -> None:
        async with Client(MemoryServer(str(walk_ws)).build()) as client:
            for tool in TOOLS:
                before = len(spy.calls)
                res = await client.call_tool(tool.name, TOOL_ARGS[tool.name])
                assert len(spy.calls) == before + 1, tool.name
                assert isinstance(res.structured_content, dict)
                seen[tool.name] = (res.structured_content, spy.calls[-1])

    anyio.run(main)
    for name, (structured, env) in seen.items():
        rendered = {k: v for k, v in _plain(env).items() if k in TOOL_RESULT_KEYS}
        assert {k: v for k, v in structured.items() if k != "boundary"} == rendered, name
        assert env["command"] == name and "warnings" not in structured["data"]
    assert seen["companion_check"][0]["errors"][0]["code"] == "not_found"
    assert seen["index_rebuild"][0]["status"] in ("ok", "error")
