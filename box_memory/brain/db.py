"""The Box Brain store: one SQLite file (WAL, mode 0600) in the user data dir.

It holds document text, so it is private to the user: the file and its folder are created with
owner-only permissions. Tables: sources, items (one row per Box file per source), entries (the
stored entry text, one per item) with the `entries_fts` FTS5 index whose rowid is the item id,
runs, and review candidates. No network imports here: recall reads this store offline.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box_memory.brain.options import Settings
from box_memory.errors import InvalidFile, InvalidInput, NotFound
from box_memory.format.model import now_iso
from box_memory.format.safeio import check_regular, make_private
from box_memory.redaction import redact

SCHEMA_VERSION = 1
SQLITE_MAX_INT = 2**63 - 1  # the largest INTEGER (row id, LIMIT) SQLite takes; Python ints go past it
ITEM_STATUSES = ("indexed", "metadata_only", "skipped", "deleted")
CANDIDATE_STATUSES = ("proposed", "accepted", "rejected")
# The item fields compared for change detection (docs/spec/brain-sync.md, "One run" step 4).
SIGNATURE = ("etag", "version_id", "sha1", "name", "size", "path", "parent_id", "modified_at")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    workspace TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL,
    server TEXT NOT NULL,
    root TEXT NOT NULL,
    settings TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_run_at TEXT,
    last_run_status TEXT,
    last_run_id INTEGER,
    last_success_at TEXT,
    last_error TEXT,
    last_review_at TEXT
);
CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    box_id TEXT NOT NULL,
    name TEXT,
    path TEXT,
    parent_id TEXT,
    size INTEGER,
    etag TEXT,
    version_id TEXT,
    sha1 TEXT,
    modified_at TEXT,
    url TEXT,
    content_hash TEXT,
    text_source TEXT,
    chars INTEGER,
    status TEXT NOT NULL,
    reason TEXT,
    error TEXT,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    indexed_at TEXT,
    last_run_id INTEGER,
    UNIQUE (source_id, box_id)
);
CREATE INDEX IF NOT EXISTS items_status ON items (source_id, status);
CREATE TABLE IF NOT EXISTS entries (
    item_id INTEGER PRIMARY KEY REFERENCES items(id) ON DELETE CASCADE,
    source_id INTEGER NOT NULL,
    text TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(
    name, path, body, tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    complete INTEGER,
    counts TEXT,
    reasons TEXT,
    error TEXT,
    mcp_calls INTEGER,
    ai_calls INTEGER,
    duration_ms INTEGER,
    review TEXT,
    pid INTEGER
);
CREATE INDEX IF NOT EXISTS runs_source ON runs (source_id, id);
CREATE TABLE IF NOT EXISTS candidates (
    id INTEGER PRIMARY KEY,
    source_id INTEGER NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
    run_id INTEGER,
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    statement TEXT NOT NULL,
    rationale TEXT NOT NULL,
    evidence TEXT NOT NULL,
    confidence REAL NOT NULL,
    status TEXT NOT NULL DEFAULT 'proposed',
    box_id TEXT,
    version TEXT,
    url TEXT,
    memory_kind TEXT,
    supersedes TEXT,
    memory_id TEXT,
    fingerprint TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    decided_at TEXT
);
CREATE INDEX IF NOT EXISTS candidates_status ON candidates (status, id);
"""


@dataclass
class Source:
    id: int
    key: str
    workspace: str
    kind: str  # "box" | "local"
    server: str
    root: str
    settings: Settings
    created_at: str
    last_run_at: str | None = None
    last_run_status: str | None = None
    last_run_id: int | None = None
    last_success_at: str | None = None
    last_error: str | None = None
    last_review_at: str | None = None

    @property
    def label(self) -> str:
        return f"box:{self.root}" if self.kind == "box" else f"path:{self.root}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "kind": self.kind,
            "root": self.root,
            "server": redact(self.server),  # a password in the URL is never shown
            "workspace": self.workspace or None,
            "enabled": self.settings.enabled,
            "settings": self.settings.to_dict(),
            "created_at": self.created_at,
            "last_run_at": self.last_run_at,
            "last_run_status": self.last_run_status,
            "last_success_at": self.last_success_at,
            "last_error": self.last_error,
            "last_review_at": self.last_review_at,
        }


@dataclass
class ItemRow:
    """A stored item (what the previous runs learnt about one Box file)."""

    id: int
    box_id: str
    status: str
    has_entry: bool
    signature: dict[str, Any]
    reason: str | None = None
    content_hash: str | None = None
    url: str | None = None


@dataclass
class Change:
    """What a run does to one item; applied together in one transaction at the end of the run."""

    box_id: str
    action: str  # indexed | unchanged | skipped | failed
    meta: dict[str, Any] = field(default_factory=dict)  # signature fields + url
    status: str | None = None  # indexed | metadata_only | skipped (for new rows or replaced entries)
    entry_text: str | None = None
    body: str = ""
    reason: str | None = None
    error: str | None = None
    text_source: str | None = None
    content_hash: str | None = None


def default_path() -> Path:
    from box_memory.paths import user_dirs

    return user_dirs().brain_db


def _label(path: Path) -> str:
    return f"the Box Brain store {path}"


def _private_file(path: Path) -> None:
    """Create the database file (and its folder) readable by the owner only. Something that is
    not a regular file in its place (a FIFO, a link to a device) is refused, never opened by
    SQLite or chmod-ed."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if check_regular(path, _label(path), private=True):
        return
    with contextlib.suppress(FileExistsError):  # another process created it just now
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    check_regular(path, _label(path), private=True)


class BrainStore:
    """The SQLite store. One connection per object; not shared across threads."""

    def __init__(self, path: Path | None = None, *, create: bool = True) -> None:
        self.path = Path(path) if path is not None else default_path()
        if not create and not self.path.exists():
            raise NotFound(f"no Box Brain store at {self.path} (run `box-memory brain-sync` first)")
        if create:
            _private_file(self.path)
        else:
            check_regular(self.path, _label(self.path))
        try:
            self._open()
        except sqlite3.DatabaseError as e:
            with contextlib.suppress(sqlite3.Error, AttributeError):
                self.db.close()
            if isinstance(e, sqlite3.OperationalError) and "locked" in str(e).lower():
                raise
            raise InvalidFile(
                f"{_label(self.path)} is not a usable SQLite database ({e}); move it aside and "
                "run `box-memory brain-sync` again to rebuild it",
                code="brain_store_unusable",
            ) from None

    def _open(self) -> None:
        self.db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA busy_timeout = 30000")
        self.db.execute("PRAGMA foreign_keys = ON")
        mode = self.db.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:
            self.db.executescript(_SCHEMA)  # idempotent: IF NOT EXISTS everywhere
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        for suffix in ("-wal", "-shm"):
            make_private(Path(str(self.path) + suffix))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> BrainStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- sources ---------------------------------------------------------------------------

    @staticmethod
    def _source(row: sqlite3.Row) -> Source:
        return Source(
            id=row["id"],
            key=row["key"],
            workspace=row["workspace"],
            kind=row["kind"],
            server=row["server"],
            root=row["root"],
            settings=Settings.from_dict(json.loads(row["settings"] or "{}")),
            created_at=row["created_at"],
            last_run_at=row["last_run_at"],
            last_run_status=row["last_run_status"],
            last_run_id=row["last_run_id"],
            last_success_at=row["last_success_at"],
            last_error=row["last_error"],
            last_review_at=row["last_review_at"],
        )

    def source_by_key(self, key: str) -> Source | None:
        row = self.db.execute("SELECT * FROM sources WHERE key = ?", (key,)).fetchone()
        return self._source(row) if row else None

    def source_by_id(self, source_id: int) -> Source | None:
        row = self.db.execute("SELECT * FROM sources WHERE id = ?", (source_id,)).fetchone()
        return self._source(row) if row else None

    def ensure_source(
        self, *, key: str, workspace: str, kind: str, server: str, root: str, settings: Settings
    ) -> tuple[Source, bool]:
        """The source with that key, created with `settings` if new -> (source, created)."""
        with self.transaction() as db:
            row = db.execute("SELECT * FROM sources WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return self._source(row), False
            db.execute(
                "INSERT INTO sources (key, workspace, kind, server, root, settings, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, workspace, kind, server, root, json.dumps(settings.to_dict()), now_iso()),
            )
            row = db.execute("SELECT * FROM sources WHERE key = ?", (key,)).fetchone()
        return self._source(row), True

    def save_settings(self, source: Source, settings: Settings) -> Source:
        self.db.execute(
            "UPDATE sources SET settings = ? WHERE id = ?", (json.dumps(settings.to_dict()), source.id)
        )
        source.settings = settings
        return source

    def sources(self) -> list[Source]:
        return [self._source(r) for r in self.db.execute("SELECT * FROM sources ORDER BY id")]

    def find_source(self, ref: str) -> Source:
        """A source by id (`3`), label (`box:123`, `path:/dir`), Box folder id or folder path."""
        ref = ref.strip()
        if not ref:
            raise InvalidInput("give a source: its id, box:<folder_id> or a folder path")
        candidates = self.sources()
        digits = ref.isascii() and ref.isdigit()  # int("²") raises: only ASCII digits are an id
        if digits:
            by_id = [s for s in candidates if str(s.id) == ref.lstrip("0")]
            if by_id:
                return by_id[0]
        matches = [s for s in candidates if ref in (s.label, s.key)]
        if not matches and ref.startswith("box:"):
            matches = [s for s in candidates if s.kind == "box" and s.root == ref[4:]]
        if not matches and digits:
            matches = [s for s in candidates if s.kind == "box" and s.root == ref]
        if not matches:
            path = ref[5:] if ref.startswith("path:") else ref
            resolved = str(Path(path).expanduser().resolve())
            matches = [s for s in candidates if s.kind == "local" and s.root == resolved]
        if not matches:
            raise NotFound(f"no Box Brain source {ref!r} (see `box-memory brain status`)")
        if len(matches) > 1:
            which = "; ".join(
                f"{s.id}: {s.label} on {s.server}" + (f" for workspace {s.workspace}" if s.workspace else "")
                for s in matches
            )
            raise InvalidInput(f"{ref!r} names several sources ({which}); give the source id")
        return matches[0]

    def purge_source(self, source: Source) -> dict[str, int]:
        """Forget a source entirely: items, entries, runs, candidates (Box is never touched)."""
        with self.transaction() as db:
            counts = {
                "items": db.execute(
                    "SELECT COUNT(*) FROM items WHERE source_id = ?", (source.id,)
                ).fetchone()[0],
                "entries": db.execute(
                    "SELECT COUNT(*) FROM entries WHERE source_id = ?", (source.id,)
                ).fetchone()[0],
                "runs": db.execute("SELECT COUNT(*) FROM runs WHERE source_id = ?", (source.id,)).fetchone()[
                    0
                ],
                "candidates": db.execute(
                    "SELECT COUNT(*) FROM candidates WHERE source_id = ?", (source.id,)
                ).fetchone()[0],
            }
            db.execute(
                "DELETE FROM entries_fts WHERE rowid IN (SELECT id FROM items WHERE source_id = ?)",
                (source.id,),
            )
            db.execute("DELETE FROM entries WHERE source_id = ?", (source.id,))
            db.execute("DELETE FROM items WHERE source_id = ?", (source.id,))
            db.execute("DELETE FROM runs WHERE source_id = ?", (source.id,))
            db.execute("DELETE FROM candidates WHERE source_id = ?", (source.id,))
            db.execute("DELETE FROM sources WHERE id = ?", (source.id,))
        return counts

    # -- items -----------------------------------------------------------------------------

    def items(self, source_id: int) -> dict[str, ItemRow]:
        """Every stored item of a source by Box id (deleted ones included)."""
        rows = self.db.execute(
            "SELECT i.*, e.item_id IS NOT NULL AS has_entry FROM items i "
            "LEFT JOIN entries e ON e.item_id = i.id WHERE i.source_id = ?",
            (source_id,),
        )
        out: dict[str, ItemRow] = {}
        for r in rows:
            out[r["box_id"]] = ItemRow(
                id=r["id"],
                box_id=r["box_id"],
                status=r["status"],
                has_entry=bool(r["has_entry"]),
                signature={k: r[k] for k in SIGNATURE},
                reason=r["reason"],
                content_hash=r["content_hash"],
                url=r["url"],
            )
        return out

    _LISTABLE = frozenset({"items", "runs", "candidates"})
    _FILTERS = frozenset({"source_id", "status"})

    def _select(self, table: str, order: str, limit: int, **equal: Any) -> list[sqlite3.Row]:
        """`SELECT *` from one of our tables, `column = value` for each filter given (None = any).

        Table, order and column names are ours, never user text; values are parameters.
        """
        assert table in self._LISTABLE and set(equal) <= self._FILTERS
        given = {k: v for k, v in equal.items() if v is not None}
        where = " WHERE " + " AND ".join(f"{k} = ?" for k in given) if given else ""
        sql = f"SELECT * FROM {table}{where} ORDER BY {order} LIMIT ?"  # noqa: S608
        return list(self.db.execute(sql, [*given.values(), min(limit, SQLITE_MAX_INT)]))

    def item_rows(
        self, *, source_id: int | None = None, status: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        rows = self._select("items", "source_id, path, box_id", limit, source_id=source_id, status=status)
        return [dict(r) for r in rows]

    def item_counts(self, source_id: int) -> dict[str, int]:
        rows = self.db.execute(
            "SELECT status, COUNT(*) FROM items WHERE source_id = ? GROUP BY status", (source_id,)
        )
        counts = dict.fromkeys(ITEM_STATUSES, 0)
        counts.update({r[0]: r[1] for r in rows})
        counts["entries"] = self.db.execute(
            "SELECT COUNT(*) FROM entries WHERE source_id = ?", (source_id,)
        ).fetchone()[0]
        return counts

    def entry(self, source_id: int, box_id: str) -> dict[str, Any] | None:
        row = self.db.execute(
            "SELECT i.box_id, i.name, i.path, i.url, i.status, e.text, e.body FROM items i "
            "JOIN entries e ON e.item_id = i.id WHERE i.source_id = ? AND i.box_id = ?",
            (source_id, box_id),
        ).fetchone()
        return dict(row) if row else None

    def item_texts(self, source_id: int, box_ids: Iterable[str]) -> dict[str, str]:
        """Document text (entry body) of the given items (for the review pass)."""
        out: dict[str, str] = {}
        for box_id in box_ids:
            row = self.db.execute(
                "SELECT e.body FROM items i JOIN entries e ON e.item_id = i.id "
                "WHERE i.source_id = ? AND i.box_id = ?",
                (source_id, box_id),
            ).fetchone()
            if row:
                out[box_id] = row[0]
        return out

    # -- runs ------------------------------------------------------------------------------

    def begin_run(self, source: Source, started_at: str) -> int:
        """A new `running` row; the caller holds the source lock, so any other `running` row of
        this source belongs to a process that ended mid-run: it is closed as failed."""
        self.db.execute(
            "UPDATE runs SET status = 'failed', finished_at = ?, "
            "error = 'interrupted: the process ended before the run finished' "
            "WHERE source_id = ? AND status = 'running'",
            (started_at, source.id),
        )
        cur = self.db.execute(
            "INSERT INTO runs (source_id, started_at, status, pid) VALUES (?, ?, 'running', ?)",
            (source.id, started_at, os.getpid()),
        )
        run_id = int(cur.lastrowid or 0)
        self.db.execute(
            "UPDATE sources SET last_run_at = ?, last_run_id = ? WHERE id = ?",
            (started_at, run_id, source.id),
        )
        return run_id

    def apply_run(
        self,
        source: Source,
        run_id: int,
        changes: list[Change],
        *,
        delete_missing: bool,
        seen: set[str],
        now: str,
    ) -> list[str]:
        """Apply every item change of a run in one transaction -> Box ids marked deleted."""
        deleted: list[str] = []
        with self.transaction() as db:
            unchanged = [(now, run_id, source.id, c.box_id) for c in changes if c.action == "unchanged"]
            db.executemany(
                "UPDATE items SET last_seen = ?, last_run_id = ?, error = NULL "
                "WHERE source_id = ? AND box_id = ?",
                unchanged,
            )
            for c in changes:
                if c.action != "unchanged":
                    self._apply_change(db, source.id, run_id, c, now)
            if delete_missing:
                rows = db.execute(
                    "SELECT id, box_id FROM items WHERE source_id = ? AND status != 'deleted'", (source.id,)
                ).fetchall()
                gone = [(r["id"], r["box_id"]) for r in rows if r["box_id"] not in seen]
                for item_id, box_id in gone:
                    db.execute("DELETE FROM entries_fts WHERE rowid = ?", (item_id,))
                    db.execute("DELETE FROM entries WHERE item_id = ?", (item_id,))
                    db.execute(
                        "UPDATE items SET status = 'deleted', error = NULL, last_run_id = ?, "
                        "reason = 'not in Box any more (complete crawl)' WHERE id = ?",
                        (run_id, item_id),
                    )
                    deleted.append(box_id)
        return deleted

    def _apply_change(self, db: sqlite3.Connection, source_id: int, run_id: int, c: Change, now: str) -> None:
        row = db.execute(
            "SELECT id FROM items WHERE source_id = ? AND box_id = ?", (source_id, c.box_id)
        ).fetchone()
        if c.action in ("failed", "skipped") and row is not None:
            # Keep what was imported before (and its metadata, so the next run tries again).
            db.execute(
                "UPDATE items SET error = ?, last_seen = ?, last_run_id = ? WHERE id = ?",
                (c.error or c.reason, now, run_id, row["id"]),
            )
            return
        meta = {k: c.meta.get(k) for k in SIGNATURE}
        values = {
            **meta,
            "url": c.meta.get("url"),
            "status": c.status or "skipped",
            "reason": c.reason,
            "error": c.error,
            "last_seen": now,
            "last_run_id": run_id,
        }
        if c.action == "indexed":
            values.update(
                content_hash=c.content_hash,
                text_source=c.text_source,
                chars=len(c.body),
                indexed_at=now,
            )
        if row is None:
            values.update(source_id=source_id, box_id=c.box_id, first_seen=now)
            cols = ", ".join(values)
            marks = ", ".join("?" for _ in values)
            cur = db.execute(f"INSERT INTO items ({cols}) VALUES ({marks})", list(values.values()))  # noqa: S608
            item_id = int(cur.lastrowid or 0)
        else:
            item_id = row["id"]
            sets = ", ".join(f"{k} = ?" for k in values)
            db.execute(f"UPDATE items SET {sets} WHERE id = ?", [*values.values(), item_id])  # noqa: S608
        if c.action == "indexed" and c.entry_text is not None:
            db.execute("DELETE FROM entries_fts WHERE rowid = ?", (item_id,))
            db.execute(
                "INSERT OR REPLACE INTO entries (item_id, source_id, text, body) VALUES (?, ?, ?, ?)",
                (item_id, source_id, c.entry_text, c.body),
            )
            db.execute(
                "INSERT INTO entries_fts (rowid, name, path, body) VALUES (?, ?, ?, ?)",
                (item_id, meta.get("name") or "", meta.get("path") or "", c.body),
            )

    def finish_run(
        self,
        source: Source,
        run_id: int,
        *,
        status: str,
        finished_at: str,
        complete: bool | None,
        counts: dict[str, int],
        reasons: list[str],
        error: str | None,
        mcp_calls: int,
        ai_calls: int,
        duration_ms: int,
        review: dict[str, Any] | None,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE runs SET finished_at = ?, status = ?, complete = ?, counts = ?, reasons = ?, "
                "error = ?, mcp_calls = ?, ai_calls = ?, duration_ms = ?, review = ? WHERE id = ?",
                (
                    finished_at,
                    status,
                    None if complete is None else int(complete),
                    json.dumps(counts),
                    json.dumps(reasons),
                    error,
                    mcp_calls,
                    ai_calls,
                    duration_ms,
                    json.dumps(review) if review is not None else None,
                    run_id,
                ),
            )
            db.execute(
                "UPDATE sources SET last_run_status = ?, last_error = ? WHERE id = ?",
                (status, error, source.id),
            )
            if status in ("completed", "partial"):
                db.execute("UPDATE sources SET last_success_at = ? WHERE id = ?", (finished_at, source.id))
            if review is not None and review.get("status") in ("done", "failed"):
                db.execute("UPDATE sources SET last_review_at = ? WHERE id = ?", (finished_at, source.id))
        source.last_run_status, source.last_error = status, error

    def runs(self, *, source_id: int | None = None, limit: int = 20) -> list[dict[str, Any]]:
        out = []
        for r in self._select("runs", "id DESC", limit, source_id=source_id):
            row = dict(r)
            for key in ("counts", "reasons", "review"):
                row[key] = json.loads(row[key]) if row[key] else ({} if key != "reasons" else [])
            row["complete"] = None if row["complete"] is None else bool(row["complete"])
            out.append(row)
        return out

    # -- review candidates -----------------------------------------------------------------

    def add_candidate(self, source_id: int, run_id: int, cand: dict[str, Any]) -> int | None:
        """Insert a candidate unless the same one was proposed before -> its id, or None."""
        cur = self.db.execute(
            "INSERT OR IGNORE INTO candidates (source_id, run_id, kind, title, statement, rationale, "
            "evidence, confidence, box_id, version, url, memory_kind, supersedes, fingerprint, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                source_id,
                run_id,
                cand["kind"],
                cand["title"],
                cand["statement"],
                cand["rationale"],
                json.dumps(cand["evidence"]),
                float(cand["confidence"]),
                cand.get("box_id"),
                cand.get("version"),
                cand.get("url"),
                cand.get("memory_kind"),
                cand.get("supersedes"),
                cand["fingerprint"],
                now_iso(),
            ),
        )
        return int(cur.lastrowid) if cur.rowcount and cur.lastrowid is not None else None

    @staticmethod
    def _candidate(row: sqlite3.Row) -> dict[str, Any]:
        out = dict(row)
        out["evidence"] = json.loads(out["evidence"] or "[]")
        return out

    def candidates(
        self, *, status: str | None = "proposed", source_id: int | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        rows = self._select("candidates", "id", limit, status=status, source_id=source_id)
        return [self._candidate(r) for r in rows]

    def candidate(self, cand_id: int) -> dict[str, Any]:
        if not 0 <= cand_id <= SQLITE_MAX_INT:  # no such row; SQLite would raise OverflowError
            raise NotFound(f"no review candidate {cand_id} (see `box-memory brain review`)")
        row = self.db.execute("SELECT * FROM candidates WHERE id = ?", (cand_id,)).fetchone()
        if row is None:
            raise NotFound(f"no review candidate {cand_id} (see `box-memory brain review`)")
        return self._candidate(row)

    def update_candidate(self, cand_id: int, *, title: str, statement: str) -> None:
        self.db.execute(
            "UPDATE candidates SET title = ?, statement = ? WHERE id = ? AND status = 'proposed'",
            (title, statement, cand_id),
        )

    def decide(self, cand_id: int, status: str, memory_id: str | None = None) -> None:
        self.db.execute(
            "UPDATE candidates SET status = ?, memory_id = ?, decided_at = ? WHERE id = ?",
            (status, memory_id, now_iso(), cand_id),
        )

    def accepted_memory_for(self, kind: str, box_id: str | None, source_id: int) -> str | None:
        """The memory written for the latest accepted candidate of this kind about this file."""
        row = self.db.execute(
            "SELECT memory_id FROM candidates WHERE status = 'accepted' AND kind = ? AND box_id IS ? "
            "AND source_id = ? AND memory_id IS NOT NULL ORDER BY decided_at DESC, id DESC LIMIT 1",
            (kind, box_id, source_id),
        ).fetchone()
        return row[0] if row else None
