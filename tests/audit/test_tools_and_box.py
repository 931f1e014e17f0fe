"""`log` and `report` as MCP tools (the one envelope, like every tool), and what `log` costs on Box."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from box_memory.emulator import Emulator
from box_memory.serve.server import MemoryServer
from tests.conftest import Cli


def test_the_log_tool_returns_what_the_command_prints(cli: Cli, ws: Path) -> None:
    a = cli.json("write", "We decided JWT.", "--title", "Auth", "--agent", "x", "-w", str(ws))["data"]
    cli.json("write", "Sessions.", "--supersedes", a["id"], "--agent", "y", "-w", str(ws))
    server = MemoryServer(workspace=str(ws))
    got, is_error = server.call("log", {"kind": "decision", "limit": 5})
    assert not is_error and got["status"] == "ok" and "untrusted" in got["boundary"]
    printed = cli.json("log", "--kind", "decision", "--limit", "5", "-w", str(ws))
    assert got["data"] == printed["data"]
    assert [e["event"] for e in got["data"]["events"]] == ["supersede", "write"]
    bad, is_error = server.call("log", {"kind": "memo"})
    assert is_error and bad["errors"][0]["code"] == "invalid_input"
    bad, is_error = server.call("log", {"limt": 5})
    assert is_error and "unknown argument" in bad["errors"][0]["message"]


def test_the_report_tool_gives_an_agent_a_summary_and_the_page(cli: Cli, ws: Path) -> None:
    cli.json("write", "We decided JWT.", "--title", "Auth", "--agent", "x", "-w", str(ws))
    server = MemoryServer(workspace=str(ws))
    got, is_error = server.call("report", {})
    assert not is_error and "html" not in got["data"]
    assert got["data"]["summary"][0].startswith("1 memories and 0 companions")
    with_page, _ = server.call("report", {"html": True, "weeks": 4})
    assert with_page["data"]["html"].startswith("<!DOCTYPE html>")
    assert len(with_page["data"]["per_week"]["weeks"]) == 4
    before = sorted(p.name for p in ws.rglob("*"))
    assert sorted(p.name for p in ws.rglob("*")) == before  # the tool writes nothing


def _tool_calls(emu: Emulator) -> int:
    return int(emu.counters.get("tool_calls", 0))


def test_on_box_a_warm_log_costs_what_a_warm_recall_costs(make: Any, emu: Emulator) -> None:
    cloud = make("cloud")
    first = cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens", "--agent", "a")
    cloud.data("write", "Sessions.", "--supersedes", first["id"], "--agent", "b")
    cloud.data("write", "Redis is 7.2.", "--title", "Redis", "--kind", "fact", "--agent", "a")
    cloud.data("recall", "--kind", "decision")  # warm both: listings and the content cache
    cloud.data("log")
    emu.reset_calls()
    cloud.data("recall", "--kind", "decision")
    recall_calls = _tool_calls(emu)
    emu.reset_calls()
    events = cloud.data("log")["events"]
    log_calls = _tool_calls(emu)
    assert [e["event"] for e in events] == ["write", "supersede", "write"]
    assert all(e["url"] and e["url"].startswith("https://app.box.com/file/") for e in events)
    assert log_calls <= recall_calls, (log_calls, recall_calls, emu.counters)
