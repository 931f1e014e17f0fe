"""`recall --ask`: Box AI over the top hits' files, against the emulator's deterministic Box AI.

The emulator's Q&A tools are extractive (the answer is the file's sentences sharing the most
words with the question), so the answer can be checked exactly.
"""

from __future__ import annotations

import json
from typing import Any

from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend


def _two_memories(cloud: Backend) -> None:
    cloud.data("write", "We chose JWT because sessions must survive restarts.", "--title", "Auth tokens")
    cloud.data(
        "write", "Redis caches JWT sessions for an hour.", "--title", "Session cache", "--kind", "fact"
    )


def test_ask_answers_over_the_hits_files_with_sources(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    emu.reset_calls()
    env = cloud.run("recall", "JWT", "--ask", "Why did we choose JWT?")
    ask = env["data"]["ask"]
    assert ask["ai_generated"] is True and "Box AI" in ask["label"]
    assert ask["tool"] == "ai_qa_multi_file"
    assert "We chose JWT because sessions must survive restarts." in ask["answer"]
    ids = {h["id"] for h in env["data"]["hits"]}
    assert {s["id"] for s in ask["sources"]} == ids
    assert all(s["url"] == f"https://app.box.com/file/{s['file_id']}" for s in ask["sources"])
    qa = [c for c in emu.calls if c.name.startswith("ai_")]
    assert len(qa) == 1 and qa[0].arguments["question"] == "Why did we choose JWT?"
    assert sorted(qa[0].arguments["file_ids"]) == sorted(s["file_id"] for s in ask["sources"])


def test_one_hit_uses_single_file_qa_and_the_older_catalogue_gets_prompt(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud-older")
    _two_memories(cloud)
    emu.reset_calls()
    ask = cloud.data("recall", "Redis", "--ask", "How long are sessions cached?")["ask"]
    assert ask["tool"] == "ai_qa_single_file" and len(ask["sources"]) == 1
    assert "Redis caches JWT sessions for an hour." in ask["answer"]
    qa = [c for c in emu.calls if c.name == "ai_qa_single_file"]
    assert qa and qa[0].arguments["prompt"] == "How long are sessions cached?"


def test_no_box_ai_explains_why_and_still_recalls(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    emu.configure(hidden_tools={"ai_qa_single_file", "ai_qa_multi_file"})
    env = cloud.run("recall", "JWT", "--ask", "Why JWT?", "--json")
    assert env["data"]["ask"] is None and len(env["data"]["hits"]) == 2
    assert any("Box AI is not available" in w for w in env["warnings"])
    assert not [c for c in emu.calls if c.name.startswith("ai_") and c.ok]


def test_plain_recall_never_calls_box_ai(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    emu.reset_calls()
    env = cloud.run("recall", "JWT")
    assert "ask" not in env["data"]
    assert not [c for c in emu.calls if c.name.startswith("ai_")]


def test_a_local_workspace_says_box_ai_needs_box(make: Any) -> None:
    local: Backend = make("local")
    _two_memories(local)
    env = local.run("recall", "JWT", "--ask", "Why JWT?")
    assert env["data"]["ask"] is None
    assert any("needs a Box workspace" in w for w in env["warnings"])


def _hub(cloud: Backend, emu: Emulator, *, indexing_s: float = 0.0) -> str:
    """A Box Hub over the workspace's memories folder (Box has no API to find a hub's id: the
    emulator makes one, as a user copies the id from the Box web app)."""
    folder = emu.fs.id_for_path(f"{cloud.name}/memories")
    return emu.fs.add_hub("Engineering decisions", [folder], indexing_s=indexing_s)


def test_a_configured_hub_answers_over_its_content(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    hub = _hub(cloud, emu)
    emu.reset_calls()
    env = cloud.run("recall", "Redis", "--ask", "Why did we choose JWT?", "--hub", hub)
    ask = env["data"]["ask"]
    assert ask["tool"] == "ai_qa_hub" and ask["hub"] == {"id": hub, "answered": True}
    # The hub holds both memories: the answer comes from the JWT one although recall's hit was Redis.
    assert "We chose JWT because sessions must survive restarts." in ask["answer"]
    assert ask["sources"] and all(s["url"].endswith(s["file_id"]) for s in ask["sources"])
    qa = [c for c in emu.calls if c.name.startswith("ai_")]
    assert [c.name for c in qa] == ["ai_qa_hub"] and qa[0].arguments == {
        "hub_id": hub,
        "question": "Why did we choose JWT?",
    }
    assert env["warnings"] == []


def test_the_hub_in_the_workspace_config_is_used_without_the_option(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    hub = _hub(cloud, emu)
    config = cloud.root / "_box-memory.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    config.write_text(json.dumps({**data, "box_hub_id": hub}), encoding="utf-8")
    ask = cloud.data("recall", "JWT", "--ask", "How long are sessions cached?")["ask"]
    assert ask["tool"] == "ai_qa_hub" and ask["hub"]["id"] == hub
    assert "Redis caches JWT sessions for an hour." in ask["answer"]


def test_a_hub_still_indexing_falls_back_to_the_recalled_files(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    hub = _hub(cloud, emu, indexing_s=3600)
    emu.reset_calls()
    env = cloud.run("recall", "JWT", "--ask", "Why did we choose JWT?", "--hub", hub)
    ask = env["data"]["ask"]
    assert ask["tool"] == "ai_qa_multi_file" and ask["hub"] == {"id": hub, "answered": False}
    assert "We chose JWT because sessions must survive restarts." in ask["answer"]
    assert {s["id"] for s in ask["sources"]} == {h["id"] for h in env["data"]["hits"]}
    assert [w for w in env["warnings"] if "still being indexed" in w and hub in w]
    assert [c.name for c in emu.calls if c.name.startswith("ai_")] == ["ai_qa_hub", "ai_qa_multi_file"]


def test_a_server_without_hub_qa_says_so_and_asks_the_files(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    hub = _hub(cloud, emu)
    emu.configure(hidden_tools={"ai_qa_hub"})
    env = cloud.run("recall", "JWT", "--ask", "Why did we choose JWT?", "--hub", hub)
    assert env["data"]["ask"]["tool"] == "ai_qa_multi_file"
    assert [w for w in env["warnings"] if "no Box Hub Q&A" in w]


def test_an_unknown_hub_is_reported_and_the_files_are_asked(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    _two_memories(cloud)
    env = cloud.run("recall", "JWT", "--ask", "Why did we choose JWT?", "--hub", "424242")
    assert env["data"]["ask"]["tool"] == "ai_qa_multi_file"
    assert [w for w in env["warnings"] if "Box Hub 424242 did not answer" in w]


def test_hub_without_a_question_is_a_usage_error(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    cloud.init()
    env = cloud.run("recall", "JWT", "--hub", "1", code=2)
    assert env["errors"][0]["code"] == "usage_error" and "--ask" in env["errors"][0]["message"]
