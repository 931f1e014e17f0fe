"""Failures: the server dying mid-crawl, concurrent runs, auth, missing tools, the read-only allowlist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from box_memory.brain.single_run import source_lock
from box_memory.brain.sync import SYNC_TOOLS, SyncOptions, _open_client
from box_memory.errors import BoxMemoryError
from tests.brain.helpers import FakeClock, Sleeps, entries, items, lib_sync, put, store, sync, tool_calls


def test_the_server_dying_mid_crawl_fails_the_run_changes_nothing_and_the_next_run_recovers(emu, box):
    put(box, "a/one.md", "one: version 1\n")
    put(box, "b/two.md", "two: version 1\n")
    put(box, "b/three.md", "three\n")
    assert lib_sync("0").status == "completed"
    items_before, entries_before = items(), entries()
    (box / "a" / "one.md").write_text("one: version 2\n", encoding="utf-8")
    (box / "b" / "two.md").write_text("two: version 2\n", encoding="utf-8")
    (box / "b" / "three.md").unlink()

    def kill_after_first_page(phase: str, done: int, total: int | None) -> None:
        if phase == "crawl" and emu.running:
            emu.stop()

    run = lib_sync("0", opts=SyncOptions(progress=kill_after_first_page))
    assert run.status == "failed"
    assert run.exit_code == 4
    assert run.error_code == "backend_unavailable"
    assert "not reachable" in (run.error or "")
    assert items() == items_before
    assert entries() == entries_before
    with store() as s:
        last = s.runs(limit=1)[0]
        assert last["status"] == "failed"
        assert s.sources()[0].last_error == run.error

    emu.start()
    again = lib_sync("0")
    assert again.status == "completed"
    assert again.counts["replaced"] == 2
    assert again.counts["deleted"] == 1
    assert "version 2" in "".join(entries().values())
    with store() as s:
        assert s.sources()[0].last_error is None


def test_a_dead_server_during_content_fetch_also_fails_without_changes(emu, box):
    for n in range(6):
        put(box, f"f{n}.md", f"file {n}\n")
    emu.configure(latency_ms=150)

    def kill_when_fetching(phase: str, done: int, total: int | None) -> None:
        if phase == "fetch" and emu.running:
            emu.stop()

    run = lib_sync("0", opts=SyncOptions(progress=kill_when_fetching, concurrency=1))
    assert run.status == "failed"
    assert run.exit_code == 4
    assert items() == {}
    emu.start()
    emu.configure(latency_ms=0)
    assert lib_sync("0").counts["indexed"] == 6


def test_a_second_run_of_a_busy_source_is_skipped(cli, emu, box):
    put(box, "a.md", "a\n")
    sync(cli, "--folder-id", "0")
    emu.reset_calls()
    with source_lock(1) as held:
        assert held
        run = sync(cli, "--folder-id", "0")
    assert run["status"] == "skipped"
    assert run["_envelope"]["status"] == "skipped"
    assert run["_envelope"]["exit_code"] == 0
    assert "in progress" in run["incomplete_reasons"][0]
    assert emu.calls == []
    with store() as s:
        assert [r["status"] for r in s.runs()] == ["completed"]


def test_two_concurrent_processes_one_is_skipped(cli, emu, box):
    for n in range(2):
        put(box, f"f{n}.md", f"file {n}\n")
    emu.configure(latency_ms=1000)
    cmd = [sys.executable, "-m", "box_memory", "brain-sync", "--folder-id", "0", "--json"]
    first = subprocess.Popen(
        cmd, env={**os.environ}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while not emu.calls and time.monotonic() < deadline:  # the first run holds the lock by now
            time.sleep(0.02)
        assert emu.calls, "the first run never reached the server"
        second = sync(cli, "--folder-id", "0")  # this process, while the other one is mid-run
        out, err = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == 0, err
    assert json.loads(out)["data"]["runs"][0]["status"] == "completed"
    assert second["status"] == "skipped"
    assert second["_envelope"]["exit_code"] == 0
    assert "in progress" in second["incomplete_reasons"][0]


def test_sync_never_calls_a_write_tool(emu, box):
    put(box, "a.md", "Decision: we decided to use Postgres.\n")
    (box / "b.pdf").write_bytes(b"%PDF" + bytes(200))
    clock = FakeClock()
    lib_sync("0", ai_summaries=True, opts=SyncOptions(clock=clock, sleep=clock.sleep))
    (box / "a.md").write_text("changed\n", encoding="utf-8")
    put(box, "sub/c.md", "c\n")
    lib_sync("0")
    (box / "sub" / "c.md").unlink()
    lib_sync("0")
    names = {c.name for c in emu.calls}
    assert names <= SYNC_TOOLS
    assert {"list_folder_content_by_folder_id", "get_file_content", "ai_qa_single_file"} <= names


def test_the_read_only_allowlist_is_enforced_in_the_client(emu, box, monkeypatch):
    assert {
        "list_folder_content_by_folder_id",
        "get_file_content",
        "get_file_details",
        "get_folder_details",
        "ai_qa_single_file",
        "who_am_i",
    } == SYNC_TOOLS
    lib_sync("0")
    with store() as s:
        source = s.sources()[0]
    client = _open_client(source, SyncOptions(client_kwargs={"timeout": 5.0}))
    try:
        assert client.allowed_tools == SYNC_TOOLS
        emu.reset_calls()
        with pytest.raises(BoxMemoryError) as info:
            client.call("upload_file", {"file_name": "x.md", "file_content": "x"})
        assert info.value.code == "tool_not_allowed"
        assert emu.calls == []  # refused before anything was sent
    finally:
        client.close()


def test_missing_auth_fails_with_exit_4_and_is_recorded(cli, emu, box, monkeypatch):
    put(box, "a.md", "a\n")
    monkeypatch.delenv("BOX_ACCESS_TOKEN")
    env = cli.json("brain-sync", "--folder-id", "0", code=4)
    assert env["status"] == "error"
    assert env["errors"][0]["code"] in ("auth_failed", "not_logged_in")
    assert env["data"]["runs"][0]["status"] == "failed"
    runs = cli.json("brain", "runs")["data"]["runs"]
    assert [r["status"] for r in runs] == ["failed"]
    assert emu.calls == []


def test_a_rejected_token_fails_with_exit_4(cli, emu, box, monkeypatch):
    put(box, "a.md", "a\n")
    monkeypatch.setenv("BOX_ACCESS_TOKEN", "wrong-token")
    env = cli.json("brain-sync", "--folder-id", "0", code=4)
    assert env["data"]["runs"][0]["error_code"] in ("auth_failed", "auth_env_token_rejected")


def test_a_missing_listing_tool_fails_the_run_without_a_broader_traversal(emu, box):
    emu.configure(hidden_tools={"list_folder_content_by_folder_id"})
    put(box, "a.md", "a\n")
    run = lib_sync("0")
    assert run.status == "failed"
    assert run.exit_code == 4
    assert run.error_code == "tool_missing"
    assert emu.calls == []


def test_a_failing_root_listing_fails_the_run(emu, box):
    put(box, "a.md", "a\n")
    emu.configure(error_rate=1.0, error_kinds=("500",))
    sleeps = Sleeps()
    run = lib_sync("0", opts=SyncOptions(client_kwargs={"sleep": sleeps, "max_retries": 2}))
    assert run.status == "failed"
    assert len(sleeps) == 2
    assert len(tool_calls(emu, "list_folder_content_by_folder_id")) == 3
    assert items() == {}


def test_a_file_failing_after_retries_makes_the_run_partial_and_keeps_its_old_entry(emu, box):
    put(box, "a.md", "a version 1\n")
    put(box, "b.md", "b version 1\n")
    lib_sync("0")
    (box / "a.md").write_text("a version 2\n", encoding="utf-8")

    def break_content(phase: str, done: int, total: int | None) -> None:
        if phase == "crawl":  # the listing went through; now every call fails with a relayed 500
            emu.configure(error_rate=1.0, error_kinds=("tool500",))

    run = lib_sync("0", opts=SyncOptions(progress=break_content, client_kwargs={"max_retries": 1}))
    assert run.status == "partial"
    assert run.complete is True
    assert run.counts["failed"] == 1
    assert run.counts["unchanged"] == 1
    assert "1 file(s) failed" in run.reasons
    a = next(i for i in items().values() if i["name"] == "a.md")
    assert a["status"] == "indexed" and "500" in a["error"]
    assert "a version 1" in entries()[a["box_id"]]
    emu.configure(error_rate=0.0)
    again = lib_sync("0")  # the stored metadata is the old one, so the file is tried again
    assert again.status == "completed"
    assert again.counts["replaced"] == 1
    assert "a version 2" in entries()[a["box_id"]]


def test_a_file_removed_between_listing_and_fetch_is_skipped_then_deleted(emu, box):
    put(box, "keep.md", "keep\n")
    put(box, "gone.md", "gone\n")

    def remove(phase: str, done: int, total: int | None) -> None:
        if phase == "crawl" and (box / "gone.md").exists():
            (box / "gone.md").unlink()

    run = lib_sync("0", opts=SyncOptions(progress=remove))
    assert run.status == "partial"
    assert run.counts == {**run.counts, "skipped": 1, "indexed": 1, "deleted": 0}
    gone = next(i for i in items().values() if i["name"] == "gone.md")
    assert gone["status"] == "skipped"
    assert "not found" in gone["reason"]
    later = lib_sync("0")
    assert later.status == "completed"
    assert later.counts["deleted"] == 1


def test_a_run_left_running_by_a_dead_process_is_closed_as_interrupted(cli, emu, box):
    put(box, "a.md", "a\n")
    sync(cli, "--folder-id", "0")
    with store() as s:
        s.db.execute(
            "INSERT INTO runs (source_id, started_at, status) VALUES (1, '2026-01-01T00:00:00Z', 'running')"
        )
    sync(cli, "--folder-id", "0")
    runs = cli.json("brain", "runs")["data"]["runs"]
    assert [r["status"] for r in runs] == ["completed", "failed", "completed"]
    assert runs[1]["error"].startswith("interrupted")


def test_a_folder_that_does_not_exist_fails_the_run_with_box_s_error(cli, emu):
    env = cli.json("brain-sync", "--folder-id", "987654321", code=1)
    assert env["status"] == "error"
    assert env["data"]["runs"][0]["status"] == "failed"
    assert "404" in env["errors"][0]["message"]
    assert [c.name for c in emu.calls] == ["list_folder_content_by_folder_id"]
