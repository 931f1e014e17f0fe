"""The recall cache's database: its schema, opening it, rids, and the rows one memory file gives.

A derived SQLite (FTS5) copy of a workspace's indexes and memory bodies, never the source of
truth: one database per workspace under `user_dirs().recall_cache_dir`, keyed by the workspace
root. `cache_refresh.RecallCache` keeps it fresh; `cache.with_cache` opens it for a call.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
import time
import zlib
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from box_memory.errors import BoxMemoryError, ContentUnverified, InvalidFile, NotFound, Unreadable
from box_memory.format.model import HIDDEN_STATUSES, parse_time
from box_memory.format.safeio import OutsideWorkspace, ReadFailed, make_private, not_local_stat
from box_memory.store.base import as_batch_reads
from box_memory.workspace.resolve import Workspace

if TYPE_CHECKING:
    from box_memory.recall.watch import FolderWatch


SCHEMA_VERSION = "13"
# A file stat taken less than this after the file's last change may not show a change made in the
# same clock tick (coarse kernel clocks; 1-2 s on FAT, SMB and some sync clients): kept as racy.
RACY_NS = 2_000_000_000
# The full-text index keeps no copy of the bodies (FTS5 `content=''`; excerpts are read from the
# memory files): the bodies were 43% of a 100k cache. On SQLite before 3.43 a row of such a table
# can only be deleted by handing back its original text, so a replaced or removed entry's rid goes
# to `dead` instead and its postings stay in the index; queries never see them (every match is
# joined to a live entry by rid, and rids are never reused). Once the dead outnumber a quarter of
# the live entries (and `cache_refresh.COMPACT_MIN`), the next refresh rebuilds the cache from the
# files.
#
# An entry's rid (and FTS rowid) orders it by updated time: the rid's high bits are a time
# bucket of BUCKET_S seconds at or after the entry's, the low RID_SHIFT bits a sequence number
# (insertion order within the bucket). Recall reads the newest entries first through rowid ranges
# (`uts_below`). Small buckets and sequences keep rids, and so the FTS doclists' rowid deltas,
# short; a full bucket spills to the end, which only loosens `uts_below`, never breaks it.
RID_SHIFT = 6
BUCKET_S = 1024
MAX_BUCKET = (1 << (63 - RID_SHIFT)) - 2  # rids stay within SQLite's 64-bit integers
#
# An entry's body may be pending (`src.pending`): the entry is indexed from its `_index.json` entry
# alone - every route and filter, and the title/slug/tag postings, work from that - and its text is
# not read, because it is not on this machine: NOT_FETCHED, a Box file the content cache does not
# hold (a build with more than `cache_refresh.EAGER_READS` of those reads none), or ONLINE_ONLY, a
# Box Drive placeholder (reading it would download it). A pending body has no full-text row; one
# read later (a Box search hit: `hold`) gets it then and is held from then on. `src.sha1` is the
# Box sha1 of a body read on Box, so an excerpt can come from the content cache without a listing.
HELD, NOT_FETCHED, ONLINE_ONLY = 0, 1, 2


_SCHEMA = """
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
CREATE TABLE folders(folder TEXT PRIMARY KEY, index_sig TEXT, dir_sig TEXT, warnings TEXT NOT NULL,
  files_sig TEXT) WITHOUT ROWID;
CREATE TABLE entries(
  rid INTEGER PRIMARY KEY,
  folder TEXT NOT NULL, id TEXT NOT NULL, path TEXT NOT NULL, file_id TEXT,
  title TEXT NOT NULL, title_cf TEXT NOT NULL, slug TEXT NOT NULL, kind TEXT, status TEXT,
  team TEXT, tags TEXT NOT NULL, updated_at TEXT, updated_ts REAL, expires_ts REAL,
  superseded_by TEXT, hidden INTEGER NOT NULL,
  slug_cf TEXT NOT NULL, tags_cf TEXT NOT NULL);
CREATE UNIQUE INDEX entries_key ON entries(folder, id);
CREATE INDEX entries_id ON entries(id);
CREATE INDEX entries_slug_cf ON entries(slug_cf);
CREATE INDEX entries_listing ON entries(updated_ts, hidden, expires_ts, kind, status, team);
CREATE INDEX entries_title ON entries(title_cf);
CREATE INDEX entries_file ON entries(file_id) WHERE file_id IS NOT NULL;
CREATE INDEX entries_superseded ON entries(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE src(rid INTEGER PRIMARY KEY, entry_sig BLOB NOT NULL, file_sig TEXT, stat_sig TEXT,
  body_sig BLOB, drift INTEGER NOT NULL DEFAULT 0, pending INTEGER NOT NULL DEFAULT 0, sha1 TEXT);
CREATE INDEX src_drift ON src(rid) WHERE drift = 1;
CREATE INDEX src_pending ON src(rid) WHERE pending > 0;
CREATE TABLE tags(tag TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(tag, rid)) WITHOUT ROWID;
CREATE VIRTUAL TABLE fts USING fts5(body, content='', tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE dead(rid INTEGER PRIMARY KEY);
CREATE TABLE postings(
  word TEXT NOT NULL, rid INTEGER NOT NULL, field INTEGER NOT NULL, uts REAL, hidden INTEGER NOT NULL,
  expires_ts REAL, PRIMARY KEY(word, rid)) WITHOUT ROWID;
CREATE TABLE vocab(word TEXT PRIMARY KEY) WITHOUT ROWID;
"""

# A cold build into an empty cache (at least BULK_MIN memories) makes the secondary indexes once at
# the end instead of keeping them up to date row by row, and gathers the postings and tags (whose
# primary keys order them by word and tag, not by rid) in temporary tables first, so each goes
# into its B-tree in one sorted pass: `bulk`.
BULK_MIN = 1000
BULK_CACHE_KIB = -65536  # the page cache of a bulk build (negative: KiB, as PRAGMA cache_size takes)
_INDEXES = [
    s.strip() for s in _SCHEMA.split(";") if s.strip().startswith(("CREATE INDEX", "CREATE UNIQUE INDEX"))
]
_INDEX_NAMES = [s.split(" ON ", 1)[0].split()[-1] for s in _INDEXES]

ENTRY_FIELDS = [
    "rid", "id", "folder", "path", "title", "slug", "kind", "status", "team", "tags", "updated_at",
    "updated_ts", "expires_ts", "superseded_by", "hidden", "file_id"
]  # fmt: skip
ENTRY_COLS = ", ".join(f"e.{c}" for c in ENTRY_FIELDS)

WORD_RE = re.compile(r"\w+")
_words = WORD_RE.findall
_FM_CLOSE = re.compile(r"\n---[ \t]*(?:\r?\n|\Z)")  # matched where `str.find` saw "\n---"
_EXPIRES = re.compile(r"^expires_at:[ \t]*['\"]?([^'\"\r\n]+)", re.M)


def cache_path(ws: Workspace) -> str:
    """`<tail of the root's name>-<64-bit checksum of the root>.sqlite3`: readable, and distinct per
    workspace (the database also records its root and is rebuilt if another one opens it)."""
    from box_memory.paths import user_dirs

    root = ws.describe()
    raw = root.encode("utf-8", "surrogatepass")
    tail = re.sub(r"[^A-Za-z0-9]+", "-", root).strip("-")[-40:] or "workspace"
    # zlib is already loaded by the CLI; hashlib would add OpenSSL to every recall's start-up.
    return str(user_dirs().recall_cache_dir / f"{tail}-{zlib.crc32(raw):08x}{zlib.adler32(raw):08x}.sqlite3")


def split_body(raw: bytes) -> tuple[str, str]:
    """(frontmatter text, body) without a YAML parse: the index already carries the metadata."""
    text = raw.decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if text.startswith("---"):
        # The first "\n---" that ends its line closes the frontmatter (a "\r" before it is the
        # line end's): `str.find` to each candidate, the pattern only there. A regex search for
        # the whole `\r?\n---...` was ~5 us a file (0.5 s of a 100,000-memory build).
        at = text.find("\n---", 3)
        while at >= 0:
            m = _FM_CLOSE.match(text, at)
            if m:
                return text[3 : at - 1 if text[at - 1] == "\r" and at > 3 else at], text[m.end() :]
            at = text.find("\n---", at + 1)
    return "", text


def field_words(title_cf: str, slug_cf: str, tags_cf: str) -> dict[str, int]:
    """The words of an entry's folded title, slug and tags, each with the best field holding it
    (title 4, slug 3, tag 2): its postings. A query token is inside a field exactly when it is
    inside one of the field's words (tokens are \\w+ runs too), so scoring needs only these rows."""
    words = _words
    field: dict[str, int] = dict.fromkeys(words(tags_cf), 2) if tags_cf else {}
    for w in words(slug_cf):
        field[w] = 3
    for w in words(title_cf):
        field[w] = 4
    return field


def json_ints(values: Any) -> str:
    """Integers as a JSON array, for `json_each(?)`."""
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def folded(text: str) -> str:
    """Case-folded with whitespace runs collapsed: how titles, slugs and tags are compared."""
    return " ".join(text.split()).casefold()


def _ts(value: object) -> float | None:
    t = parse_time(value)
    return t.timestamp() if t is not None else None


def rid_bucket(uts: float | None) -> int:
    """The time bucket of an entry updated at `uts`: 0 when undated; otherwise one past
    `uts / BUCKET_S` rounded down, so `uts < bucket * BUCKET_S`."""
    if uts is None:
        return 0
    return min(max(math.floor(uts / BUCKET_S) + 1, 1), MAX_BUCKET)


def uts_below(lo: int) -> float | None:
    """An exclusive bound on the updated time of every entry whose rid is below `lo`: None when
    they can only be undated, infinity when no bound is known."""
    bucket = lo >> RID_SHIFT
    if bucket <= 0:
        return None
    return math.inf if bucket >= MAX_BUCKET else float(bucket * BUCKET_S)


def signature(ws: Workspace, path: str) -> str | None:
    """What changes whenever `path` is replaced or its directory entries change.

    On a local folder this is one `os.stat` (inode, size, mtime and ctime in ns: an atomic
    replace always gets a new inode, even within one clock tick); on Box the listing's size,
    modified time, id, etag and sha1 (`Store.signature`).
    """
    return ws.store.signature(path)


class Refresh:
    """What one freshness check did (for --verbose and the benchmark)."""

    def __init__(self, memory_only: bool) -> None:
        self.folders = 0
        self.reread_folders = 0
        self.reread_files = 0
        self.removed = 0
        self.rebuilt = False
        self.bulk = False  # filled in one pass with the indexes made at the end (`begin_bulk`)
        self.compacted = False  # rebuilt from the files to drop the index's dead rows
        self.memory_only = memory_only
        self.kept_open = False  # a long-lived process reused its open cache
        self.rechecked_files = 0  # memory files whose stat changed since they were read
        self.stat_folders = 0  # folders whose memory files were stat'ed (all, unless watched)
        self.named_files = 0  # memory files stat'ed because a watch named them (serve)
        self.steady = False  # no watched folder changed since a refresh found nothing to do
        self.ms = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "rebuilt": self.rebuilt,
            "bulk": self.bulk,
            "compacted": self.compacted,
            "memory_only": self.memory_only,
            "kept_open": self.kept_open,
            "folders": self.folders,
            "reread_folders": self.reread_folders,
            "reread_files": self.reread_files,
            "removed": self.removed,
            "rechecked_files": self.rechecked_files,
            "stat_folders": self.stat_folders,
            "named_files": self.named_files,
            "steady": self.steady,
            "refresh_ms": round(self.ms, 1),
        }


class CacheDB:
    """One open cache database for one workspace: its tables and the rows of each memory."""

    def __init__(self, ws: Workspace, path: str) -> None:
        self.ws = ws
        self.path = path
        self.db: sqlite3.Connection | None = None
        self.stats = Refresh(memory_only=path == ":memory:")
        self.warnings: list[str] = []  # the last refresh's stale-index warnings
        # (folder, message) of the memory files a refresh could not use: refused by the bounded
        # read (warned about), not read this time (read again next time), not readable by this
        # user (a team boundary; the message is the path)
        self.unreadable: list[tuple[str, str]] = []
        self._unread: list[tuple[str, str]] = []
        self._denied: list[tuple[str, str]] = []
        self._dead_changed = False  # rids went to `dead` in this transaction (meta count to update)
        self._outside: set[tuple[str, str]] = set()  # (folder, id): read again as changed in place
        self._just_read: set[int] = set()  # rids whose files this transaction read
        # Folders this refresh listed, read and recorded with the digest of that listing's stats
        # (`files_sig`): not stat'ed again at its end (`_check_files`)
        self._settled: set[str] = set()
        self._racy: set[str] = set()  # folders where a racy file stat was recorded
        self._pinned: dict[str, str] = {}  # Box folders read through their index: its file id
        self._defer: set[str] = set()  # paths whose bodies this refresh leaves pending (NOT_FETCHED)
        self._fetched: dict[str, bytes] = {}  # bodies this refresh fetched by Box file id, by path
        # A kept-open cache's inotify watch on the memory folders (`file_watch`): with it, only the
        # folders that had an event since the last call have their files stat'ed.
        self.watch: FolderWatch | None = None
        # With a watch: (shape, folders, warnings) of the last refresh that found the workspace as
        # the cache holds it, every folder watched; the next refresh with no event since is done.
        self._steady: tuple[Any, int, tuple[str, ...]] | None = None
        self._compared: set[str] = set()  # watched folders whose files were stat'ed since

    # --- opening ------------------------------------------------------------------------

    def open(self, busy_ms: int = 30_000) -> None:
        memory = self.path == ":memory:"
        if not memory:
            Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=busy_ms / 1000, isolation_level=None, check_same_thread=False)
        self.db = db
        db.execute("PRAGMA synchronous=NORMAL")  # derived data: a lost last refresh is redone
        if not memory:
            make_private(self.path)  # holds memory text: private like the brain store
        if not self._has_schema():
            # A new cache is made, and filled by its first refresh, through SQLite's rollback
            # journal, then put in WAL mode (`to_wal`): see `fills_unlogged`.
            db.execute("BEGIN IMMEDIATE")  # two first recalls at once: one creates, one waits
            try:
                if not self._has_schema():
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.executemany(
                        "INSERT INTO meta VALUES (?, ?)",
                        [("schema", SCHEMA_VERSION), ("root", self.ws.describe())],
                    )
                    self.stats.rebuilt = True
                db.execute("COMMIT")
            except BaseException:
                rollback(db)
                raise
            if self.stats.rebuilt and not memory:
                collect_garbage(keep=self.path)
        meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
        if meta.get("schema") != SCHEMA_VERSION or meta.get("root") != self.ws.describe():
            raise sqlite3.DatabaseError("recall cache belongs to another schema or workspace")
        self.fills_unlogged = not memory and db.execute("PRAGMA journal_mode").fetchone()[0] != "wal"

    # A cache's first fill writes nearly every page it will have. Through a write-ahead log each
    # page is written twice - into the log, then into the database at the checkpoint - where a
    # rollback journal keeps only the pages the file had before (a new file: its schema), so each
    # page is written once: 0.5 s of a 100,000-memory build's commit. After that fill, WAL, so a
    # recall never waits on a write's update of the cache. Readers of a cache still being filled
    # wait for it either way (their refresh needs its write lock).
    fills_unlogged = False

    def to_wal(self) -> None:
        """Put the cache in WAL mode once its first fill is in (best effort: while another process
        holds the file locked the mode stays, and its next open tries again)."""
        if not self.fills_unlogged:
            return
        with contextlib.suppress(sqlite3.OperationalError):
            if self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal":
                self.fills_unlogged = False

    def _has_schema(self) -> bool:
        q = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        return bool(self.conn.execute(q).fetchone()[0])

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()
            self.watch = None
        if self.db is not None:
            with contextlib.suppress(sqlite3.Error):
                self.db.close()
            self.db = None

    @property
    def conn(self) -> sqlite3.Connection:
        assert self.db is not None
        return self.db

    def _count_entries(self) -> None:
        """Record how many entries the cache holds (rids are times, not a count) and how many dead
        rows its index keeps, once per change."""
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('entries', (SELECT count(*) FROM entries))")
        if self._dead_changed:
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('dead', (SELECT count(*) FROM dead))")
            self._dead_changed = False

    def entry_count(self) -> int:
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'entries'").fetchone()
        if row is None:
            return int(self.conn.execute("SELECT count(*) FROM entries").fetchone()[0])
        return int(row[0])

    def _delete_rids(self, rids: list[int]) -> None:
        if not rids:
            return
        db = self.conn
        # An entry's postings and tags are found by their keys, made from its folded title, slug
        # and tags as `_insert` made them: no index by rid (at 100,000 memories those two were 15
        # MB of the cache and 0.5 s of its cold build) for what only a delete needs.
        words: list[tuple[str, int]] = []
        tags: list[tuple[str, int]] = []
        for rid, title_cf, slug_cf, tags_cf in db.execute(
            "SELECT rid, title_cf, slug_cf, tags_cf FROM entries "
            "WHERE rid IN (SELECT value FROM json_each(?))",
            (json_ints(rids),),
        ):
            words += [(w, rid) for w in field_words(title_cf, slug_cf, tags_cf)]
            tags += [(t, rid) for t in set(tags_cf.split("\n"))]
        db.executemany("DELETE FROM postings WHERE word = ? AND rid = ?", words)
        db.executemany("DELETE FROM tags WHERE tag = ? AND rid = ?", tags)
        for sql in (
            "DELETE FROM entries WHERE rid = ?",
            "DELETE FROM src WHERE rid = ?",
            "INSERT OR IGNORE INTO dead VALUES (?)",  # its FTS row stays: see `dead` above
        ):
            db.executemany(sql, ((r,) for r in rids))
        self._dead_changed = True

    def dead_count(self) -> int:
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'dead'").fetchone()
        return 0 if row is None else int(row[0])

    def _begin_rids(self) -> None:
        """Start a write transaction's rid bookkeeping: `_taken` holds the last rid given per
        bucket in it (key -1: the highest); a cache empty at the start needs no lookups."""
        self._taken: dict[int, int] = {}
        self._bulk: set[str] | None = None  # the vocabulary of a bulk build (`begin_bulk`)
        self._fresh = (
            self.conn.execute("SELECT 1 FROM entries UNION ALL SELECT 1 FROM dead LIMIT 1").fetchone() is None
        )

    def begin_bulk(self, count: int) -> bool:
        """Start a bulk build (see BULK_MIN) when this transaction fills an empty cache with
        `count` memories: drop the secondary indexes, gather postings and tags aside."""
        if not self._fresh or count < BULK_MIN:
            return False
        db = self.conn
        for name in _INDEX_NAMES:
            db.execute(f"DROP INDEX IF EXISTS {name}")
        # Per memory: its words with their fields, and its folded tags, as JSON (one row, not one
        # per word: binding rows from Python is the slow part).
        db.execute("CREATE TEMP TABLE bulk_words(rid INTEGER PRIMARY KEY, words TEXT, tags TEXT)")
        # The sorts of `end_bulk` and the index builds spill to temporary files past the page
        # cache (2 MiB by default): 64 MiB for this transaction, given back at its end.
        self._cache_size = int(db.execute("PRAGMA cache_size").fetchone()[0])
        db.execute(f"PRAGMA cache_size = {BULK_CACHE_KIB}")
        self._bulk = set()
        self.stats.bulk = True
        return True

    def end_bulk(self) -> None:
        """Put the gathered postings, tags and vocabulary in, sorted, and make the indexes again."""
        db, vocab = self.conn, self._bulk
        assert vocab is not None
        db.execute(
            "INSERT INTO postings SELECT w.key, b.rid, w.value, e.updated_ts, e.hidden, e.expires_ts "
            "FROM temp.bulk_words b JOIN entries e ON e.rid = b.rid, json_each(b.words) w ORDER BY 1, 2"
        )
        db.execute(
            "INSERT OR IGNORE INTO tags SELECT t.value, b.rid FROM temp.bulk_words b, json_each(b.tags) t "
            "ORDER BY 1, 2"
        )
        db.executemany("INSERT OR IGNORE INTO vocab VALUES (?)", ((w,) for w in sorted(vocab)))
        db.execute("DROP TABLE temp.bulk_words")
        for statement in _INDEXES:
            db.execute(statement)
        db.execute(f"PRAGMA cache_size = {int(self._cache_size)}")
        self._bulk = None

    def _new_rid(self, uts: float | None) -> int:
        """The next free rid in `uts`'s bucket, or past every rid above it when the bucket is full."""
        taken = self._taken
        bucket = rid_bucket(uts)
        base, size = bucket << RID_SHIFT, 1 << RID_SHIFT
        last = taken.get(bucket)
        if last is None and not self._fresh:
            # A dead rid is never given again: the index still holds its row (see `dead` above).
            last = self.conn.execute(
                "SELECT max(r) FROM (SELECT max(rid) AS r FROM entries WHERE rid BETWEEN :lo AND :hi "
                "UNION ALL SELECT max(rid) FROM dead WHERE rid BETWEEN :lo AND :hi)",
                {"lo": base, "hi": base + size - 1},
            ).fetchone()[0]
        rid = base if last is None else last + 1
        if rid >= base + size:
            top = None
            if not self._fresh:
                top = self.conn.execute(
                    "SELECT max(r) FROM (SELECT max(rid) AS r FROM entries WHERE rid >= :lo "
                    "UNION ALL SELECT max(rid) FROM dead WHERE rid >= :lo)",
                    {"lo": base},
                ).fetchone()[0]
            rid = max(top or 0, taken.get(-1, 0)) + 1
        taken[rid >> RID_SHIFT] = rid
        taken[-1] = max(taken.get(-1, 0), rid)
        return rid

    def _insert(self, items: list[tuple[str, str, Todo]]) -> None:
        """Read the memory files of `items` ((folder, team, entry) each) and add them to every
        table, a batch at a time."""
        entries, srcs, bodies, postings, tag_rows = [], [], [], [], []
        vocab: set[str] = set()
        staged: list[tuple[int, str, str]] = []  # a bulk build's words and tags per rid
        bulk = self._bulk
        root = self.ws.store.local_root
        # Many files (a cold build): read together where that is plain (`LocalStore.read_files`);
        # the rest, and a few files, one by one below.
        many = as_batch_reads(self.ws.store) if len(items) > 1 else None
        batch = many.read_files([i[2][2] for i in items]) if many is not None else {}
        for folder, team, (indexed, mid, path, sig, file_sig) in items:
            e = indexed
            unread = len(self._unread)
            stat_sig = None
            pending = HELD
            raw: bytes | None = None
            done = batch.get(path)
            if root is not None:  # taken before the read: a change after it shows next time
                with contextlib.suppress(OSError):
                    st = done[0] if done is not None else os.stat(os.path.join(root, path))  # noqa: PTH116, PTH118
                    stat_sig = recorded_stat(st)
                    if stat_sig.startswith("?"):
                        self._racy.add(folder)
                    if not_local_stat(st):
                        pending = ONLINE_ONLY  # a Box Drive placeholder: never downloaded for recall
            elif path in self._defer:
                pending = NOT_FETCHED
            if done is not None and not pending:
                raw = done[1]
            elif not pending:
                try:
                    got = self._fetched.get(path)
                    raw = got if got is not None else self._read_raw(path, folder)
                except ContentUnverified as err:
                    self._unread.append((folder, f"{err} (recall skipped this memory)"))
                    continue
                except Unreadable:
                    self._denied.append((folder, path))
                    continue
            front, body = split_body(raw) if raw is not None else ("", "")
            read = len(self._unread) == unread
            drift = 0
            if (folder, mid) in self._outside and raw is not None:
                fresh = as_indexed(e, path, raw)
                drift = int(fresh is None or differs(e, fresh, len(raw)))
                if fresh is not None:
                    e = {**e, **fresh}  # searched as the file is now
            expires = e.get("expires_at")
            if not expires and "expires_at" in front:
                m = _EXPIRES.search(front)
                expires = m.group(1).strip() if m else None
            raw_tags = e.get("tags") or []
            tags = [str(t) for t in (raw_tags if isinstance(raw_tags, list) else [raw_tags]) if t is not None]
            title = str(e.get("title") or "")
            slug = str(e.get("slug") or "")
            status = str(e.get("status") or "")
            folds = (folded(title), folded(slug), "\n".join(folded(t) for t in tags))
            uts, exp_ts, hidden = _ts(e.get("updated_at")), _ts(expires), int(status in HIDDEN_STATUSES)
            rid = self._new_rid(uts)
            entries.append(
                (
                    rid,
                    folder,
                    mid,
                    path,
                    str(e["file_id"]) if e.get("file_id") else None,
                    title,
                    folds[0],
                    slug,
                    str(e.get("kind") or ""),
                    status,
                    str(e.get("team") or team),
                    orjson.dumps(tags).decode(),
                    str(e.get("updated_at") or ""),
                    uts,
                    exp_ts,
                    str(e["superseded_by"]) if e.get("superseded_by") else None,
                    hidden,
                    folds[1],
                    folds[2],
                )
            )
            body_sig = body_digest(raw) if raw is not None else None
            sha1 = None
            if root is None and raw is not None:  # on Box: the version read, for excerpts
                from hashlib import sha1 as _sha1

                sha1 = _sha1(raw, usedforsecurity=False).hexdigest()
            srcs.append(
                (rid, sig if read else b"", file_sig, stat_sig, body_sig, drift, pending, sha1)
            )  # b"": read next time
            self._just_read.add(rid)
            if not pending:
                bodies.append((rid, body))
            field = field_words(*folds)
            vocab.update(field)
            tag_cf = folds[2].split("\n") if tags else []
            if bulk is not None:  # their rows are made in SQL at the end (`end_bulk`)
                staged.append((rid, orjson.dumps(field).decode(), orjson.dumps(tag_cf).decode()))
                continue
            postings += [(w, rid, f, uts, hidden, exp_ts) for w, f in field.items()]
            tag_rows += [(t, rid) for t in tag_cf]
        # Rows go in in key order: rids are times, not file order, and FTS5 flushes its pending
        # terms to a new segment whenever a rowid is not above the last one (once per batch now).
        for rows in (entries, srcs, bodies):
            rows.sort(key=itemgetter(0))
        postings.sort()
        db = self.conn
        db.executemany(
            "INSERT INTO entries(rid, folder, id, path, file_id, title, title_cf, slug, kind, status, team, "
            "tags, updated_at, updated_ts, expires_ts, superseded_by, hidden, slug_cf, tags_cf) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            entries,
        )
        db.executemany("INSERT INTO src VALUES (?, ?, ?, ?, ?, ?, ?, ?)", srcs)
        db.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", bodies)
        if bulk is not None:
            db.executemany("INSERT INTO temp.bulk_words VALUES (?, ?, ?)", staged)
            bulk |= vocab
            return
        db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?, ?, ?)", postings)
        db.executemany("INSERT OR IGNORE INTO vocab VALUES (?)", ((w,) for w in vocab))
        db.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?)", tag_rows)

    def pending_counts(self) -> dict[int, int]:
        """How many entries' bodies are pending, by kind (NOT_FETCHED, ONLINE_ONLY)."""
        q = "SELECT pending, count(*) FROM src WHERE pending > 0 GROUP BY pending"
        return {int(k): int(n) for k, n in self.conn.execute(q)}

    def hold(self, bodies: dict[int, bytes]) -> int:
        """Make pending entries held with their bodies read since (Box search hits): into the
        full-text index, searched from now on. Returns how many were still pending."""
        if not bodies:
            return 0
        from hashlib import sha1

        db = self.conn
        db.execute("BEGIN IMMEDIATE")
        try:
            live = sorted(
                r
                for (r,) in db.execute(
                    "SELECT rid FROM src WHERE pending > 0 AND rid IN (SELECT value FROM json_each(?))",
                    (json_ints(bodies),),
                )
            )
            for rid in live:
                raw = bodies[rid]
                db.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (rid, split_body(raw)[1]))
                db.execute(
                    "UPDATE src SET pending = 0, body_sig = ?, sha1 = ? WHERE rid = ?",
                    (body_digest(raw), sha1(raw, usedforsecurity=False).hexdigest(), rid),
                )
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise
        return len(live)

    def _read_raw(self, path: str, folder: str) -> bytes | None:
        try:
            return self.ws.store.read_bytes(path)
        except NotFound:
            return None
        except ReadFailed as e:  # held open or not downloaded yet: the folder is read again next time
            self._unread.append((folder, f"{e} (recall uses its index entry only)"))
            return None
        except (InvalidFile, OutsideWorkspace) as e:  # a FIFO, device, oversized file or a link
            self.unreadable.append((folder, str(e)))  # out of the workspace in place of a memory
            return None


def rollback(db: sqlite3.Connection) -> None:
    """Undo the open transaction on the way out of a failed refresh; a rollback that itself fails
    (the connection already gone) must not hide the error that got us here."""
    with contextlib.suppress(sqlite3.Error):
        db.execute("ROLLBACK")


Todo = tuple[dict[str, Any], str, str, bytes, str | None]  # entry, id, path, entry sig, file sig


_blake2b: Any = None  # hashlib's, once a digest is wanted (hashlib loads OpenSSL: not at start-up)


def _hasher() -> Any:
    """hashlib's blake2b, imported on first use only (a `from hashlib import` in each digest cost
    ~1.3 us, 0.13 s of a 100,000-memory build)."""
    global _blake2b
    if _blake2b is None:
        from hashlib import blake2b

        _blake2b = blake2b
    return _blake2b


def entry_digest(ent: dict[str, Any]) -> bytes:
    """A digest of the whole index entry: any change to it (status, tags, file) re-reads the memory."""
    return _hasher()(orjson.dumps(ent, option=orjson.OPT_SORT_KEYS, default=str), digest_size=16).digest()


def stat_signature(st: os.stat_result) -> str:
    """As `LocalStore.signature`: inode, size, mtime and ctime in ns."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def recorded_stat(st: os.stat_result) -> str:
    """The stat to keep for a file read now: `?`-marked (never equal to a stat, so read again
    next time) when the file changed less than RACY_NS ago."""
    sig = stat_signature(st)
    return "?" + sig if max(st.st_mtime_ns, st.st_ctime_ns) > time.time_ns() - RACY_NS else sig


def body_digest(raw: bytes) -> bytes:
    return _hasher()(raw, digest_size=16).digest()


def as_indexed(ent: dict[str, Any], path: str, raw: bytes) -> dict[str, Any] | None:
    """The index entry a rebuild would write for the memory file `raw` (None: not a valid memory)."""
    from box_memory.format import frontmatter
    from box_memory.format.model import Memory, index_entry

    try:
        meta, body = frontmatter.parse(raw.decode("utf-8"), path)
        mem = Memory.from_meta(meta, body, str(ent.get("local_path") or path))
        name = str(ent.get("filename") or path.rsplit("/", 1)[-1])
        return index_entry(mem, filename=name, file_id=ent.get("file_id"), size_bytes=len(raw))
    except (BoxMemoryError, UnicodeDecodeError, ValueError, TypeError):
        return None


def differs(ent: dict[str, Any], fresh: dict[str, Any], size: int) -> bool:
    """Whether the index entry `ent` no longer describes the file `fresh` was made from (as
    `index.changed_since_indexed` decides)."""
    from box_memory.workspace.index import entry_changes

    indexed = ent.get("size_bytes")
    return (isinstance(indexed, int) and indexed != size) or bool(entry_changes(ent, fresh))


def collect_garbage(keep: str) -> list[str]:
    """Delete the recall caches nothing will use again: another schema version's (an older or newer
    box-memory would rebuild them anyway), or a local workspace's whose folder no longer exists.
    Run when a cache is created, so it costs nothing on a warm call. Returns what was deleted."""
    removed: list[str] = []
    folder = Path(keep).parent
    with contextlib.suppress(OSError):
        for f in folder.glob("*.sqlite3"):
            if str(f) == keep:
                continue
            try:
                db = sqlite3.connect(f"file:{f}?mode=ro", uri=True, timeout=0.1)
                try:
                    meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
                finally:
                    db.close()
            except sqlite3.Error:
                continue  # busy, or not ours: left alone
            root = str(meta.get("root") or "")
            gone = not root.startswith("box:") and not Path(root).is_dir()
            if meta.get("schema") != SCHEMA_VERSION or gone:
                remove_db(str(f))
                removed.append(str(f))
    return removed


def remove_db(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            Path(path + suffix).unlink()
