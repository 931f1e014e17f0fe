"""The opt-in monthly memory layout, on a local folder and on Box (the emulator): new memories go
to `memories/YYYY-MM/` with their own index, nothing moves when a workspace switches, and every
command that reads memories reads the month folders too."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from tests.cloud.conftest import Backend

MONTH = datetime.now(UTC).strftime("%Y-%m")


def _index(bk: Backend, folder: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(bk.path(f"{folder}/_index.json").read_bytes())
    return data


def _switch(bk: Backend, layout: str = "monthly") -> dict[str, Any]:
    """`init` again on the existing workspace, with --memory-layout (how a workspace switches)."""
    where = ["--parent", "0"] if bk.cloud else ["--path", str(bk.root)]
    data: dict[str, Any] = bk.cli.json("init", bk.name, *where, "--memory-layout", layout)["data"]
    assert data["existed"] and data["memory_layout"] == layout
    return data


def _write(bk: Backend, title: str, *extra: str) -> dict[str, Any]:
    return bk.data("write", f"{title}: the zanzibar queue body.", "--title", title, *extra)


def test_a_switched_workspace_writes_new_memories_to_the_month_folder(bk: Backend) -> None:
    old = _write(bk, "Flat before the switch")
    assert old["folder"] == "memories/"
    _switch(bk)
    cfg = json.loads(bk.path("_box-memory.json").read_bytes())
    assert cfg["settings"]["memory_layout"] == "monthly"
    assert cfg["settings"]["companion_layout"] == "sibling"  # every other key kept

    new = _write(bk, "Monthly after the switch", "--tag", "shard")
    assert new["folder"] == f"memories/{MONTH}/"
    assert new["file"] == f"memories/{MONTH}/note__monthly-after-the-switch.md"
    shard = _index(bk, f"memories/{MONTH}")
    assert [e["id"] for e in shard["entries"]] == [new["id"]]
    assert shard["folder_path"] == f"memories/{MONTH}/"
    flat = _index(bk, "memories")
    assert [e["id"] for e in flat["entries"]] == [old["id"]]  # nothing moved, nothing added

    hits = {h["id"] for h in bk.data("recall", "zanzibar")["hits"]}
    assert {old["id"], new["id"]} <= hits
    assert bk.data("get", new["id"])["id"] == new["id"]
    assert bk.data("get", "monthly-after-the-switch")["id"] == new["id"]


def test_a_supersede_across_folders_updates_both_indexes(bk: Backend) -> None:
    old = _write(bk, "Queue retry policy")
    _switch(bk)
    new = bk.data("write", "Retry three times, then park.", "--supersedes", old["id"])
    assert new["folder"] == f"memories/{MONTH}/"
    assert new["inherited"] == ["title", "kind"]
    flat = {e["id"]: e for e in _index(bk, "memories")["entries"]}
    assert flat[old["id"]]["status"] == "superseded"
    assert flat[old["id"]]["superseded_by"] == new["id"]
    shard = {e["id"]: e for e in _index(bk, f"memories/{MONTH}")["entries"]}
    assert shard[new["id"]]["status"] == "active"
    got = bk.run("get", old["id"])
    assert got["data"]["id"] == old["id"]
    assert any(new["id"] in w for w in got["warnings"]), got["warnings"]  # the chain, across folders
    check = bk.data("index-rebuild", "--check")
    assert not check["drift"], check


def test_init_with_the_monthly_layout_and_a_team(bk: Backend, tmp_path: Any) -> None:
    # `bk` is initialised flat; a team created now gets month folders as well.
    _switch(bk)
    bk.run("team", "create", "eng")
    mem = _write(bk, "Team decision on queues", "--team", "eng")
    assert mem["folder"] == f"teams/eng/memories/{MONTH}/"
    status = bk.data("status")
    assert status["workspace"]["memory_layout"] == "monthly"
    folders = {f["folder"] for f in status["index_health"]["folders"]}
    assert f"teams/eng/memories/{MONTH}/" in folders
    assert status["teams"]["eng"]["memories"] == 1
    assert status["index_health"]["ok"], status["index_health"]
    hits = bk.data("recall", "queues", "--team", "eng")["hits"]
    assert [h["id"] for h in hits] == [mem["id"]]


def test_index_rebuild_and_export_cover_month_folders(bk: Backend, tmp_path: Any) -> None:
    _switch(bk)
    a = _write(bk, "Alpha in a month folder")
    b = _write(bk, "Beta in a month folder")
    rebuilt = bk.data("index-rebuild")
    assert rebuilt["memories"] >= 2
    roll = json.loads(bk.path("_index.json").read_bytes())
    by_id = {e["id"]: e for e in roll["entries"]}
    assert by_id[a["id"]]["folder_path"] == f"memories/{MONTH}/"
    assert f"memories/{MONTH}/" in {c["folder_path"] for c in roll["child_indexes"]}
    assert roll["by_slug"]["beta-in-a-month-folder"] == b["id"]
    out = tmp_path / "export.jsonl"
    bk.run("export", "--format", "jsonl", "--output", str(out))
    ids = {json.loads(line)["id"] for line in out.read_text().splitlines() if line.strip()}
    assert {a["id"], b["id"]} <= ids
