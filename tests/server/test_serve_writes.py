"""A long-lived `serve` writes without re-reading what it already holds, and still loses nothing.

It keeps each folder index it parsed or saved with the stat of its file (`workspace.index.
keep_parsed`): a write parses no index whose file is unchanged, and one another writer replaced is
parsed again. After its own write, the next recall stats only the files the folder watch names,
not the whole folder. A killed writer's temp files are still swept.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import box_memory.workspace.index as index_mod
from box_memory.format.model import TMP_PREFIX
from box_memory.recall.cache_db import RACY_NS
from box_memory.recall.watch import FolderWatch
from box_memory.serve.server import MemoryServer
from tests.conftest import Cli


def _write(server: MemoryServer, title: str) -> dict[str, Any]:
    out, is_error = server.call("write", {"content": f"Notes on {title}.", "title": title, "kind": "note"})
    assert not is_error, out
    return out["data"]


def _index_ids(root: Path) -> set[str]:
    return {e["id"] for e in json.loads((root / "memories" / "_index.json").read_bytes())["entries"]}


@pytest.fixture
def root(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    return root


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each index file parsed (a spy: the real parse still runs)."""
    seen: list[str] = []
    real = index_mod.parse_index

    def spy(raw: bytes, where: str, *, checked: bool = False) -> dict[str, Any]:
        seen.append(where)
        return real(raw, where, checked=checked)

    monkeypatch.setattr(index_mod, "parse_index", spy)
    return seen


def test_a_second_write_parses_no_index_and_another_writers_entry_is_kept(
    root: Path, parses: list[str]
) -> None:
    server = MemoryServer(workspace=str(root))
    first = _write(server, "First note")
    parses.clear()
    second = _write(server, "Second note")
    assert [p for p in parses if p.endswith("memories/_index.json")] == []
    # Another process writes into the same folder: its index file is replaced.
    env = {**os.environ, "BOX_MEMORY_WORKSPACE": str(root)}
    out = subprocess.run(
        [sys.executable, "-m", "box_memory", "write", "From the CLI.", "--title", "CLI note", "--json"],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    other = json.loads(out.stdout)["data"]["id"]
    third = _write(server, "Third note")
    assert [p for p in parses if p.endswith("memories/_index.json")] != []  # parsed again
    assert _index_ids(root) >= {first["id"], second["id"], other, third["id"]}
    hits, _ = server.call("recall", {"query": "CLI note"})
    assert [h["id"] for h in hits["data"]["hits"]][:1] == [other]


def test_after_its_own_write_a_recall_stats_only_the_files_the_watch_names(root: Path) -> None:
    if FolderWatch.start(str(root)) is None:
        pytest.skip("no inotify here: every call stats the files (other tests cover that)")
    server = MemoryServer(workspace=str(root))
    for i in range(5):
        _write(server, f"Filler {i}")
    server.call("recall", {"query": "filler"})
    time.sleep(RACY_NS / 1e9)
    server.call("recall", {"query": "filler"})
    made = _write(server, "Zebra crossing")
    got, _ = server.call("recall", {"query": "zebra"})
    cache = got["data"]["cache"]
    assert [h["id"] for h in got["data"]["hits"]] == [made["id"]]
    assert cache["stat_folders"] == 0 and 1 <= cache["named_files"] <= 2


def test_a_killed_writers_old_temp_file_is_swept_by_the_next_write(root: Path, cli: Cli) -> None:
    left = root / "memories" / f"{TMP_PREFIX}killed"
    left.write_bytes(b"half a memory")
    old = time.time() - 3600
    os.utime(left, (old, old))
    cli.json("write", "After the crash.", "--title", "After", "-w", str(root))
    assert not left.exists()


def _entry(mem_id: str, name: str) -> dict[str, Any]:
    return {
        "id": mem_id,
        "slug": name,
        "title": name,
        "kind": "note",
        "status": "active",
        "filename": f"note__{name}.md",
    }


def test_a_kept_index_is_never_one_its_saver_changed_after_the_save(root: Path) -> None:
    from box_memory.workspace.resolve import open_workspace

    index_mod.keep_parsed()
    ws = open_workspace(str(root))
    idx = index_mod.load_index(ws, "memories")
    idx.upsert(_entry("01SAVED", "saved"))
    index_mod.save_index(ws, idx)
    # The saver goes on changing its index without saving it (a batch between checkpoints, a
    # save that then fails): a later load must see the file's entries, not those.
    idx.upsert(_entry("01UNSAVED", "unsaved"))
    again = index_mod.load_index(ws, "memories")
    assert [e["id"] for e in again.entries] == ["01SAVED"]
    on_disk = json.loads((root / "memories" / "_index.json").read_bytes())["entries"]
    assert [e["id"] for e in on_disk] == ["01SAVED"]


def test_while_its_saver_lives_a_load_gets_a_copy_and_after_it_the_saved_index_itself(root: Path) -> None:
    from box_memory.workspace.resolve import open_workspace

    index_mod.keep_parsed()
    ws = open_workspace(str(root))
    idx = index_mod.load_index(ws, "memories")
    idx.upsert(_entry("01FIRST", "first"))
    index_mod.save_index(ws, idx)
    loaded = index_mod.load_index(ws, "memories")
    assert loaded.data is not idx.data  # the saver may still change its own
    idx.upsert(_entry("01LATER", "later"))  # ... and does: the loaded one is not changed with it
    assert [e["id"] for e in loaded.entries] == ["01FIRST"]
    loaded.upsert(_entry("01SECOND", "second"))
    index_mod.save_index(ws, loaded)
    saved = loaded.data
    del loaded  # the saver is gone (a write is over): its index is handed over as it is
    taken = index_mod.load_index(ws, "memories")
    assert taken.data is saved
    assert [e["id"] for e in taken.entries] == ["01FIRST", "01SECOND"]


def test_writes_more_often_than_the_racy_window_still_leave_recalls_to_the_watch(
    root: Path, tmp_path: Path, cli: Cli
) -> None:
    """A file changed less than RACY_NS before a stat is racy to it; with the folder watched from
    before the stats that needs no second look by stat. Without that, a server that first looked
    at a folder just copied (every file racy) and then wrote to it more often than every RACY_NS
    stat'ed it file by file on every call from then on (4,000 stats at each write of the load
    bench), never trusting the watch."""
    import shutil

    import box_memory.recall.cache as cache_mod

    if FolderWatch.start(str(root)) is None:
        pytest.skip("no inotify here: every call stats the files (other tests cover that)")
    for i in range(5):
        cli.json("write", f"Notes on filler {i}.", "--title", f"Filler {i}", "-w", str(root))
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)  # every file new to a stat now (its ctime)
    server = MemoryServer(workspace=str(copy))
    server.call("recall", {"query": "filler"})
    stats = []
    deadline = time.monotonic() + 1.5 * RACY_NS / 1e9
    while time.monotonic() < deadline:  # back to back, each write's file racy to the next look
        made = _write(server, f"Quick {len(stats)} zebra")
        (held,) = (cache_mod._held or {}).values()
        stats.append(held.stats.stat_folders)  # the write's own look at the cache, under the lock
        got, _ = server.call("recall", {"query": f"quick {len(stats) - 1} zebra"})
        assert got["data"]["hits"][0]["id"] == made["id"]
        stats.append(got["data"]["cache"]["stat_folders"])
    assert sum(stats[2:]) == 0, stats


# --- a write reuses the names its last write left, unless anything else touched the folder -------


def _needs_watch(root: Path) -> None:
    if FolderWatch.start(str(root)) is None:
        pytest.skip("no inotify here: every write lists its folder (other tests cover that)")


def _dropped_in(root: Path, title: str) -> str:
    """A memory file another program puts in `memories/` without touching the index (a sync
    client, a copy): its id."""
    mem_id = "mem_01M8Y2PF7J4R90H2BM6QFOREIGN"[: len("mem_01M8Y2PF7J4R90H2BM6QPA667J")]
    slug = title.lower().replace(" ", "-")
    (root / "memories" / f"note__{slug}.md").write_text(
        f"---\nid: {mem_id}\nslug: {slug}\ntitle: {title}\nkind: note\nstatus: active\nteam: default\n"
        "created_at: 2026-12-03T13:49:56.314Z\nupdated_at: 2026-12-03T13:49:56.314Z\n---\n\n"
        f"# {title}\n\nPut here by another program.\n",
        encoding="utf-8",
    )
    return mem_id


def _write_warnings(server: MemoryServer, title: str) -> list[str]:
    out, is_error = server.call("write", {"content": f"Notes on {title}.", "title": title, "kind": "note"})
    assert not is_error, out
    return list(out["warnings"])


def test_consecutive_writes_reuse_their_folders_names_and_still_see_a_file_added_behind_their_back(
    root: Path,
) -> None:
    _needs_watch(root)
    server = MemoryServer(workspace=str(root))
    for i in range(3):
        _write(server, f"Own note {i}")
    assert server._folders.reused == 2  # the second and third write listed nothing
    foreign = _dropped_in(root, "Foreign note")
    warnings = _write_warnings(server, "After the foreign one")
    assert server._folders.reused == 2  # the folder had an event: listed and checked again
    assert any("repaired drifted index of memories/" in w for w in warnings), warnings
    assert foreign in _index_ids(root)
    _write(server, "And one more")
    assert server._folders.reused == 3  # that write's own listing is trusted again


def test_a_file_removed_behind_the_servers_back_is_seen_by_its_next_write(root: Path) -> None:
    _needs_watch(root)
    server = MemoryServer(workspace=str(root))
    gone = _write(server, "Removed later")
    kept = _write(server, "Stays")
    (root / gone["file"]).unlink()
    warnings = _write_warnings(server, "After the removal")
    assert any("repaired drifted index of memories/" in w for w in warnings), warnings
    assert gone["id"] not in _index_ids(root) and kept["id"] in _index_ids(root)


def test_a_watch_that_lost_events_trusts_nothing_it_kept(root: Path) -> None:
    """More events than the kernel queues (an overflow): the event of the file added behind the
    server's back is lost, so the kept names are dropped on the overflow itself."""
    _needs_watch(root)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"max_queued_events is {limit}: too many events to make here")
    server = MemoryServer(workspace=str(root))
    _write(server, "Own note")
    _write(server, "Own note two")
    temps = [root / "memories" / f"{TMP_PREFIX}{n}" for n in ("a", "b")]
    for t in temps:
        t.write_bytes(b"")
    for i in range(limit + 10):  # temp files' events are ignored; these fill the queue
        os.utime(temps[i % 2], ns=(i, i))
    for t in temps:
        t.unlink()
    foreign = _dropped_in(root, "Lost event note")
    warnings = _write_warnings(server, "After the overflow")
    assert any("repaired drifted index of memories/" in w for w in warnings), warnings
    assert foreign in _index_ids(root)


def test_names_kept_without_the_drift_check_are_checked_once_the_setting_is_turned_on(root: Path) -> None:
    _needs_watch(root)
    config = root / "_box-memory.json"

    def drift_check(on: bool) -> None:
        data = json.loads(config.read_bytes())
        data["settings"]["rebuild_index_on_drift"] = on
        config.write_text(json.dumps(data), encoding="utf-8")

    drift_check(False)
    server = MemoryServer(workspace=str(root))
    _write(server, "Own note")
    foreign = _dropped_in(root, "Unchecked note")
    _write(server, "Listed, not checked")  # the setting is off: the drift is left
    assert foreign not in _index_ids(root)
    drift_check(True)
    warnings = _write_warnings(server, "Checked now")
    assert any("repaired drifted index of memories/" in w for w in warnings), warnings
    assert foreign in _index_ids(root)


def test_a_cli_write_between_two_server_writes_is_kept_and_seen(root: Path) -> None:
    _needs_watch(root)
    server = MemoryServer(workspace=str(root))
    _write(server, "Server one")
    _write(server, "Server two")
    reused = server._folders.reused
    env = {**os.environ, "BOX_MEMORY_WORKSPACE": str(root)}
    out = subprocess.run(
        [sys.executable, "-m", "box_memory", "write", "From the CLI.", "--title", "Server three", "--json"],
        env=env, capture_output=True, check=True,
    )  # fmt: skip
    cli = json.loads(out.stdout)["data"]
    refused, is_error = server.call("write", {"content": "Again.", "title": "Server three", "kind": "note"})
    assert is_error and refused["errors"][0]["code"] == "duplicate", refused  # the CLI's is seen
    assert server._folders.reused == reused
    made = _write(server, "Server four")
    assert _index_ids(root) >= {cli["id"], made["id"]}


@pytest.mark.parametrize("during", ["a file added", "its own file removed"])
def test_a_change_made_while_a_write_runs_is_seen_by_the_next_write(
    root: Path, monkeypatch: pytest.MonkeyPatch, during: str
) -> None:
    """Another program acts between a write's listing and its end: the names that write leaves
    are not kept (its own new file must be there too), so the next write lists and checks."""
    import box_memory.write.commit as commit_mod

    _needs_watch(root)
    server = MemoryServer(workspace=str(root))
    _write(server, "Own note")
    real = commit_mod.save_changed
    foreign: list[str] = []

    def meanwhile(ws: Any, changed: dict[str, Any]) -> None:
        if during == "a file added":
            foreign.append(_dropped_in(root, "Meanwhile note"))
        else:
            newest = max((root / "memories").glob("note__own-note-two*.md"))
            newest.unlink()
        real(ws, changed)

    monkeypatch.setattr(commit_mod, "save_changed", meanwhile)
    two = _write(server, "Own note two")
    monkeypatch.setattr(commit_mod, "save_changed", real)
    warnings = _write_warnings(server, "Own note three")
    assert any("repaired drifted index of memories/" in w for w in warnings), warnings
    ids = _index_ids(root)
    assert (foreign[0] in ids) if foreign else (two["id"] not in ids)


def test_a_reused_write_lists_its_folder_not_at_all_and_one_after_a_change_does(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither the drift check nor the store's case-folded name check lists the folder on a write
    that takes the names its last write left; after a file added behind its back, both see it."""
    _needs_watch(root)
    server = MemoryServer(workspace=str(root))
    _write(server, "Own note")
    _write(server, "Own note two")
    listed: list[str] = []
    real = os.listdir

    def spy(path: Any = ".") -> list[str]:
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", spy)
    memories = str(root / "memories")
    _write(server, "Own note three")
    assert memories not in listed, listed
    (root / "memories" / "NOTE__Own-Note-Four.md").write_text("not a memory\n", encoding="utf-8")
    made = _write(server, "Own note four")
    assert memories in listed
    assert made["file"] == "memories/note__own-note-four-2.md"  # the case twin's name is taken
