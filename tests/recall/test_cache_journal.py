"""A new recall cache is filled through SQLite's rollback journal, then kept in WAL mode.

Through a write-ahead log, every page of a first fill is written twice (into the log, then into
the database at the checkpoint); a rollback journal of a new file keeps next to nothing, so each
page is written once. After that fill the cache is in WAL mode, as before: a recall never waits on
a write's update of the cache.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from box_memory.recall.cache_db import cache_path
from box_memory.recall.cache_refresh import RecallCache
from box_memory.workspace.resolve import open_workspace
from tests.conftest import Cli
from tests.recall.test_edits_in_place import hits, two_memories


def _mode(path: str) -> str:
    db = sqlite3.connect(path)
    try:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        db.close()


def _wal_bytes(path: str) -> int:
    try:
        return os.stat(path + "-wal").st_size
    except FileNotFoundError:
        return 0


def test_the_first_fill_writes_no_log_and_leaves_the_cache_in_wal_mode(tmp_path: Path, cli: Cli) -> None:
    root = two_memories(tmp_path, cli)
    ws = open_workspace(str(root))
    path = cache_path(ws)
    cache = RecallCache(ws, path)
    cache.open()
    try:
        assert _mode(path) != "wal"  # made, not yet filled
        cache.refresh()
        assert cache.entry_count() == 2
        # Still open (so nothing checkpointed or removed the log): the fill wrote none of it.
        assert _wal_bytes(path) == 0
        assert _mode(path) == "wal"
    finally:
        cache.close()
    # From then on, as before: a write's update of the cache goes through the log.
    cli.json("write", "Canary rollouts need a rollback plan.", "--title", "Rollback plan", "-w", str(root))
    assert hits(cli, root, "rollback")[0] == ["Rollback plan"]
    assert _mode(path) == "wal"


def test_a_cache_left_out_of_wal_mode_is_put_in_it_by_its_next_refresh(tmp_path: Path, cli: Cli) -> None:
    root = two_memories(tmp_path, cli)
    assert hits(cli, root, "deploy")[0] == ["Deploy plan"]
    path = cache_path(open_workspace(str(root)))
    db = sqlite3.connect(path)
    try:
        # As when another process held the file while the first fill ended: the mode stayed.
        assert db.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    finally:
        db.close()
    assert hits(cli, root, "backups")[0] == ["Backup policy"]
    assert _mode(path) == "wal"
