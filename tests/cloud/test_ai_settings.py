"""`ai_extract_enabled` and `ai_recall_enabled` in `_box-memory.json`: Box AI without being asked,
where the tier has it (the emulator's Box AI is deterministic: extraction reads `key: value`
lines, Q&A answers with the file's sentences sharing the most words with the question)."""

from __future__ import annotations

import json
from typing import Any

from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend
from tests.cloud.test_companion_extract import PDF, WANT


def _turn_on(b: Backend, name: str) -> None:
    """The user edits the workspace's settings (in Box, or `_box-memory.json` by hand)."""
    path = b.path("_box-memory.json")
    cfg = json.loads(path.read_bytes())
    assert cfg["settings"][name] is False  # init writes it, off
    cfg["settings"][name] = True
    path.write_text(json.dumps(cfg, indent=2), encoding="utf-8")


def _ai_calls(emu: Emulator) -> list[Any]:
    return [c for c in emu.calls if c.name.startswith("ai_")]


def test_ai_extract_enabled_fills_a_companion_without_extract_and_says_so(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _turn_on(cloud, "ai_extract_enabled")
    cloud.put("files/contract.pdf", PDF)
    emu.reset_calls()
    data = cloud.data("companion", "files/contract.pdf")
    assert data["ai_extracted"] is True and data["extracted"] == WANT
    assert data["extracted_by"] == "setting"
    assert [c.name for c in _ai_calls(emu)] == ["ai_extract_structured_from_fields"]
    text = cloud.path(data["path"]).read_text()
    assert "ai_extracted: true" in text and "## Box AI extraction" in text

    # An unchanged binary is not rewritten, and Box AI is not asked again.
    emu.reset_calls()
    assert cloud.data("companion", "files/contract.pdf")["action"] == "unchanged"
    assert _ai_calls(emu) == []

    # The human output says where the fields came from.
    cloud.put("files/other.pdf", PDF.replace(b"Acme", b"Gamma"))
    res = cloud.cli("companion", "files/other.pdf", "-w", cloud.spec)
    assert res.exit_code == 0, res.output
    assert "filled by Box AI Extract (ai_extract_enabled is on in _box-memory.json)" in res.stdout


def test_ai_extract_enabled_leaves_a_given_description_alone(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _turn_on(cloud, "ai_extract_enabled")
    cloud.put("files/contract.pdf", PDF)
    emu.reset_calls()
    data = cloud.data("companion", "files/contract.pdf", "--body", "A services agreement, read by hand.")
    assert data["ai_extracted"] is False and data["extracted_by"] is None
    assert _ai_calls(emu) == []


def test_ai_extract_enabled_on_a_tier_without_box_ai_writes_the_skeleton_quietly(
    make: Any, emu: Emulator
) -> None:
    emu.configure(hidden_tools={"ai_qa_single_file", "ai_qa_multi_file", "ai_extract_structured_from_fields"})
    cloud: Backend = make("cloud")
    assert (
        json.loads(cloud.path("_box-memory.json").read_bytes())["capabilities"]["box_ai_tools_available"]
        is False
    )
    _turn_on(cloud, "ai_extract_enabled")
    cloud.put("files/contract.pdf", PDF)
    emu.reset_calls()
    env = cloud.run("companion", "files/contract.pdf")
    assert env["data"]["ai_extracted"] is False and env["warnings"] == []
    assert _ai_calls(emu) == []


def test_ai_recall_enabled_adds_box_ais_answer_over_the_top_hits(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    cloud.data("write", "We chose JWT because sessions must survive restarts.", "--title", "Auth tokens")
    cloud.data(
        "write", "Redis caches JWT sessions for an hour.", "--title", "Session cache", "--kind", "fact"
    )
    emu.reset_calls()
    plain = cloud.data("recall", "why JWT sessions")
    assert "ask" not in plain and _ai_calls(emu) == []  # off by default

    _turn_on(cloud, "ai_recall_enabled")
    emu.reset_calls()
    data = cloud.data("recall", "why JWT sessions")
    ask = data["ask"]
    assert ask["ai_generated"] is True and ask["asked_by"] == "ai_recall_enabled"
    assert ask["question"] == "why JWT sessions" and ask["tool"] == "ai_qa_multi_file"
    assert {s["id"] for s in ask["sources"]} == {h["id"] for h in data["hits"]}
    assert "sessions" in ask["answer"]
    [qa] = _ai_calls(emu)
    assert qa.arguments["question"] == "why JWT sessions"

    res = cloud.cli("recall", "why JWT sessions", "-w", cloud.spec)
    assert "Box AI answer" in res.stdout and "asked because ai_recall_enabled is on" in res.stdout

    # A listing by filters asks nothing; --ask still asks its own question.
    emu.reset_calls()
    assert "ask" not in cloud.data("recall", "--kind", "fact")
    assert _ai_calls(emu) == []
    own = cloud.data("recall", "JWT", "--ask", "How long are sessions cached?")["ask"]
    assert own["question"] == "How long are sessions cached?" and "asked_by" not in own


def test_the_settings_change_nothing_on_a_local_workspace(make: Any) -> None:
    local: Backend = make("local")
    _turn_on(local, "ai_extract_enabled")
    _turn_on(local, "ai_recall_enabled")
    local.put("files/contract.pdf", PDF)
    env = local.run("companion", "files/contract.pdf")
    assert env["data"]["ai_extracted"] is False and env["warnings"] == []
    local.data("write", "We chose JWT.", "--title", "Auth tokens")
    assert "ask" not in local.data("recall", "JWT")


def test_the_mcp_recall_tool_follows_ai_recall_enabled(make: Any, emu: Emulator, tmp_path: Any) -> None:
    import os

    import anyio
    from mcp import Client, StdioServerParameters

    from tests.server.helpers import call, serve_argv, server_env

    cloud: Backend = make("cloud")
    cloud.data("write", "We chose JWT because sessions must survive restarts.", "--title", "Auth tokens")
    _turn_on(cloud, "ai_recall_enabled")
    argv = serve_argv("--transport", "stdio", "-w", cloud.spec)
    env = {**server_env(), **{k: os.environ[k] for k in ("BOX_MCP_URL", "BOX_ACCESS_TOKEN")}}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=tmp_path)

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return (await call(client, "recall", {"query": "why JWT"}))["data"]

    served = anyio.run(main)
    assert served["ask"]["asked_by"] == "ai_recall_enabled"
    assert "We chose JWT" in served["ask"]["answer"]
