"""The integrity commands on both backends: a local folder and Box behind the MCP emulator."""

from __future__ import annotations

import json
from typing import Any

from tests.cloud.conftest import Backend


def _md(mem_id: str, title: str, slug: str) -> bytes:
    return (
        f"---\nid: {mem_id}\nslug: {slug}\ntitle: {title}\nkind: note\nstatus: active\nteam: default\n"
        "created_at: 2026-05-22T18:32:00Z\nupdated_at: 2026-05-22T18:32:00Z\n---\n\n# x\n"
    ).encode()


def test_rebuild_repairs_files_added_behind_the_tools_back(bk: Backend) -> None:
    ids = [bk.data("write", f"Text {i}.", "--title", f"Note {i}")["id"] for i in range(3)]
    assert bk.data("index-rebuild", "--check")["drift"] is False
    hand = "mem_01JHAND0000000000000000001"
    bk.put("memories/note__by-hand.md", _md(hand, "By hand", "by-hand"))
    bk.put("memories/note__broken.md", b"---\nid: [oops\n---\n")
    check = bk.run("index-rebuild", "--check", code=6)["data"]
    assert [d["id"] for d in check["diff"]["added"]] == [hand]
    env = bk.run("index-rebuild")
    assert env["exit_code"] == 0
    assert [o["path"] for o in env["data"]["orphans"]] == ["memories/note__broken.md"]
    idx = json.loads(bk.path("memories/_index.json").read_bytes())
    assert {e["id"] for e in idx["entries"]} == {*ids, hand}
    assert bk.data("index-rebuild", "--check")["drift"] is False
    assert bk.data("status")["index_health"]["ok"] is True


def test_conflict_copy_is_merged_and_archived(bk: Backend) -> None:
    mid = bk.data("write", "Text.", "--title", "Kept")["id"]
    idx: dict[str, Any] = json.loads(bk.path("memories/_index.json").read_bytes())
    entry = {**idx["entries"][0], "file_id": "987654321012"}
    bk.put("memories/_index (1).json", json.dumps({**idx, "entries": [entry]}).encode())
    env = bk.run("index-rebuild")["data"]
    copy = env["conflict_copies"][0]
    assert copy["path"] == "memories/_index (1).json" and copy["archived_to"].startswith("_archive/")
    assert bk.path(copy["archived_to"]).is_file() and not bk.path("memories/_index (1).json").exists()
    entries = json.loads(bk.path("memories/_index.json").read_bytes())["entries"]
    assert [e["id"] for e in entries] == [mid]


def test_team_lifecycle_keeps_every_file(bk: Backend) -> None:
    bk.data("team", "create", "legal")
    mid = bk.data("write", "Contract terms.", "--title", "Terms", "--team", "legal")["id"]
    memory = bk.path("teams/legal/memories/note__terms.md").read_bytes()
    assert [r["team"] for r in bk.data("team", "ls")["teams"]] == ["default", "legal"]
    out = bk.data("team", "remove", "legal", "--yes")
    assert out["archived_to"] == "_archive/teams/legal/"
    assert bk.path("_archive/teams/legal/memories/note__terms.md").read_bytes() == memory
    assert "legal" not in json.loads(bk.path("_box-memory.json").read_bytes())["teams"]
    assert bk.data("team", "ls")["untracked_folders"] == []
    assert bk.data("index-rebuild", "--check")["drift"] is False
    assert mid not in {e["id"] for e in json.loads(bk.path("_index.json").read_bytes())["entries"]}
