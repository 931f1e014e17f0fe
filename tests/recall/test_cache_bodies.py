"""The recall cache keeps no copy of the memory bodies: its full-text index is contentless, excerpts
are read back from the memory files, and the index rows of replaced or removed entries are left
dead (never matched, never reused) until the cache rebuilds itself from the files."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from box_memory.paths import user_dirs
from box_memory.recall import cache_refresh
from box_memory.store.local import LocalStore
from tests.recall.helpers import ids, mem_id, put, reindex

SENTENCE = "The quokka ledger reconciles every Tuesday at dawn"


def _cache_db() -> Path:
    (db,) = sorted(user_dirs().recall_cache_dir.glob("*.sqlite3"))
    return db


def _cache_bytes(db: Path) -> bytes:
    """The database and its write-ahead log, as on disk."""
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _meta(db: Path, key: str) -> int:
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
        return 0 if row is None else int(row[0])
    finally:
        con.close()


def _fts_rows(db: Path) -> int:
    con = sqlite3.connect(db)
    try:
        return int(con.execute("SELECT count(*) FROM fts_docsize").fetchone()[0])
    finally:
        con.close()


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    tmp = path.with_name(".replacement")
    tmp.write_text(text.replace(old, new))
    os.replace(tmp, path)


def test_the_cache_holds_no_memory_body_and_excerpts_come_from_the_file(ws: Path, cli) -> None:
    mid = cli.json("write", f"{SENTENCE}, says finance.", "--title", "Ledger", "-w", str(ws))["data"]["id"]
    env = cli.json("recall", "quokka", "-w", str(ws))
    assert ids(env) == [mid]
    assert SENTENCE in env["data"]["hits"][0]["excerpt"]  # read back from the memory file
    db = _cache_db()
    data = _cache_bytes(db)
    assert SENTENCE.encode() not in data and b"reconciles every Tuesday" not in data
    # The words are indexed all the same: each one finds the memory.
    for word in ("ledger", "reconciles", "tuesday", "dawn"):
        assert ids(cli.json("recall", word, "-w", str(ws))) == [mid], word


def test_a_replaced_body_leaves_a_dead_row_that_never_matches(ws: Path, cli) -> None:
    put(ws, "Billing schedule", "Invoices go out nightly from the walrus job.", n=1)
    put(ws, "Gateway", "Retries twice with jitter.", n=2)
    reindex(ws)
    assert ids(cli.json("recall", "walrus", "-w", str(ws))) == [mem_id(1)]
    db = _cache_db()
    assert _meta(db, "dead") == 0 and _fts_rows(db) == 2
    (path,) = (ws / "memories").glob("*billing-schedule*.md")
    _edit(path, "walrus", "narwhal")
    env = cli.json("recall", "narwhal", "-w", str(ws))
    assert ids(env) == [mem_id(1)] and "narwhal" in env["data"]["hits"][0]["excerpt"]
    # The old text's row is still in the index, dead: the old word finds nothing.
    assert ids(cli.json("recall", "walrus", "-w", str(ws))) == []
    assert _meta(db, "dead") == 1 and _fts_rows(db) == 3
    # A new memory gets a rid of its own (a dead one is never given again): both are found.
    put(ws, "Walrus facts", "The walrus queue is new.", n=3)
    reindex(ws)
    assert ids(cli.json("recall", "walrus", "-w", str(ws))) == [mem_id(3)]
    assert ids(cli.json("recall", "narwhal", "-w", str(ws))) == [mem_id(1)]


def test_dead_rows_past_the_threshold_rebuild_the_cache(
    ws: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_refresh, "COMPACT_MIN", 3)
    for n in range(1, 9):
        put(ws, f"Runbook {n}", f"Step {n}: restart the heron service.", n=n)
    reindex(ws)
    queries = [["heron"], ["restart", "--limit", "50"], ["word0"], ["word1"]]
    cli.json("recall", "heron", "-w", str(ws))
    db = _cache_db()
    paths = sorted((ws / "memories").glob("*runbook*.md"))
    for i, path in enumerate(paths[:3]):  # 3 dead rows: not past COMPACT_MIN yet
        _edit(path, "heron", f"word{i}")
        env = cli.json("recall", "heron", "-w", str(ws))
        assert env["data"]["cache"]["compacted"] is False
    assert _meta(db, "dead") == 3 and _fts_rows(db) == 11
    before = [cli.json("recall", *q, "-w", str(ws))["data"]["hits"] for q in queries]
    _edit(paths[3], "heron", "word1")  # the 4th dead row: more than 3 and more than 8 // 4
    env = cli.json("recall", "heron", "-w", str(ws))  # re-reads the edited file: 4 dead now
    assert env["data"]["cache"]["compacted"] is False and _meta(db, "dead") == 4
    env = cli.json("recall", "heron", "-w", str(ws))  # the next refresh starts over
    assert env["data"]["cache"]["compacted"] is True and env["data"]["cache"]["reread_files"] == 8
    assert _meta(db, "dead") == 0 and _fts_rows(db) == 8
    assert ids(env) == [mem_id(n) for n in range(8, 4, -1)]
    after = [cli.json("recall", *q, "-w", str(ws))["data"]["hits"] for q in queries]
    assert [h["id"] for h in after[3]] == [mem_id(4), mem_id(2)]  # word1: now in two memories
    assert [h["id"] for h in before[3]] == [mem_id(2)]
    # And the rebuilt cache answers exactly as one built from nothing.
    db.unlink()
    assert [cli.json("recall", *q, "-w", str(ws))["data"]["hits"] for q in queries] == after


def test_a_write_through_the_cache_leaves_the_superseded_row_dead(ws: Path, cli) -> None:
    first = cli.json("write", "Deploys go out on Fridays via the osprey pipeline.", "--title", "Deploys",
                     "-w", str(ws))["data"]["id"]  # fmt: skip
    cli.json("recall", "osprey", "-w", str(ws))
    new = cli.json("write", "Deploys go out daily now.", "--title", "Deploys", "--supersedes", first,
                   "-w", str(ws))["data"]["id"]  # fmt: skip
    env = cli.json("recall", "deploys", "-w", str(ws))
    assert ids(env)[:1] == [new] and env["data"]["cache"]["reread_files"] == 0
    assert _meta(_cache_db(), "dead") >= 1  # the old memory's entry changed (now superseded)
    old = cli.json("recall", "osprey", "--include-superseded", "-w", str(ws))
    assert ids(old) == [first] and "osprey" in old["data"]["hits"][0]["excerpt"]


def test_reading_for_an_excerpt_never_fails(tmp_path: Path) -> None:
    """`read_if_local`: the bytes of a regular file, None for anything else (no error, no wait)."""
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "a.md").write_bytes(b"---\ntitle: a\n---\nbody\n")
    os.mkfifo(tmp_path / "memories" / "fifo.md")
    (tmp_path / "memories" / "dir.md").mkdir()
    store = LocalStore(tmp_path)
    assert store.read_if_local("memories/a.md") == b"---\ntitle: a\n---\nbody\n"
    for path in ("memories/missing.md", "memories/fifo.md", "memories/dir.md", "../outside.md"):
        assert store.read_if_local(path) is None, path
