"""The reference behaviour of brain-sync (spec brain-sync.md), through the real CLI and emulator."""

from __future__ import annotations

from box_memory.brain.sync import SYNC_TOOLS
from tests.brain.helpers import entries, folder_id, fts, items, put, sync, tool_calls


def test_first_sync_indexes_one_file(cli, emu, box):
    put(box, "notes.md", "Quarterly planning notes: ship the alpha in March.\n")
    run = sync(cli, "--folder-id", "0")
    assert run["status"] == "completed"
    assert run["complete"] is True
    assert run["counts"]["discovered"] == 1
    assert run["counts"]["indexed"] == 1
    assert run["counts"]["new"] == 1
    assert run["_envelope"]["status"] == "ok"
    file_id = folder_id(emu, "notes.md")
    assert list(items()) == [file_id]
    assert items()[file_id]["status"] == "indexed"
    assert fts("alpha") == [file_id]
    assert [c.name for c in emu.calls] == ["list_folder_content_by_folder_id", "get_file_content"]


def test_identical_second_sync_is_unchanged_with_exactly_one_listing_call(cli, emu, box):
    put(box, "notes.md", "Quarterly planning notes.\n")
    sync(cli, "--folder-id", "0")
    emu.reset_calls()
    run = sync(cli, "--folder-id", "0")
    assert run["status"] == "completed"
    assert run["counts"]["unchanged"] == 1
    assert run["counts"]["indexed"] == 0
    assert [c.name for c in emu.calls] == ["list_folder_content_by_folder_id"]
    assert run["mcp_calls"] == 1
    assert run["review"]["status"] == "skipped"


def test_etag_change_replaces_the_entry_instead_of_duplicating_it(cli, emu, box):
    p = put(box, "policy.md", "Badges are blue.\n")
    sync(cli, "--folder-id", "0")
    file_id = folder_id(emu, "policy.md")
    before = items()[file_id]
    p.write_text("Badges are green from now on.\n", encoding="utf-8")
    run = sync(cli, "--folder-id", "0")
    assert run["counts"]["indexed"] == 1
    assert run["counts"]["replaced"] == 1
    assert run["counts"]["new"] == 0
    after = items()
    assert list(after) == [file_id]
    assert after[file_id]["etag"] != before["etag"]
    assert after[file_id]["first_seen"] == before["first_seen"]
    assert len(entries()) == 1
    assert "green" in entries()[file_id]
    assert fts("green") == [file_id]
    assert fts("blue") == []


def test_rename_alone_reindexes(cli, emu, box):
    put(box, "draft.md", "The launch checklist.\n")
    sync(cli, "--folder-id", "0")
    file_id = folder_id(emu, "draft.md")
    before = items()[file_id]
    item = emu.fs.get(file_id)
    emu.fs.move(item, emu.fs.parent(item), "final.md", AssertionError)
    # Only the name changes: give the item back its old etag and sequence id, like a server whose
    # etag ignores renames, so that the name alone has to trigger the reindex.
    item.etag, item.sequence_id = int(before["etag"]), item.sequence_id - 1
    emu.fs._save(item)
    run = sync(cli, "--folder-id", "0")
    after = items()[file_id]
    assert after["etag"] == before["etag"]
    assert run["counts"]["indexed"] == 1
    assert run["counts"]["replaced"] == 1
    assert run["counts"]["deleted"] == 0
    assert after["name"] == "final.md"
    assert "File: final.md |" in entries()[file_id]


def test_emptied_folder_after_a_complete_crawl_deletes_the_entry(cli, emu, box, ws):
    p = put(box, "project/roadmap.md", "Roadmap: the zephyr release.\n")
    project = folder_id(emu, "project")
    sync(cli, "--folder-id", project, "-w", str(ws))
    hit = cli.json("recall", "zephyr", "-w", str(ws))["data"]["brain"]
    assert [h["name"] for h in hit] == ["roadmap.md"]
    p.unlink()
    run = sync(cli, "--folder-id", project, "-w", str(ws))
    assert run["complete"] is True
    assert run["status"] == "completed"
    assert run["counts"]["deleted"] == 1
    assert entries() == {}
    assert [i["status"] for i in items().values()] == ["deleted"]
    assert fts("zephyr") == []
    assert cli.json("recall", "zephyr", "-w", str(ws))["data"]["brain"] == []


def test_cap_one_with_a_second_page_pending_is_partial_and_deletes_nothing(cli, emu, box):
    for name in ("a.md", "b.md", "c.md"):
        put(box, name, f"document {name}\n")
    sync(cli, "--folder-id", "0")
    (box / "c.md").unlink()
    emu.reset_calls()
    run = sync(cli, "--folder-id", "0", "--max-items", "1")
    assert run["status"] == "partial"
    assert run["_envelope"]["status"] == "partial"
    assert run["_envelope"]["exit_code"] == 0
    assert run["complete"] is False
    assert run["counts"]["deleted"] == 0
    assert run["counts"]["discovered"] == 1
    assert any("cap 1" in r for r in run["incomplete_reasons"])
    assert len(entries()) == 3  # the older items, c.md included, are kept
    assert tool_calls(emu)[0].arguments["limit"] == 1
    assert {c.name for c in emu.calls} <= SYNC_TOOLS


def test_entries_dropped_from_the_last_page_by_the_cap_make_the_crawl_incomplete(cli, emu, box):
    """The case the public implementation gets wrong: no further page, nothing queued, yet unseen files."""
    put(box, "top.md", "top\n")
    for name in ("x.md", "y.md", "z.md"):
        put(box, f"sub/{name}", f"document {name}\n")
    sync(cli, "--folder-id", "0")
    assert len(entries()) == 4
    run = sync(cli, "--folder-id", "0", "--max-items", "3")
    assert run["counts"]["discovered"] == 3
    assert run["complete"] is False
    assert run["status"] == "partial"
    assert any("more entries on the page" in r for r in run["incomplete_reasons"])
    assert run["counts"]["deleted"] == 0
    assert len(entries()) == 4
    assert "deleted" not in {i["status"] for i in items().values()}
