"""Re-importing a source after items changed in it: a changed item supersedes the memory it
imported before; unchanged items stay no-ops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from box_memory.format import frontmatter
from tests.conftest import snapshot
from tests.transfer.test_import import copy_source, do_import


def by_ref(ws: Path) -> dict[str, list[dict[str, Any]]]:
    """source ref -> every memory (any status) that carries it, oldest id first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(ws.rglob("*__*.md")):
        meta, body = frontmatter.parse(p.read_text(encoding="utf-8"), str(p))
        for s in meta.get("sources") or []:
            out.setdefault(str(s["ref"]), []).append({**meta, "body": body})
    return {k: sorted(v, key=lambda m: m["id"]) for k, v in out.items()}


def live(mems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in mems if m["status"] in ("active", "draft")]


def test_an_edited_basic_memory_note_supersedes_its_import(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "basic-memory/project")
    assert do_import(cli, ws, str(src))["data"]["imported"] == 4
    note = src / "search-design.md"
    # What basic-memory's edit_note (append) leaves on disk: the same file, one more observation.
    note.write_text(note.read_text() + "- [design] Ranking uses bm25 #search\n")
    again = do_import(cli, ws, str(src))["data"]
    assert again["imported"] == 1 and again["updated"] == 1 and again["already_imported"] == 3
    versions = by_ref(ws)[str(note)]
    assert len(versions) == 2 and len(live(versions)) == 1
    old, new = versions
    assert old["status"] == "superseded" and old["superseded_by"] == new["id"]
    assert new["supersedes"] == [old["id"]] and "Ranking uses bm25" in new["body"]
    assert again["memories"][0]["supersedes"] == old["id"]
    history = cli.json("get", old["id"], "--history", "-w", str(ws))["data"]
    assert history["current_id"] == new["id"]
    # Unchanged since: nothing at all is rewritten.
    before = snapshot(ws)
    third = do_import(cli, ws, str(src))["data"]
    assert third["imported"] == 0 and third["already_imported"] == 4
    assert snapshot(ws) == before
    assert cli.json("index-rebuild", "--check", "-w", str(ws))["exit_code"] == 0


def test_a_mem0_update_supersedes_its_import(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "mem0/get_all.json")
    assert do_import(cli, ws, str(src))["data"]["imported"] == 3
    data = json.loads(src.read_text())
    # mem0's Memory.update(memory_id, data) keeps the id and created_at, and sets a new text,
    # hash and updated_at (mem0/memory/main.py `_update_memory`); get_all returns that item.
    item = data["results"][0]
    item.update(
        memory="Prefers oat milk, no sugar",
        hash="0c2f7b0e4d1a9c3b5e6f708192a3b4c5",
        updated_at="2024-10-01T09:00:00.000000-07:00",
    )
    src.write_text(json.dumps(data, indent=2))
    preview = cli("import", str(src), "--dry-run", "-w", str(ws))
    assert "would import 1 of 4 items (1 updates, 2 already imported" in preview.stdout
    env = do_import(cli, ws, str(src))
    again = env["data"]
    assert again["imported"] == 1 and again["updated"] == 1 and again["already_imported"] == 2
    versions = by_ref(ws)["mem0:0b9d4a2e-6c1f-4f7e-9a51-3f2d8c7e1a01"]
    assert [m["status"] for m in versions] == ["superseded", "active"]
    new = versions[1]
    assert new["title"] == "Prefers oat milk, no sugar" and new["supersedes"] == [versions[0]["id"]]
    assert new["created_at"] == "2024-07-20T17:15:30.123Z" and new["updated_at"] == "2024-10-01T16:00:00.000Z"
    recall = cli.json("recall", "oat milk", "-w", str(ws))["data"]["hits"]
    assert [h["title"] for h in recall] == ["Prefers oat milk, no sugar"]  # one live memory


def test_a_changed_item_whose_memory_was_edited_supersedes_the_current_version(
    cli, ws: Path, tmp_path: Path
) -> None:
    """The imported memory was since superseded in the workspace: the changed source item
    supersedes the chain's current memory (history keeps every version), never forks it."""
    src = copy_source(tmp_path, "markdown/notes")
    do_import(cli, ws, str(src))
    first = by_ref(ws)[str(src / "deploy-window.md")][0]
    edited = cli.json("write", "Deploys on Wednesdays now.", "--supersedes", first["id"], "-w", str(ws))
    (src / "deploy-window.md").write_text("# Deploy window\n\nDeploys on Thursdays.\n")
    again = do_import(cli, ws, str(src))["data"]
    assert again["updated"] == 1 and again["memories"][0]["supersedes"] == edited["data"]["id"]
    history = cli.json("get", first["id"], "--history", "-w", str(ws))["data"]["history"]
    assert len(history) == 3 and history[-1]["status"] == "active"


def test_a_changed_item_whose_memory_was_archived_is_not_brought_back(
    cli, ws: Path, tmp_path: Path, snap
) -> None:
    src = copy_source(tmp_path, "markdown/notes")
    do_import(cli, ws, str(src))
    first = by_ref(ws)[str(src / "deploy-window.md")][0]
    # Retired in the workspace: an archived last version supersedes it (as `BoxMemoryTool.delete`).
    cli.json("write", "retired", "--supersedes", first["id"], "--status", "archived", "-w", str(ws))
    before = snap(ws)
    (src / "deploy-window.md").write_text("# Deploy window\n\nDeploys on Thursdays.\n")
    again = do_import(cli, ws, str(src))["data"]
    assert again["imported"] == 0
    reasons = {s["ref"]: s["reason"] for s in again["skipped"]}
    assert "archived" in reasons[str(src / "deploy-window.md")]
    assert snap(ws) == before
