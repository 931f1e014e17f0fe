"""index-rebuild: regenerate from files; orphans, duplicate ids, slug conflicts, conflict copies, --check."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integrity.util import entry_ids, index, write_md

FIXTURE = Path(__file__).parent.parent / "fixtures" / "plugin_workspace"


def _write(cli, ws: Path, title: str, *extra: str) -> str:
    return cli.json("write", f"Content of {title}.", "--title", title, *extra, "-w", str(ws))["data"]["id"]


def rebuild(cli, ws: Path, *args: str, code: int = 0) -> dict:
    return cli.json("index-rebuild", *args, "-w", str(ws), code=code)


def test_clean_workspace_rebuilds_to_the_same_entries_and_checks_clean(cli, ws: Path) -> None:
    ids = [_write(cli, ws, f"Memory {i}", "--tag", "t") for i in range(3)]
    before = index(ws)["entries"]
    env = rebuild(cli, ws)
    assert env["status"] == "ok" and env["data"]["memories"] == 3
    after = index(ws)["entries"]
    assert sorted(e["id"] for e in after) == sorted(ids)
    assert sorted(after, key=lambda e: e["id"]) == sorted(before, key=lambda e: e["id"])
    check = rebuild(cli, ws, "--check")
    assert check["data"]["drift"] is False
    assert check["data"]["diff"] == {"added": [], "removed": [], "changed": []}


def test_check_writes_nothing_reports_the_diff_and_exits_6(cli, ws: Path, snap) -> None:
    keep = _write(cli, ws, "Keep me")
    gone = _write(cli, ws, "Delete me")
    edited = _write(cli, ws, "Edit me")
    (ws / "memories" / "note__delete-me.md").unlink()
    p = ws / "memories" / "note__edit-me.md"
    p.write_text(p.read_text().replace("title: Edit me", "title: Edited by hand"))
    added, _ = write_md(ws / "memories", title="Added by hand")
    before = snap(ws)
    env = rebuild(cli, ws, "--check", code=6)
    assert snap(ws) == before  # --check writes nothing
    d = env["data"]["diff"]
    assert [x["id"] for x in d["added"]] == [added]
    assert [x["id"] for x in d["removed"]] == [gone]
    assert [x["id"] for x in d["changed"]] == [edited]
    assert "title" in d["changed"][0]["fields"]
    assert env["status"] == "error" and env["data"]["drift"] is True
    # The repair: exit 0, the index is exactly the files, and the next check is clean.
    fixed = rebuild(cli, ws)
    assert fixed["exit_code"] == 0
    assert sorted(entry_ids(ws)) == sorted([keep, edited, added])
    assert next(e for e in index(ws)["entries"] if e["id"] == edited)["title"] == "Edited by hand"
    assert rebuild(cli, ws, "--check")["data"]["drift"] is False


def test_orphans_are_listed_with_reasons_never_dropped_or_deleted(cli, ws: Path) -> None:
    good = _write(cli, ws, "Good memory")
    bad_yaml = ws / "memories" / "note__broken.md"
    bad_yaml.write_text("---\nid: [unclosed\ntitle: x\n---\nbody\n")
    _, incomplete = write_md(ws / "memories", title="No id")
    text = incomplete.read_text()
    incomplete.write_text("\n".join(line for line in text.splitlines() if not line.startswith("id:")) + "\n")
    no_fm = ws / "memories" / "note__plain.md"
    no_fm.write_text("just text, no frontmatter\n")
    raw = {p: p.read_bytes() for p in (bad_yaml, incomplete, no_fm)}

    env = rebuild(cli, ws)
    assert env["exit_code"] == 0  # repaired and reported
    orphans = {o["path"]: o["reason"] for o in env["data"]["orphans"]}
    assert "invalid YAML" in orphans["memories/note__broken.md"]
    assert "lacks id" in orphans[f"memories/{incomplete.name}"]
    assert "no YAML frontmatter" in orphans["memories/note__plain.md"]
    assert any("orphan memories/note__broken.md" in w for w in env["warnings"])
    for p, b in raw.items():
        assert p.read_bytes() == b  # never modified, never deleted
    idx = index(ws)
    assert entry_ids(ws) == [good]
    assert {o["filename"] for o in idx["orphans"]} == {"note__broken.md", incomplete.name, "note__plain.md"}
    # Recorded orphans are not drift: --check is clean, status is healthy, writes do not re-scan.
    assert rebuild(cli, ws, "--check")["data"]["drift"] is False
    status = cli.json("status", "-w", str(ws))["data"]
    assert status["index_health"]["drifted"] == []
    w = cli.json("write", "Another.", "--title", "After orphans", "-w", str(ws))
    assert not any("repaired drifted" in x for x in w["warnings"])
    assert index(ws)["orphans"] == idx["orphans"]


def test_an_unparseable_file_keeps_its_last_indexed_entry(cli, ws: Path) -> None:
    mid = _write(cli, ws, "Once fine")
    p = ws / "memories" / "note__once-fine.md"
    p.write_text(p.read_text().replace("status: active", "status: [oops"))
    env = rebuild(cli, ws)
    assert env["data"]["orphans"][0]["kept_entry"] == mid
    assert entry_ids(ws) == [mid]  # still findable; the file is reported, not dropped
    assert index(ws)["orphans"][0]["kept_entry"] == mid
    assert rebuild(cli, ws, "--check")["data"]["drift"] is False


def test_duplicate_ids_are_an_error_exit_6_and_both_files_stay(cli, ws: Path) -> None:
    mid = _write(cli, ws, "Twice")
    other = _write(cli, ws, "Other")
    src = ws / "memories" / "note__twice.md"
    copy = ws / "memories" / "note__twice (1).md"  # a Box Drive conflict copy of a memory
    shutil.copy(src, copy)
    env = rebuild(cli, ws, code=6)
    assert env["status"] == "error"
    assert [e["code"] for e in env["errors"]] == ["duplicate_id"]
    assert mid in env["errors"][0]["message"]
    dup = env["data"]["duplicate_ids"][0]
    assert dup["id"] == mid and dup["indexed"] == "memories/note__twice.md"
    assert sorted(dup["paths"]) == ["memories/note__twice (1).md", "memories/note__twice.md"]
    assert sorted(entry_ids(ws)) == sorted([mid, other])  # one entry per id: the index stays usable
    assert src.exists() and copy.exists()
    assert "duplicate id" in next(o for o in index(ws)["orphans"] if o["filename"] == copy.name)["reason"]
    # Still an error for --check (nothing else drifted), until a person resolves it.
    check = rebuild(cli, ws, "--check", code=6)
    assert check["data"]["drift"] is False and check["errors"][0]["code"] == "duplicate_id"
    copy.unlink()
    assert rebuild(cli, ws)["exit_code"] == 0


def test_duplicate_active_slugs_are_reported_as_conflicts(cli, ws: Path) -> None:
    a, _ = write_md(ws / "memories", title="Shared", kind="note", slug="shared")
    b, _ = write_md(ws / "memories", title="Shared", kind="decision", slug="shared")
    c, _ = write_md(ws / "memories", title="Shared", kind="fact", slug="shared", status="superseded")
    env = rebuild(cli, ws)
    assert env["exit_code"] == 0  # a conflict for a person to settle, not an error
    conflicts = env["data"]["slug_conflicts"]
    assert len(conflicts) == 1 and conflicts[0]["slug"] == "shared"
    assert sorted(conflicts[0]["ids"]) == sorted([a, b])  # the superseded one is not a conflict
    assert any("slug conflict" in w for w in env["warnings"])
    assert sorted(entry_ids(ws)) == sorted([a, b, c])


def _plugin_ws(tmp_path: Path) -> Path:
    root = tmp_path / "plugin"
    shutil.copytree(FIXTURE, root)
    return root


def test_conflict_copies_are_merged_reported_and_archived(cli, tmp_path: Path) -> None:
    root = _plugin_ws(tmp_path)
    main = json.loads((root / "memories" / "_index.json").read_bytes())
    by_id = {e["id"]: e for e in main["entries"]}
    k0 = "mem_01JAAAA1B2C3D4E5F6G7H8J9K0"
    k2 = "mem_01JAAAA1B2C3D4E5F6G7H8J9K2"
    box_id = by_id[k0]["file_id"]
    # Box Drive kept two versions: the main index lost K0 (and its Box id); a copy still has it,
    # plus an entry for a file that no longer exists.
    copy = {
        **main,
        "entries": [by_id[k0], {**by_id[k2], "id": "mem_01JGONE000000000000000000", "filename": "gone.md"}],
    }
    main["entries"] = [e for e in main["entries"] if e["id"] != k0]
    (root / "memories" / "_index.json").write_bytes(json.dumps(main).encode())
    (root / "memories" / "_index (1).json").write_bytes(json.dumps(copy).encode())
    (root / "memories" / "_index.conflict.json").write_bytes(b"{not json")
    (root / "_index (1).json").write_bytes(json.dumps({"entries": []}).encode())

    check = rebuild(cli, root, "--check", code=6)
    assert {c["path"] for c in check["data"]["conflict_copies"]} == {
        "memories/_index (1).json",
        "memories/_index.conflict.json",
        "_index (1).json",
    }
    env = rebuild(cli, root)
    assert env["exit_code"] == 0
    entries = {e["id"]: e for e in index(root)["entries"]}
    assert entries[k0]["file_id"] == box_id  # the Box id only the conflict copy knew survives
    assert "mem_01JGONE000000000000000000" not in entries  # its file does not exist
    assert len(entries) == 3
    copies = {c["path"]: c for c in env["data"]["conflict_copies"]}
    assert copies["memories/_index (1).json"]["entries"] == 2
    assert copies["memories/_index.conflict.json"]["error"]  # unreadable, reported, still kept
    for c in copies.values():
        archived = root / c["archived_to"]
        assert archived.is_file() and c["archived_to"].startswith("_archive/index-conflicts/")
        assert not (root / c["path"]).exists()
    assert (root / copies["memories/_index.conflict.json"]["archived_to"]).read_bytes() == b"{not json"
    assert rebuild(cli, root, "--check")["data"]["drift"] is False


def test_plugin_workspace_keeps_box_ids_and_unknown_keys(cli, tmp_path: Path) -> None:
    root = _plugin_ws(tmp_path)
    before = index(root)
    rebuild(cli, root)
    after = index(root)
    assert after["folder_id"] == before["folder_id"]
    assert {e["id"]: e["file_id"] for e in after["entries"]} == {
        e["id"]: e["file_id"] for e in before["entries"]
    }
    roll = json.loads((root / "_index.json").read_bytes())
    assert roll["entry_count"] == 3 and set(roll["by_id"]) == {e["id"] for e in after["entries"]}


def test_unparseable_index_is_archived_then_rebuilt(cli, ws: Path) -> None:
    mid = _write(cli, ws, "Survivor")
    (ws / "memories" / "_index.json").write_bytes(b'{"entries": [')
    check = rebuild(cli, ws, "--check", code=6)
    folder = next(f for f in check["data"]["folders"] if f["folder"] == "memories/")
    assert folder["index"] == "unparseable"
    env = rebuild(cli, ws)
    assert entry_ids(ws) == [mid]
    arch = next(a for a in env["data"]["archived"] if a["kind"] == "unparseable")
    assert (ws / arch["archived_to"]).read_bytes() == b'{"entries": ['


def test_interrupted_supersede_is_completed_by_rebuild(cli, ws: Path) -> None:
    old = _write(cli, ws, "Policy")
    # A write died after creating the new memory and before marking the old one superseded.
    new, _ = write_md(ws / "memories", title="Policy", slug="policy-2", extra={"supersedes": [old]})
    check = rebuild(cli, ws, "--check", code=6)
    item = check["data"]["interrupted_supersedes"][0]
    assert item["id"] == old and item["superseded_by"] == new and item["repaired"] is False
    env = rebuild(cli, ws)
    assert env["data"]["interrupted_supersedes"][0]["repaired"] is True
    text = (ws / "memories" / "note__policy.md").read_text()
    assert "status: superseded" in text and f"superseded_by: {new}" in text
    entries = {e["id"]: e for e in index(ws)["entries"]}
    assert entries[old]["status"] == "superseded" and entries[old]["superseded_by"] == new
    got = cli.json("get", old, "-w", str(ws))["data"]
    assert got["current_id"] == new
    assert rebuild(cli, ws, "--check")["data"]["drift"] is False


def test_a_held_memory_is_never_changed_by_rebuild(cli, ws: Path) -> None:
    held, held_path = write_md(ws / "memories", title="Held", status="held")
    write_md(ws / "memories", title="Held", slug="held-2", extra={"supersedes": [held]})
    before = held_path.read_bytes()
    env = rebuild(cli, ws)
    assert held_path.read_bytes() == before
    assert env["data"]["interrupted_supersedes"] == []
    assert env["data"]["supersede_conflicts"][0]["id"] == held


def test_scoped_rebuilds_and_bad_scopes(cli, ws: Path, snap) -> None:
    cli.json("team", "create", "eng", "-w", str(ws))
    _write(cli, ws, "Root memory")
    eng_id = _write(cli, ws, "Eng memory", "--team", "eng")
    write_md(ws / "teams" / "eng" / "memories", title="Eng by hand")
    files_before = (ws / "files" / "_index.json").read_bytes()
    one = rebuild(cli, ws, "teams/eng/memories/")
    assert [f["folder"] for f in one["data"]["folders"]] == ["teams/eng/memories/"]
    assert (ws / "files" / "_index.json").read_bytes() == files_before
    assert eng_id in entry_ids(ws, "teams/eng/memories") and len(entry_ids(ws, "teams/eng/memories")) == 2
    team = rebuild(cli, ws, "--team", "eng", "--check")
    assert {f["folder"] for f in team["data"]["folders"]} == {"teams/eng/memories/", "teams/eng/files/"}
    prefix = rebuild(cli, ws, "teams/eng", "--check")
    assert {f["folder"] for f in prefix["data"]["folders"]} == {"teams/eng/memories/", "teams/eng/files/"}
    comps = rebuild(cli, ws, "--companions-only", "--check")
    assert {f["folder"] for f in comps["data"]["folders"]} == {
        "files/",
        "teams/default/files/",
        "teams/eng/files/",
    }
    before = snap(ws)
    assert cli.json("index-rebuild", "nope/", "-w", str(ws), code=2)["errors"][0]["code"] == "invalid_input"
    assert cli.json("index-rebuild", "--team", "ghost", "-w", str(ws), code=2)["exit_code"] == 2
    assert cli.json("index-rebuild", "../x", "-w", str(ws), code=2)["exit_code"] == 2
    assert snap(ws) == before


def test_stale_and_orphaned_companions_are_reported(cli, ws: Path) -> None:
    (ws / "files" / "report.bin").write_bytes(b"\x00\x01 version one")
    (ws / "files" / "gone.bin").write_bytes(b"\x00 soon gone")
    cli.json("companion", "files/report.bin", "-w", str(ws))
    cli.json("companion", "files/gone.bin", "-w", str(ws))
    assert rebuild(cli, ws)["data"]["stale_companions"] == []
    (ws / "files" / "report.bin").write_bytes(b"\x00\x01 version two")
    (ws / "files" / "gone.bin").unlink()
    env = rebuild(cli, ws)
    assert env["exit_code"] == 0  # reported, not fixed: `companion` regenerates them
    states = {c["binary"]: c["state"] for c in env["data"]["stale_companions"]}
    assert states == {"files/report.bin": "stale", "files/gone.bin": "orphaned"}
    only = rebuild(cli, ws, "--companions-only")
    assert {c["state"] for c in only["data"]["stale_companions"]} == {"stale", "orphaned"}
    assert all(f["folder"].endswith("files/") for f in only["data"]["folders"])


@pytest.mark.parametrize("layout", ["folder"])
def test_folder_layout_rebuilds_companion_folders(cli, tmp_path: Path, layout: str) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--layout", layout)
    (root / "files" / "a.bin").write_bytes(b"\x00abc")
    cli.json("companion", "files/a.bin", "-w", str(root))
    env = rebuild(cli, root, "--companions-only")
    folders = {f["folder"]: f for f in env["data"]["folders"]}
    assert folders["companions/"]["companions"] == 1
    assert rebuild(cli, root, "--check")["data"]["drift"] is False


def test_a_file_changed_after_the_unlocked_pass_is_read_again(cli, ws: Path) -> None:
    """rebuild parses before taking the lock; anything that changed since is re-read under it."""
    from box_memory.maintenance.folder_scan import Memo, scan
    from box_memory.workspace.resolve import open_workspace

    mid = _write(cli, ws, "Changing")
    w = open_workspace(str(ws))
    memo: Memo = {}
    first = scan(w, "memories", memo=memo)
    assert [e["title"] for e in first.entries] == ["Changing"] and len(memo) == 1
    p = ws / "memories" / "note__changing.md"
    p.write_text(p.read_text().replace("title: Changing", "title: Changed meanwhile"))
    second = scan(w, "memories", memo=memo)
    assert [(e["id"], e["title"]) for e in second.entries] == [(mid, "Changed meanwhile")]


def test_two_memories_claiming_one_old_memory_are_a_conflict_not_a_repair(cli, ws: Path) -> None:
    cli.json("team", "create", "eng", "-w", str(ws))
    old = _write(cli, ws, "Shared rule")
    a, _ = write_md(ws / "memories", title="Shared rule", slug="shared-rule-2", extra={"supersedes": [old]})
    b, _ = write_md(ws / "teams" / "eng" / "memories", title="Shared rule", extra={"supersedes": [old]})
    before = (ws / "memories" / "note__shared-rule.md").read_bytes()
    env = rebuild(cli, ws)
    assert env["data"]["interrupted_supersedes"] == []
    conflict = env["data"]["supersede_conflicts"][0]
    assert conflict["id"] == old and conflict["claimed_by"] == sorted([a, b])
    assert (ws / "memories" / "note__shared-rule.md").read_bytes() == before
    assert any("supersede conflict" in w for w in env["warnings"])
