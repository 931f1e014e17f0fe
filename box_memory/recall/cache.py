"""The local recall cache: a derived SQLite (FTS5) copy of a workspace's indexes and memory bodies.

Never the source of truth. One database per workspace under `user_dirs().recall_cache_dir`, keyed
by the workspace root. Each call compares cheap signatures (the stat of every folder's
`_index.json` and of the folder itself) with what the cache recorded; only a folder whose
signature changed is re-read, and in it only the memory files whose index entry or file stat
changed. A missing, foreign or corrupt database is rebuilt transparently; a database that cannot
be opened at all (read-only cache dir, held lock) falls back to an in-memory one for that call.

The per-folder staleness verdict (format spec section 5) is computed when a folder is re-read and
kept with its signatures, so a warm call re-lists nothing.

A memory file edited in place by another program (an editor, a sync client) need not change its
folder's signatures. On a local workspace every call therefore also stats each memory file (one
`scandir` per folder, one stat per file) and compares a digest of those stats with the one kept
per folder; where they differ, each file whose (inode, size, mtime, ctime) changed is read again,
searched as it is now (its frontmatter too), and reported as making its folder's index stale
until the index agrees with it again (`index-rebuild`). ctime changes on every write, even one
that keeps the size and sets the mtime back; a stat taken within RACY_NS of the file's last
change is not trusted (the clock may not have ticked since): such a file is read again next time.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
import time
import unicodedata
import zlib
from collections.abc import Callable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import orjson

from box_memory.errors import BoxMemoryError, ContentUnverified, InvalidFile, NotFound, Unreadable
from box_memory.format.model import HIDDEN_STATUSES, entry_path, parse_time
from box_memory.format.safeio import OutsideWorkspace, ReadFailed, make_private
from box_memory.progress import task
from box_memory.store.base import join
from box_memory.workspace.resolve import INDEX_NAME, Workspace

if TYPE_CHECKING:
    from box_memory.recall.watch import FolderWatch

SCHEMA_VERSION = "11"
BATCH = 500  # memory files read and inserted per statement batch (and per progress step)
# A file stat taken less than this after the file's last change may not show a change made in the
# same clock tick (coarse kernel clocks; 1-2 s on FAT, SMB and some sync clients): kept as racy.
RACY_NS = 2_000_000_000
# The full-text index keeps no copy of the bodies (FTS5 `content=''`; excerpts are read from the
# memory files): the bodies were 43% of a 100k cache. On SQLite before 3.43 a row of such a table
# can only be deleted by handing back its original text, so a replaced or removed entry's rid goes
# to `dead` instead and its postings stay in the index; queries never see them (every match is
# joined to a live entry by rid, and rids are never reused). Once the dead outnumber a quarter of
# the live entries (and COMPACT_MIN), the next refresh rebuilds the cache from the files.
COMPACT_MIN = 1000
# An entry's rid (and FTS rowid) orders it by updated time: the rid's high bits are a time
# bucket of BUCKET_S seconds at or after the entry's, the low RID_SHIFT bits a sequence number
# (insertion order within the bucket). Recall reads the newest entries first through rowid ranges
# (`uts_below`). Small buckets and sequences keep rids, and so the FTS doclists' rowid deltas,
# short; a full bucket spills to the end, which only loosens `uts_below`, never breaks it.
RID_SHIFT = 6
BUCKET_S = 1024
MAX_BUCKET = (1 << (63 - RID_SHIFT)) - 2  # rids stay within SQLite's 64-bit integers
T = TypeVar("T")

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
  body_sig BLOB, drift INTEGER NOT NULL DEFAULT 0);
CREATE INDEX src_drift ON src(rid) WHERE drift = 1;
CREATE TABLE tags(tag TEXT NOT NULL, rid INTEGER NOT NULL, PRIMARY KEY(tag, rid)) WITHOUT ROWID;
CREATE INDEX tags_rid ON tags(rid);
CREATE VIRTUAL TABLE fts USING fts5(body, content='', tokenize='porter unicode61 remove_diacritics 2');
CREATE TABLE dead(rid INTEGER PRIMARY KEY);
CREATE TABLE postings(
  word TEXT NOT NULL, rid INTEGER NOT NULL, field INTEGER NOT NULL, uts REAL, hidden INTEGER NOT NULL,
  expires_ts REAL, PRIMARY KEY(word, rid)) WITHOUT ROWID;
CREATE INDEX postings_rid ON postings(rid);
CREATE TABLE vocab(word TEXT PRIMARY KEY) WITHOUT ROWID;
"""

ENTRY_FIELDS = [
    "rid", "id", "folder", "path", "title", "slug", "kind", "status", "team", "tags", "updated_at",
    "updated_ts", "expires_ts", "superseded_by", "hidden", "file_id"
]  # fmt: skip
ENTRY_COLS = ", ".join(f"e.{c}" for c in ENTRY_FIELDS)

WORD_RE = re.compile(r"\w+")
_FM_CLOSE = re.compile(r"\r?\n---[ \t]*(?:\r?\n|\Z)")
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
        m = _FM_CLOSE.search(text, 3)
        if m:
            return text[3 : m.start()], text[m.end() :]
    return "", text


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
        self.compacted = False  # rebuilt from the files to drop the index's dead rows
        self.memory_only = memory_only
        self.kept_open = False  # a long-lived process reused its open cache
        self.rechecked_files = 0  # memory files whose stat changed since they were read
        self.stat_folders = 0  # folders whose memory files were stat'ed (all, unless watched)
        self.ms = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "rebuilt": self.rebuilt,
            "compacted": self.compacted,
            "memory_only": self.memory_only,
            "kept_open": self.kept_open,
            "folders": self.folders,
            "reread_folders": self.reread_folders,
            "reread_files": self.reread_files,
            "removed": self.removed,
            "rechecked_files": self.rechecked_files,
            "stat_folders": self.stat_folders,
            "refresh_ms": round(self.ms, 1),
        }


class RecallCache:
    """One open cache database for one workspace."""

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
        self._racy: set[str] = set()  # folders where a racy file stat was recorded
        # A kept-open cache's inotify watch on the memory folders (`file_watch`): with it, only the
        # folders that had an event since the last call have their files stat'ed.
        self.watch: FolderWatch | None = None

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
            db.execute("PRAGMA journal_mode=WAL")
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
                _rollback(db)
                raise
            if self.stats.rebuilt and not memory:
                collect_garbage(keep=self.path)
        meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
        if meta.get("schema") != SCHEMA_VERSION or meta.get("root") != self.ws.describe():
            raise sqlite3.DatabaseError("recall cache belongs to another schema or workspace")

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

    # --- freshness ----------------------------------------------------------------------

    def refresh(self) -> list[str]:
        """Bring the cache up to date with the workspace; return its stale-index warnings."""
        started = time.perf_counter()
        self._just_read, self._racy = set(), set()
        folders = self.ws.index_folders()
        sigs = {f: (signature(self.ws, join(f, INDEX_NAME)), signature(self.ws, f)) for f in folders}
        self.stats.folders = len(folders)
        rows = self._folder_rows()
        changed = any(rows.get(f, (None, None, None))[:2] != sigs[f] for f in folders) or bool(
            set(rows) - set(folders)
        )
        if changed or self._needs_compaction():
            db = self.conn
            db.execute("BEGIN IMMEDIATE")
            self._begin_rids()
            try:
                if self._needs_compaction():  # checked again under the write lock
                    self._compact()
                rows = self._folder_rows()  # another process may have refreshed meanwhile
                plans = [
                    plan
                    for f in folders
                    if rows.get(f, (None, None, None))[:2] != sigs[f]
                    and (plan := self._plan_folder(f, sigs[f])) is not None
                ]
                self._insert_planned(plans)
                for plan in plans:
                    self._finish_folder(plan)
                self._outside = set()
                for f in set(rows) - set(folders):
                    self._drop_folder(f)
                self._count_entries()
                db.execute("COMMIT")
            except BaseException:
                _rollback(db)
                raise
            rows = self._folder_rows()
        if self._check_files(folders, rows):
            rows = self._folder_rows()
        self._just_read, self._racy = set(), set()
        drifted = self._drifted()
        self.stats.ms = (time.perf_counter() - started) * 1000
        warnings: list[str] = []
        denied: list[str] = []
        for f in folders:
            if f in rows:
                for w in orjson.loads(rows[f][2]):
                    if isinstance(w, dict):
                        denied.append(str(w.get("unreadable")))
                    else:
                        warnings.append(w)
                n = drifted.get(f)
                if n and not any(w.startswith(f"index of {f}/ may be stale") for w in warnings):
                    warnings.append(
                        f"index of {f}/ may be stale - run index-rebuild ({n} file(s) changed in place"
                        " after it was written; recall searches them as they are now)"
                    )
        if denied:
            warnings.append(unreadable_warning(denied))
        return warnings

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

    def _folder_rows(self) -> dict[str, tuple[Any, Any, str, Any]]:
        return {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in self.conn.execute("SELECT folder, index_sig, dir_sig, warnings, files_sig FROM folders")
        }

    def _drifted(self) -> dict[str, int]:
        """Per folder, how many memory files were changed in place so that they no longer give the
        entry its index holds (a partial index: nothing to read when there are none)."""
        return dict(
            self.conn.execute(
                # CROSS JOIN keeps src outside: the planner would rather scan every entry.
                "SELECT e.folder, count(*) FROM src s CROSS JOIN entries e ON e.rid = s.rid "
                "WHERE s.drift = 1 GROUP BY e.folder"
            ).fetchall()
        )

    def _check_files(self, folders: list[str], rows: dict[str, tuple[Any, Any, str, Any]]) -> bool:
        """Local workspaces: stat every memory file and re-read those changed in place (see the
        module doc). Returns whether anything was written."""
        root = self.ws.store.local_root
        if root is None:
            return False
        watch = self.watch
        events = watch.changed() if watch is not None else None  # drained before any stat
        stale = []
        for f in folders:
            row = rows.get(f)
            if row is None or row[1] in (None, "denied"):
                continue  # not cached, unreadable, or read again next time anyway
            path = os.path.join(root, f)  # noqa: PTH118 - a string join: no Path objects
            if watch is not None and events is not None and row[3] is not None:
                # Watched since its files were last compared, and no event since: unchanged.
                if watch.watching(path) and path not in events:
                    continue
                watch.watch(path)  # before the stats: a change after them is an event next time
            elif watch is not None:
                watch.watch(path)
            self.stats.stat_folders += 1
            got = folder_stats(path)
            if got is not None and got[0] != row[3]:
                got = folder_stats(path, keep=True)  # the stats by name, to compare file by file
                if got is not None:
                    stale.append((f, *got))
        if not stale:
            return False
        db = self.conn
        db.execute("BEGIN IMMEDIATE")
        self._begin_rids()
        self.unreadable, self._unread, self._denied = [], [], []
        try:
            for folder, digest, stats in stale:
                self._recheck_folder(folder, digest, stats)
            self._count_entries()
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        finally:
            self._outside = set()
        return True

    def _recheck_folder(self, folder: str, digest: str, stats: dict[str, os.stat_result]) -> None:
        """Compare each cached memory file of `folder` with its stat now; read again the ones that
        changed (or whose last stat was racy) and, where the content did change, replace their
        entries as the files now are. Files added or removed change the folder's own signature:
        `_plan_folder` handles those."""
        db = self.conn
        prefix = folder + "/"
        suspect: list[tuple[int, str, str, bytes | None, os.stat_result, bool]] = []
        for rid, mid, path, stat_sig, body_sig in db.execute(
            "SELECT e.rid, e.id, e.path, s.stat_sig, s.body_sig FROM entries e JOIN src s ON s.rid = e.rid "
            "WHERE e.folder = ?",
            (folder,),
        ).fetchall():
            if rid in self._just_read or not path.startswith(prefix):
                continue
            st = stats.get(path[len(prefix) :])
            if st is None or stat_sig == (sig := _stat_sig(st)):
                continue
            suspect.append((rid, mid, path, body_sig, st, stat_sig == "?" + sig))
        self.stats.rechecked_files += len(suspect)
        todo: list[tuple[str, str, _Todo]] = []
        index: dict[str, dict[str, Any]] | None = None
        for rid, mid, path, body_sig, st, only_racy in suspect:
            # Never waits for a download (a Box Drive file online only) nor for a held file.
            raw = self.ws.store.read_if_local(path)
            if raw is None:
                if only_racy:  # unchanged since it was read: trusted, not retried on every call
                    db.execute("UPDATE src SET stat_sig = ? WHERE rid = ?", (_stat_sig(st), rid))
                else:
                    self._racy.add(folder)  # changed, and not readable now: compared again next time
                continue
            if body_sig is not None and _body_sig(raw) == body_sig:
                sig = _recorded_sig(st)  # the same bytes: only the stat moved (a touch, a chmod)
                if sig.startswith("?"):
                    self._racy.add(folder)
                db.execute("UPDATE src SET stat_sig = ? WHERE rid = ?", (sig, rid))
                continue
            if index is None:
                from box_memory.workspace.index import load_index

                try:
                    index = {str(e.get("id") or ""): e for e in load_index(self.ws, folder).entries}
                except BoxMemoryError:
                    index = {}
            ent = index.get(mid)
            if ent is None:
                continue
            self._outside.add((folder, mid))
            self._delete_rids([rid])
            todo.append((folder, self.ws.folder_team(folder), (ent, mid, path, _entry_sig(ent), _listed(st))))
        if todo:
            self.stats.reread_files += len(todo)
            self._insert(todo)
        ok = folder not in self._racy and not (self.unreadable or self._unread or self._denied)
        db.execute("UPDATE folders SET files_sig = ? WHERE folder = ?", (digest if ok else None, folder))

    def _drop_folder(self, folder: str) -> None:
        db = self.conn
        rids = [r[0] for r in db.execute("SELECT rid FROM entries WHERE folder = ?", (folder,))]
        self._delete_rids(rids)
        db.execute("DELETE FROM folders WHERE folder = ?", (folder,))
        self.stats.removed += len(rids)

    def _delete_rids(self, rids: list[int]) -> None:
        if not rids:
            return
        db = self.conn
        for sql in (
            "DELETE FROM entries WHERE rid = ?",
            "DELETE FROM src WHERE rid = ?",
            "DELETE FROM tags WHERE rid = ?",
            "DELETE FROM postings WHERE rid = ?",
            "INSERT OR IGNORE INTO dead VALUES (?)",  # its FTS row stays: see COMPACT_MIN
        ):
            db.executemany(sql, ((r,) for r in rids))
        self._dead_changed = True

    def dead_count(self) -> int:
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'dead'").fetchone()
        return 0 if row is None else int(row[0])

    def _needs_compaction(self) -> bool:
        dead = self.dead_count()
        return dead > COMPACT_MIN and dead > self.entry_count() // 4

    def _compact(self) -> None:
        """Start over: empty every table (the index's dead rows with it), forget every folder's
        signatures, so the refresh in progress re-reads the workspace into an empty cache."""
        db = self.conn
        db.execute("INSERT INTO fts(fts) VALUES ('delete-all')")
        for table in ("entries", "src", "tags", "postings", "vocab", "dead", "folders"):
            db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
        db.execute("INSERT OR REPLACE INTO meta VALUES ('dead', 0)")
        self.stats.compacted = True
        self._begin_rids()

    def _plan_folder(self, folder: str, sigs: tuple[str | None, str | None]) -> _Plan | None:
        """Re-read one folder's index and listing: drop the entries gone or changed and return the
        ones to (re-)read, or None when the folder is done (one this user may not read)."""
        from box_memory.workspace.index import FolderIndex, drift, is_memory_file, load_index

        ws, db = self.ws, self.conn
        self.stats.reread_folders += 1
        warnings: list[Any] = []
        try:
            idx = load_index(ws, folder)
            listing = [e for e in ws.store.list_dir(folder) if not e.is_dir and is_memory_file(e.name)]
        except Unreadable as e:
            # A team folder this user may not read: skipped, never taken for an empty folder. A
            # link out of the workspace: the same, and the warning names the link.
            self._drop_folder(folder)
            said: Any = f"{e} (recall skipped this folder)" if isinstance(e, OutsideWorkspace) else None
            db.execute(
                "INSERT OR REPLACE INTO folders(folder, index_sig, dir_sig, warnings) VALUES (?, ?, ?, ?)",
                (folder, sigs[0], sigs[1], orjson.dumps([said or {"unreadable": folder + "/"}]).decode()),
            )
            return None
        except BoxMemoryError as e:
            warnings.append(f"{e} (recall skipped this folder)")
            idx = FolderIndex(folder, {"entries": []}, existed=False)
            listing = [e for e in ws.store.list_dir(folder) if not e.is_dir and is_memory_file(e.name)]
        if idx.existed:
            reasons = drift(ws, idx, listing=listing)
            if reasons:
                warnings.append(f"index of {folder}/ may be stale - run index-rebuild ({'; '.join(reasons)})")
        elif listing:
            warnings.append(
                f"{folder}/ has {len(listing)} memory file(s) but no {INDEX_NAME} - run index-rebuild"
            )
        stat_of = {e.name: f"{e.size}:{e.modified}" for e in listing}
        old = {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in db.execute(
                "SELECT e.id, e.rid, s.entry_sig, s.file_sig, s.drift FROM entries e "
                "JOIN src s ON s.rid = e.rid WHERE e.folder = ?",
                (folder,),
            )
        }
        todo: list[tuple[dict[str, Any], str, str, bytes, str | None]] = []
        replaced: list[int] = []
        seen: set[str] = set()
        for ent in idx.entries:
            mid = str(ent.get("id") or "")
            if not mid or mid in seen:
                continue
            seen.add(mid)
            sig, path = _entry_sig(ent), _entry_path(folder, ent)
            file_sig = stat_of.get(path.rsplit("/", 1)[-1]) if path.startswith(folder + "/") else None
            prev = old.pop(mid, None)
            if prev is not None and prev[1] == sig and prev[2] == file_sig:
                if prev[3] and not self._disagrees(ent, path):
                    # Changed in place earlier; the index written since agrees with the file now.
                    db.execute("UPDATE src SET drift = 0 WHERE rid = ?", (prev[0],))
                continue
            if prev is not None:
                replaced.append(prev[0])
                if prev[1] == sig:  # the same index entry, another file: changed in place
                    self._outside.add((folder, mid))
            todo.append((ent, mid, path, sig, file_sig))
        if todo:  # cloud: fetch just the changed files, concurrently
            ws.store.prefetch(t[2] for t in todo)
        self._delete_rids([v[0] for v in old.values()] + replaced)
        self.stats.removed += len(old)
        return _Plan(folder, ws.folder_team(folder), sigs, warnings, todo)

    def _insert_planned(self, plans: list[_Plan]) -> None:
        """Read and add every planned entry, oldest first across all folders: rids are times, so a
        cold build's inserts are appends (folder by folder, each folder's rids would interleave
        with the last one's, and FTS5 flushes its pending terms at every step back)."""
        self.unreadable, self._unread, self._denied = [], [], []
        items = [(plan.folder, plan.team, t) for plan in plans for t in plan.todo]
        items.sort(key=lambda i: str(i[2][0].get("updated_at") or ""))  # the stamp's text: cheap
        self.stats.reread_files += len(items)
        if not items:
            return
        with task("Recall cache: reading memory files", total=len(items), unit="memories") as bar:
            for start in range(0, len(items), BATCH):
                self._insert(items[start : start + BATCH])
                bar.advance(len(items[start : start + BATCH]))

    def _finish_folder(self, plan: _Plan) -> None:
        """Record a re-read folder's signatures and warnings (none kept when a file could not be
        read: the folder is read again next time)."""
        folder, sigs, warnings = plan.folder, plan.sigs, plan.warnings
        warnings += [f"{msg} (recall uses its index entry only)" for f, msg in self.unreadable if f == folder]
        unread = [msg for f, msg in self._unread if f == folder]
        denied = [path for f, path in self._denied if f == folder]
        if unread:
            warnings += unread
            sigs = (None, None)
        if denied:
            # Files this user may not read are left out, and the folder is read again next time
            # (a chmod changes no signature recorded here): they show up once they can be read.
            warnings += [{"unreadable": p} for p in denied]
            sigs = (None, None)
        self.conn.execute(
            "INSERT OR REPLACE INTO folders(folder, index_sig, dir_sig, warnings) VALUES (?, ?, ?, ?)",
            (folder, sigs[0], sigs[1], orjson.dumps(warnings).decode()),
        )

    def _begin_rids(self) -> None:
        """Start a write transaction's rid bookkeeping: `_taken` holds the last rid given per
        bucket in it (key -1: the highest); a cache empty at the start needs no lookups."""
        self._taken: dict[int, int] = {}
        self._fresh = (
            self.conn.execute("SELECT 1 FROM entries UNION ALL SELECT 1 FROM dead LIMIT 1").fetchone() is None
        )

    def _new_rid(self, uts: float | None) -> int:
        """The next free rid in `uts`'s bucket, or past every rid above it when the bucket is full."""
        taken = self._taken
        bucket = rid_bucket(uts)
        base, size = bucket << RID_SHIFT, 1 << RID_SHIFT
        last = taken.get(bucket)
        if last is None and not self._fresh:
            # A dead rid is never given again: the index still holds its row (COMPACT_MIN).
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

    def _insert(self, items: list[tuple[str, str, _Todo]]) -> None:
        """Read the memory files of `items` ((folder, team, entry) each) and add them to every
        table, a batch at a time."""
        entries, srcs, bodies, postings, tag_rows = [], [], [], [], []
        vocab: set[str] = set()
        root = self.ws.store.local_root
        for folder, team, (indexed, mid, path, sig, file_sig) in items:
            e = indexed
            unread = len(self._unread)
            stat_sig = None
            if root is not None:  # taken before the read: a change after it shows next time
                with contextlib.suppress(OSError):
                    stat_sig = _recorded_sig(os.stat(os.path.join(root, path)))  # noqa: PTH116, PTH118
                    if stat_sig.startswith("?"):
                        self._racy.add(folder)
            try:
                raw = self._read_raw(path, folder)
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
                fresh = _as_indexed(e, path, raw)
                drift = int(fresh is None or _differs(e, fresh, len(raw)))
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
            body_sig = _body_sig(raw) if raw is not None else None
            srcs.append(
                (rid, sig if read else b"", file_sig, stat_sig, body_sig, drift)
            )  # b"": read next time
            self._just_read.add(rid)
            bodies.append((rid, body))
            # The words of title, slug and tags, each with the best field holding it (title 4,
            # slug 3, tag 2): a query token is inside a field exactly when it is inside one of the
            # field's words (tokens are \w+ runs too), so scoring needs only these rows.
            field: dict[str, int] = {}
            for weight, text in zip((2, 3, 4), (folds[2], folds[1], folds[0]), strict=True):
                field.update(dict.fromkeys(WORD_RE.findall(text), weight))
            vocab.update(field)
            postings += [(w, rid, f, uts, hidden, exp_ts) for w, f in field.items()]
            tag_rows += [(folded(t), rid) for t in tags]
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
        db.executemany("INSERT INTO src VALUES (?, ?, ?, ?, ?, ?)", srcs)
        db.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", bodies)
        db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?, ?, ?)", postings)
        db.executemany("INSERT OR IGNORE INTO vocab VALUES (?)", ((w,) for w in vocab))
        db.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?)", tag_rows)

    def apply_write(
        self,
        before: dict[str, tuple[str | None, str | None]],
        indexes: dict[str, Any],
        touched: set[str],
    ) -> int:
        """Bring the cache along with a write this process has just made under the writers' lock.

        `before` holds each written folder's signatures taken before the write, `indexes` the saved
        folder indexes and `touched` the ids of the entries the write added, changed or removed. A
        folder whose cached signatures were exactly `before` was current, so updating those
        entries and recording the new signatures keeps it current without re-reading the folder;
        any other folder is left for the next refresh. Returns the folders updated.
        """
        ws, db = self.ws, self.conn
        done = 0
        self.unreadable, self._unread, self._denied = [], [], []
        db.execute("BEGIN IMMEDIATE")
        self._begin_rids()
        try:
            rows = self._folder_rows()
            for folder, idx in indexes.items():
                if folder not in before or rows.get(folder, (None, None, None))[:2] != before[folder]:
                    continue
                team = ws.folder_team(folder)
                for mid in sorted(touched):
                    gone = [r[0] for r in db.execute(
                        "SELECT rid FROM entries WHERE folder = ? AND id = ?", (folder, mid)
                    )]  # fmt: skip
                    self._delete_rids(gone)
                    ent = idx.get(mid)
                    if ent is None:
                        continue
                    path = _entry_path(folder, ent)
                    file_sig = None
                    if path.startswith(folder + "/"):
                        st = ws.store.stat(path)
                        file_sig = None if st is None else f"{st.size}:{st.modified}"  # as a listing
                    self._insert([(folder, team, (ent, mid, path, _entry_sig(ent), file_sig))])
                    if self.unreadable or self._unread or self._denied:  # a refresh warns: leave it to one
                        raise sqlite3.OperationalError("written memory unreadable for the recall cache")
                sigs = (signature(ws, join(folder, INDEX_NAME)), signature(ws, folder))
                # files_sig: the folder's files are compared one by one again next time (a file
                # another program changed before this write must not be taken for current).
                db.execute(
                    "UPDATE folders SET index_sig = ?, dir_sig = ?, files_sig = NULL WHERE folder = ?",
                    (*sigs, folder),
                )
                done += 1
            self._count_entries()
            db.execute("COMMIT")
        except BaseException:
            _rollback(db)
            raise
        return done

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

    def _disagrees(self, ent: dict[str, Any], path: str) -> bool:
        """Whether the memory file at `path` no longer gives the index entry `ent` (so far as a
        read that never waits for a download can tell)."""
        raw = self.ws.store.read_if_local(path)
        if raw is None:
            return True
        fresh = _as_indexed(ent, path, raw)
        return fresh is None or _differs(ent, fresh, len(raw))


def _rollback(db: sqlite3.Connection) -> None:
    """Undo the open transaction on the way out of a failed refresh; a rollback that itself fails
    (the connection already gone) must not hide the error that got us here."""
    with contextlib.suppress(sqlite3.Error):
        db.execute("ROLLBACK")


_Todo = tuple[dict[str, Any], str, str, bytes, str | None]  # entry, id, path, entry sig, file sig


class _Plan(NamedTuple):
    """A folder to re-read: what `_plan_folder` found, for `_insert_planned` and `_finish_folder`."""

    folder: str
    team: str
    sigs: tuple[str | None, str | None]
    warnings: list[Any]
    todo: list[_Todo]


def _entry_sig(ent: dict[str, Any]) -> bytes:
    """A digest of the whole index entry: any change to it (status, tags, file) re-reads the memory."""
    from hashlib import blake2b

    return blake2b(orjson.dumps(ent, option=orjson.OPT_SORT_KEYS, default=str), digest_size=16).digest()


def _entry_path(folder: str, ent: dict[str, Any]) -> str:
    return entry_path(folder, ent)


def _stat_sig(st: os.stat_result) -> str:
    """As `LocalStore.signature`: inode, size, mtime and ctime in ns."""
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _recorded_sig(st: os.stat_result) -> str:
    """The stat to keep for a file read now: `?`-marked (never equal to a stat, so read again
    next time) when the file changed less than RACY_NS ago."""
    sig = _stat_sig(st)
    return "?" + sig if max(st.st_mtime_ns, st.st_ctime_ns) > time.time_ns() - RACY_NS else sig


def _listed(st: os.stat_result) -> str:
    """A stat as `_plan_folder` compares a listing entry (`LocalStore.list_dir`: size, mtime)."""
    return f"{st.st_size}:{st.st_mtime}"


def _body_sig(raw: bytes) -> bytes:
    from hashlib import blake2b

    return blake2b(raw, digest_size=16).digest()


_DIR_FD = os.stat in os.supports_dir_fd and os.listdir in os.supports_fd


def folder_stats(path: str, *, keep: bool = False) -> tuple[str, dict[str, os.stat_result]] | None:
    """One folder's memory files: a digest of their stats (order-free, deterministic across
    processes: it hashes integers only) and, with `keep`, the stats by name. None when it cannot
    be listed. Each stat looks up one name in the open folder, not the whole path."""
    acc = count = 0
    stats: dict[str, os.stat_result] = {}
    fd = None
    stat = os.stat
    try:
        if _DIR_FD:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        for name in os.listdir(path if fd is None else fd):  # noqa: PTH208 - names of an open folder
            if not name.endswith(".md") or name[0] == "." or name == "README.md":
                continue
            try:
                st = stat(name, dir_fd=fd) if fd is not None else stat(os.path.join(path, name))  # noqa: PTH118
            except OSError:
                continue
            count += 1
            acc += hash((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
            if keep:
                stats[name if name.isascii() else unicodedata.normalize("NFC", name)] = st
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
    return f"{count}:{acc & 0xFFFFFFFFFFFFFFFF:x}", stats


def _as_indexed(ent: dict[str, Any], path: str, raw: bytes) -> dict[str, Any] | None:
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


def _differs(ent: dict[str, Any], fresh: dict[str, Any], size: int) -> bool:
    """Whether the index entry `ent` no longer describes the file `fresh` was made from (as
    `index.changed_since_indexed` decides)."""
    from box_memory.workspace.index import entry_changes

    indexed = ent.get("size_bytes")
    return (isinstance(indexed, int) and indexed != size) or bool(entry_changes(ent, fresh))


def before_write(ws: Workspace, indexes: dict[str, Any]) -> dict[str, tuple[str | None, str | None]]:
    """What `refresh` compares per folder (the stat of its index and of the folder), taken before a
    write changes anything, for `after_write`. Local workspaces only (a Box stat is a listing); an
    index that was repaired in memory (`dirty` before the write) changed more than the write's
    entries and is left out."""
    if ws.store.local_root is None:
        return {}
    return {
        f: (signature(ws, join(f, INDEX_NAME)), signature(ws, f))
        for f, idx in indexes.items()
        if not idx.dirty
    }


def after_write(
    ws: Workspace,
    before: dict[str, tuple[str | None, str | None]],
    indexes: dict[str, Any],
    touched: set[str],
) -> None:
    """A write on a local workspace updates an existing recall cache for the entries it wrote
    (`RecallCache.apply_write`), so the next recall does not re-read a large folder. Best effort:
    the cache is derived data, and whatever is not updated here the next refresh re-reads."""
    if ws.store.local_root is None or not before:
        return
    path = cache_path(ws)
    held = (_held or {}).get(path)
    try:
        if held is not None:
            held.ws = ws
            held.apply_write(before, indexes, touched)
            return
        if not os.path.exists(path):  # noqa: PTH110 - no cache yet: the first recall builds it
            return
        cache = RecallCache(ws, path)
        try:
            cache.open(busy_ms=250)  # a recall rebuilding the cache is not waited for
            cache.apply_write(before, indexes, touched)
        finally:
            cache.close()
    except (sqlite3.Error, OSError, BoxMemoryError):
        return


def cache_info(ws: Workspace) -> dict[str, Any]:
    """Where the workspace's recall cache lives and how big it is (with its write-ahead log)."""
    path = cache_path(ws)
    size = 0
    exists = False
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            size += os.stat(path + suffix).st_size  # noqa: PTH116
            exists = exists or not suffix
    return {"path": path, "exists": exists, "bytes": size, "schema": SCHEMA_VERSION}


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
                _remove(str(f))
                removed.append(str(f))
    return removed


UNREADABLE = "permission denied, skipped"


def own_unreadable(paths: list[str]) -> list[str]:
    """Of the items a read could not read, those that are not another team's folder (a team
    boundary, `teams/<t>/...` a folder): this user's own memories or files, never healthy."""
    return [p for p in paths if not (p.startswith("teams/") and p.endswith("/"))]


def unreadable_warning(paths: list[str]) -> str:
    """One warning for everything a read had to skip because the user may not read it. When every
    item is a team's folder (a team boundary) human output shows it only with --verbose;
    otherwise always (it names the user's own memories). --json always carries it."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    if not own_unreadable(paths):
        return f"{UNREADABLE} {len(paths)} unreadable item(s): {shown}"
    # Not (only) another team's folder: the user's own memories or files cannot be read. That is
    # said in plain output too (it does not start with UNREADABLE).
    return f"permission denied: {len(paths)} item(s) could not be read and were skipped: {shown}"


def _is_corrupt(e: sqlite3.Error) -> bool:
    """A damaged, foreign or half-made cache file (rebuilt), as opposed to a busy or unreadable one
    or a faulty statement (raised: deleting the cache would only hide it)."""
    if type(e) is sqlite3.DatabaseError:  # "file is not a database", "disk image is malformed"
        return True
    msg = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and any(
        s in msg for s in ("malformed", "not a database", "no such table", "no such column", "corrupt")
    )


def _is_unusable(e: sqlite3.Error) -> bool:
    msg = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and any(
        s in msg for s in ("locked", "busy", "unable to open", "readonly", "read-only", "disk i/o")
    )


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            Path(path + suffix).unlink()


@contextlib.contextmanager
def _opened(ws: Workspace, path: str) -> Iterator[tuple[RecallCache, list[str]]]:
    cache = RecallCache(ws, path)
    try:
        cache.open()
        warnings = cache.refresh()
        yield cache, warnings
    finally:
        cache.close()


# A long-lived process (`serve`) keeps each local workspace's cache open between calls: no
# connect, schema check or page-cache warm-up per call. Every call still runs `refresh()` first (a
# stat of each folder and its index), so nothing is answered from a cache that was not checked
# against the files since the last change. None: each call opens and closes its own (the CLI).
_held: dict[str, RecallCache] | None = None


def keep_open() -> None:
    """From now on, keep local recall caches open between calls (until `close_held`)."""
    global _held
    if _held is None:
        _held = {}


def close_held() -> None:
    global _held
    for cache in (_held or {}).values():
        cache.close()
    _held = None


def _held_cache(ws: Workspace, path: str) -> RecallCache | None:
    """The open cache of `ws`, refreshed, when this process keeps caches open; None otherwise."""
    if _held is None or ws.store.local_root is None:
        return None  # a Box store's stats are listings: those stay per call
    cache = _held.get(path)
    try:
        if cache is None:
            from box_memory.recall.watch import FolderWatch

            cache = RecallCache(ws, path)
            cache.open()
            cache.watch = FolderWatch.start(str(ws.store.local_root))
            _held[path] = cache
        cache.ws = ws
        cache.stats = Refresh(memory_only=False)
        cache.stats.kept_open = True
        cache.warnings = cache.refresh()
        return cache
    except (sqlite3.Error, OSError):
        # Whatever went wrong is handled by the per-call path below (rebuild, in-memory copy).
        _held.pop(path, None)
        if cache is not None:
            cache.close()
        return None


def with_cache(ws: Workspace, fn: Callable[[RecallCache, list[str]], T]) -> T:
    """Run `fn` over a fresh cache. A corrupt or foreign cache is deleted and rebuilt once; a cache
    that cannot be used at all (locked past the wait, unwritable) gives way to an in-memory one."""
    path = cache_path(ws)
    held = _held_cache(ws, path)
    if held is not None:
        return fn(held, held.warnings)
    for attempt in range(2):
        try:
            with _opened(ws, path) as (cache, warnings):
                return fn(cache, warnings)
        except sqlite3.Error as e:
            if _is_unusable(e) or (_is_corrupt(e) and attempt == 1):
                break
            if not _is_corrupt(e):
                raise
            _remove(path)
        except OSError:
            break
    with _opened(ws, ":memory:") as (cache, warnings):
        note = f"recall cache {path} is unusable; answered from a temporary in-memory copy"
        return fn(cache, [*warnings, note])
