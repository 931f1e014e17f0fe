"""A cold build into an empty cache is a bulk build (`cache_db.begin_bulk`): the secondary indexes
are made once at the end and postings and tags go in sorted from SQL. It must give exactly the
cache a row-by-row build gives: every table's rows, the full-text matches, the same indexes, and
the same recall answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from box_memory.recall import cache_db
from box_memory.recall.cache_refresh import RecallCache
from box_memory.workspace.resolve import open_workspace
from tests.conftest import Cli
from tests.recall.helpers import drop_caches, put, reindex

TABLES = {
    "entries": "SELECT * FROM entries ORDER BY rid",
    "src": "SELECT rid, entry_sig, file_sig, body_sig, drift, pending, sha1 FROM src ORDER BY rid",
    "postings": "SELECT * FROM postings ORDER BY word, rid",
    "tags": "SELECT * FROM tags ORDER BY tag, rid",
    "vocab": "SELECT * FROM vocab ORDER BY word",
    "indexes": "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name",
    "fts": "SELECT rowid FROM fts WHERE fts MATCH 'rotation OR quota OR kafka' ORDER BY rowid",
}


@pytest.fixture
def root(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    words = ["kafka", "quota", "rotation", "Auth Token", "GDPR", "Déjà vu"]
    for n in range(40):
        put(
            root,
            f"{words[n % 6]} note {n}",
            f"Body {n} about {words[(n + 1) % 6]} and {words[(n + 3) % 6]}.",
            n=n + 1,
            tags=[words[n % 6], f"t{n % 4}", words[n % 6].upper()],
            status="superseded" if n % 9 == 0 else "active",
            updated=f"2026-0{1 + n % 9}-{1 + n % 27:02d}T10:{n:02d}:00.000Z",
            kind=("decision", "note", "task")[n % 3],
        )
    reindex(root)
    return root


def _build(
    root: Path, db: Path, bulk_min: int, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], bool]:
    monkeypatch.setattr(cache_db, "BULK_MIN", bulk_min)
    cache = RecallCache(open_workspace(str(root)), str(db))
    cache.open()
    try:
        cache.refresh()
        bulk = cache.stats.bulk
    finally:
        cache.close()
    conn = sqlite3.connect(db)
    try:
        return {name: conn.execute(q).fetchall() for name, q in TABLES.items()}, bulk
    finally:
        conn.close()


def test_a_bulk_cold_build_gives_the_cache_a_row_by_row_build_gives(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, slow = _build(root, tmp_path / "rows.sqlite3", 10**9, monkeypatch)
    bulk_rows, fast = _build(root, tmp_path / "bulk.sqlite3", 1, monkeypatch)
    assert (slow, fast) == (False, True)
    assert len(rows["entries"]) == 40 and rows["postings"] and rows["tags"] and rows["fts"]
    assert len(rows["indexes"]) == len(cache_db._INDEXES)
    for name in TABLES:
        assert bulk_rows[name] == rows[name], name


def test_a_cold_recall_answers_the_same_from_a_bulk_build(
    root: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def answers() -> list[Any]:
        out = []
        for q in ("kafka", "auth token", "GDPR quota", "#t2", "deja vu"):
            env = cli.json("recall", q, "-w", str(root), "--limit", "50")
            out.append([(h["id"], h["title"]) for h in env["data"]["hits"]])
        return out

    monkeypatch.setattr(cache_db, "BULK_MIN", 10**9)
    first = cli.json("recall", "kafka", "-w", str(root), "--verbose")["data"]["cache"]
    before = answers()
    drop_caches()
    monkeypatch.setattr(cache_db, "BULK_MIN", 1)
    cold = cli.json("recall", "kafka", "-w", str(root), "--verbose")["data"]["cache"]
    assert (first["rebuilt"], first["bulk"], cold["rebuilt"], cold["bulk"]) == (True, False, True, True)
    assert answers() == before
    assert all(before)
