"""Keeping the recall cache fresh from the workspace's indexes (`RecallCache.refresh`).

Each call compares cheap signatures (the stat of every folder's `_index.json` and of the folder
itself) with what the cache recorded; only a folder whose signature changed is re-read, and in it
only the memory files whose index entry or file stat changed; then the memory files changed in
place are checked (`FileChecks`, below). A write made by this process updates the cache for the entries
it wrote instead (`apply_write`).

The per-folder staleness verdict (format spec section 5) is computed when a folder is re-read and
kept with its signatures, so a warm call re-lists nothing.

On Box, a big folder is not listed at all: its `_index.json` is found and stat'ed by Box file id
(`store/cloud/pins.py`; the ids are remembered in `meta` under `pins`), and its signature is that
index's. Memory bodies that are not on this machine are left pending (`cache_db`: `pending`) when
a refresh would have to fetch more than EAGER_READS of them: a cold build of a big Box workspace
reads indexes only, and a Box Drive placeholder is never read. So the drift checks that need a
listing (files the index misses, files changed in place) run only where the folder is listed:
folders whose index is small, and any folder once a write or `index-rebuild` lists it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from box_memory.errors import BoxMemoryError, Unreadable
from box_memory.format.model import entry_path
from box_memory.format.safeio import OutsideWorkspace
from box_memory.recall.cache_db import (
    CacheDB,
    Todo,
    as_indexed,
    body_digest,
    differs,
    entry_digest,
    recorded_stat,
    rollback,
    signature,
    stat_signature,
)
from box_memory.store.base import as_batch_reads, as_unlisted_reads, join
from box_memory.workspace.resolve import INDEX_NAME

BATCH = 500  # memory files read and inserted per statement batch (and per progress step)
COMPACT_MIN = 1000  # dead index rows (`cache_db`: `dead`) tolerated before a rebuild from the files
EAGER_READS = 64  # Box bodies one refresh fetches (a warm call's few new memories); more: pending
PIN_MIN_ENTRIES = 300  # a Box folder with more entries is read through its pinned index next time


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """No cyclic garbage collection while a refresh builds rows: it makes no cycles, and a cold
    build holds every parsed index entry (millions of objects at 100,000 memories), which each
    full collection would walk again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# --- memory files edited in place ---------------------------------------------------------
# The recall cache's check of memory files edited in place (local workspaces).
#
# A memory file edited in place by another program (an editor, a sync client) need not change its
# folder's signatures. On a local workspace every call therefore also stats each memory file (one
# `scandir` per folder, one stat per file) and compares a digest of those stats with the one kept
# per folder; where they differ, each file whose (inode, size, mtime, ctime) changed is read again,
# searched as it is now (its frontmatter too), and reported as making its folder's index stale
# until the index agrees with it again (`index-rebuild`). ctime changes on every write, even one
# that keeps the size and sets the mtime back; a stat taken within RACY_NS of the file's last
# change is not trusted (the clock may not have ticked since): such a file is read again next time.
# (One module with the refresh: a recall imports both anyway, ~0.1 ms per module.)


class FileChecks(CacheDB):
    """The cache database plus the per-file check of memory files changed in place."""

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

    def _check_files(
        self,
        folders: list[str],
        rows: dict[str, tuple[Any, Any, str, Any]],
        events: dict[str, set[str] | None] | None,
    ) -> bool:
        """Local workspaces: stat every memory file and re-read those changed in place (see the
        module doc); `events`: what the watch said since the last call, drained before any stat
        (None: no watch, or take everything as changed). Returns whether anything was written."""
        root = self.ws.store.local_root
        if root is None:
            return False
        watch = self.watch
        stale: list[tuple[str, str, dict[str, os.stat_result], bool, bool]] = []
        for f in folders:
            row = rows.get(f)
            if row is None or row[1] in (None, "denied"):
                continue  # not cached, unreadable, or read again next time anyway
            path = os.path.join(root, f)  # noqa: PTH118 - a string join: no Path objects
            if f in self._settled:  # just listed and read, its digest that listing's
                if watch is not None and watch.watching(path):
                    self._compared.add(path)  # watched before it was listed: a change since is an event
                continue
            if (
                watch is not None
                and events is not None
                and row[3] is not None
                and path in self._compared
                and watch.watching(path)
            ):
                # Watched since its files were last compared: unchanged but for the files named by
                # an event since (a file changed again after it was read is always an event, so a
                # stat taken in the same clock tick as a change needs no second look here).
                if path not in events:
                    continue
                names = events[path]
                if names is not None:
                    found = named_stats(path, names)
                    self.stats.named_files += len(found)
                    if found:
                        stale.append((f, row[3], found, True, True))
                    continue
            # Watched from before the stats: a change after them is an event next time.
            watched = watch is not None and watch.watch(path)
            if watched:
                self._compared.add(path)
            self.stats.stat_folders += 1
            # Never compared (just read): the stats by name at once, not a digest first.
            got = folder_stats(path, keep=row[3] is None)
            if got is not None and got[0] != row[3]:
                if row[3] is not None:
                    got = folder_stats(path, keep=True)  # the stats by name, to compare file by file
                if got is not None:
                    stale.append((f, *got, False, watched))
        if not stale:
            return False
        db = self.conn
        db.execute("BEGIN IMMEDIATE")
        self._begin_rids()
        self.unreadable, self._unread, self._denied = [], [], []
        try:
            for folder, digest, stats, named, watched in stale:
                self._recheck_folder(folder, digest, stats, named=named, watched=watched)
            self._count_entries()
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise
        finally:
            self._outside = set()
        return True

    def _recheck_folder(
        self,
        folder: str,
        digest: str,
        stats: dict[str, os.stat_result],
        *,
        named: bool = False,
        watched: bool = False,
    ) -> None:
        """Compare each cached memory file of `folder` with its stat now; read again the ones that
        changed (or whose last stat was racy) and, where the content did change, replace their
        entries as the files now are. Files added or removed change the folder's own signature:
        `_plan_folder` handles those. `named`: `stats` holds only the files a watch named (the
        folder's digest stays as it was). `watched`: a watch had the folder before these stats, so
        a file whose stat was racy needs no second look by stat (a change after the read is an
        event): the folder's digest is kept, and the next call looks only at the files events
        name. Without it, a folder written to more often than every RACY_NS was never compared
        by the watch again but stat'ed file by file on every call (4,000 stats after each write)."""
        db = self.conn
        prefix = folder + "/"
        suspect: list[tuple[int, str, str, bytes | None, os.stat_result, bool]] = []
        query = (
            "SELECT e.rid, e.id, e.path, s.stat_sig, s.body_sig FROM entries e JOIN src s ON s.rid = e.rid "
            "WHERE e.folder = :folder"
        )
        params: dict[str, object] = {"folder": folder}
        if named:
            query += " AND e.path IN (SELECT value FROM json_each(:paths))"
            params["paths"] = orjson.dumps([prefix + n for n in stats]).decode()
        for rid, mid, path, stat_sig, body_sig in db.execute(query, params).fetchall():
            if rid in self._just_read or not path.startswith(prefix):
                continue
            st = stats.get(path[len(prefix) :])
            if st is None or stat_sig == (sig := stat_signature(st)):
                continue
            suspect.append((rid, mid, path, body_sig, st, stat_sig == "?" + sig))
        self.stats.rechecked_files += len(suspect)
        retry = False
        todo: list[tuple[str, str, Todo]] = []
        index: dict[str, dict[str, Any]] | None = None
        for rid, mid, path, body_sig, st, only_racy in suspect:
            # Never waits for a download (a Box Drive file online only) nor for a held file.
            raw = self.ws.store.read_if_local(path)
            if raw is None:
                if only_racy:  # unchanged since it was read: trusted, not retried on every call
                    db.execute("UPDATE src SET stat_sig = ? WHERE rid = ?", (stat_signature(st), rid))
                else:
                    self._racy.add(folder)  # changed, and not readable now: compared again next time
                    retry = True
                continue
            if body_sig is not None and body_digest(raw) == body_sig:
                sig = recorded_stat(st)  # the same bytes: only the stat moved (a touch, a chmod)
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
            todo.append(
                (folder, self.ws.folder_team(folder), (ent, mid, path, entry_digest(ent), _listed(st)))
            )
        if todo:
            self.stats.reread_files += len(todo)
            self._insert(todo)
        ok = not retry and (named or watched or folder not in self._racy)
        ok = ok and not (self.unreadable or self._unread or self._denied)
        db.execute("UPDATE folders SET files_sig = ? WHERE folder = ?", (digest if ok else None, folder))

    def _disagrees(self, ent: dict[str, Any], path: str) -> bool:
        """Whether the memory file at `path` no longer gives the index entry `ent` (so far as a
        read that never waits for a download can tell)."""
        raw = self.ws.store.read_if_local(path)
        if raw is None:
            return True
        fresh = as_indexed(ent, path, raw)
        return fresh is None or differs(ent, fresh, len(raw))


def named_stats(path: str, names: set[str]) -> dict[str, os.stat_result]:
    """The stats of the memory files of folder `path` among `names` (the ones still there)."""
    out: dict[str, os.stat_result] = {}
    for name in filter(_memory_name, names):
        try:
            out[_keyed(name)] = os.stat(os.path.join(path, name))  # noqa: PTH116, PTH118
        except OSError:
            continue
    return out


def _memory_name(name: str) -> bool:
    """Whether a file of this name in a memory folder is a memory (as `is_memory_file` decides)."""
    return name.endswith(".md") and name[0] != "." and name != "README.md"


def _keyed(name: str) -> str:
    """A name as the cache's paths hold it (NFC: macOS hands back NFD names)."""
    if name.isascii():
        return name
    import unicodedata

    return unicodedata.normalize("NFC", name)


def _listed(st: os.stat_result) -> str:
    """A stat as `_plan_folder` compares a listing entry (`LocalStore.list_dir`: size, mtime)."""
    return f"{st.st_size}:{st.st_mtime}"


_DIR_FD = os.stat in os.supports_dir_fd and os.listdir in os.supports_fd


def stats_digest(stats: Iterable[os.stat_result]) -> str:
    """The digest `folder_stats` makes of a folder's memory files, from their stats."""
    acc = count = 0
    for st in stats:
        count += 1
        acc += hash((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return f"{count}:{acc & 0xFFFFFFFFFFFFFFFF:x}"


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
            # `_memory_name`, inline: this loop runs once per memory file on every recall
            if not name.endswith(".md") or name[0] == "." or name == "README.md":
                continue
            try:
                st = stat(name, dir_fd=fd) if fd is not None else stat(os.path.join(path, name))  # noqa: PTH118
            except OSError:
                continue
            count += 1
            acc += hash((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
            if keep:
                stats[_keyed(name)] = st
    except OSError:
        return None
    finally:
        if fd is not None:
            os.close(fd)
    return f"{count}:{acc & 0xFFFFFFFFFFFFFFFF:x}", stats


class RecallCache(FileChecks):
    """One open cache database for one workspace, brought up to date by `refresh`."""

    def refresh(self) -> list[str]:
        """Bring the cache up to date with the workspace; return its stale-index warnings."""
        started = time.perf_counter()
        self._just_read, self._racy, self._settled = set(), set(), set()
        watch = self.watch
        events = watch.changed() if watch is not None else None  # drained before any stat
        steady, self._steady = self._steady, None
        shape = (tuple(self.ws.scopes()), self.ws.config.layout_chosen, self.ws.config.companion_layout)
        if steady is not None and events == {} and steady[0] == shape:
            # Nothing happened in any folder that can change the answer since a refresh that
            # found everything as the cache holds it (and watched all of it before its stats).
            self._steady = steady
            self.stats.folders, self.stats.steady = steady[1], True
            self.stats.ms = (time.perf_counter() - started) * 1000
            return list(steady[2])
        self._pin_indexes()
        watched = self._watch_tree() if watch is not None else False
        folders = self.ws.index_folders()
        if watch is not None:  # its month folders too, before their stats below
            watched = self._watch_folders(folders) and watched
        sigs = {f: (signature(self.ws, join(f, INDEX_NAME)), signature(self.ws, f)) for f in folders}
        self.stats.folders = len(folders)
        rows = self._folder_rows()
        changed = any(rows.get(f, (None, None, None))[:2] != sigs[f] for f in folders) or bool(
            set(rows) - set(folders)
        )
        wrote = bool(changed or self._needs_compaction())
        if wrote:
            with _no_cycle_collection():
                self._update(folders, sigs)
            rows = self._folder_rows()
        if self._check_files(folders, rows, events):
            rows, wrote = self._folder_rows(), True
        self.to_wal()
        calm = watched and not wrote and not self._racy
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
            from box_memory.recall.unreadable import unreadable_warning  # a team the user may not read

            warnings.append(unreadable_warning(denied))
        if calm:
            self._steady = (shape, len(folders), tuple(warnings))
        return warnings

    def _watch_tree(self) -> bool:
        """Watch every folder whose change can change a recall, before any stat of them: the
        workspace folder (its config), `teams/`, each scope's folder and its memory, files and
        companions folders (the month folders a listing of `memories/` finds are watched once
        found, `_watch_folders`). Whether every watch is in place."""
        wanted = {"", "teams"}
        for scope in self.ws.scopes():
            wanted.update(
                {
                    self.ws.scope_root(scope),
                    self.ws.memories_folder(scope),
                    self.ws.files_folder(scope),
                    self.ws.companions_folder(scope),
                }
            )
        return self._watch_folders(sorted(wanted))

    def _watch_folders(self, folders: list[str]) -> bool:
        """Watch workspace folders (a folder not there through the nearest one that is, where it
        would be made); whether every watch is in place."""
        watch, root = self.watch, self.ws.store.local_root
        if watch is None or root is None:
            return False
        base = str(root)
        ok = True
        for rel in folders:
            path = os.path.join(base, rel) if rel else base  # noqa: PTH118 - strings, as below
            while not os.path.isdir(path) and path != base:  # noqa: PTH112
                path = os.path.dirname(path)  # noqa: PTH120
            ok = watch.watch(path) and ok
        return ok

    def _update(self, folders: list[str], sigs: dict[str, tuple[str | None, str | None]]) -> None:
        """Re-read the folders whose signatures changed (all of them into an empty cache), in one
        write transaction."""
        db = self.conn
        db.execute("BEGIN IMMEDIATE")
        self._begin_rids()
        try:
            if self._needs_compaction():  # checked again under the write lock
                self._compact()
            rows = self._folder_rows()  # another process may have refreshed meanwhile
            stale = [f for f in folders if rows.get(f, (None, None, None))[:2] != sigs[f]]
            # On Box the indexes to re-read are fetched together, a few at a time, not one after
            # another: a fresh machine's first recall of a big workspace waits on them.
            self.ws.store.prefetch(join(f, INDEX_NAME) for f in stale)
            plans = [plan for f in stale if (plan := self._plan_folder(f, sigs[f])) is not None]
            self._insert_planned(plans)
            for plan in plans:
                self._finish_folder(plan)
            self._remember_pins(plans)
            self._outside = set()
            for f in set(rows) - set(folders):
                self._drop_folder(f)
            self._count_entries()
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise

    def _pin_indexes(self) -> None:
        """On Box: find the big folders' indexes by file id before anything lists a folder (the
        ids remembered by the last refresh; none remembered: Box search finds them)."""
        self._pinned: dict[str, str] = {}
        store = as_unlisted_reads(self.ws.store)
        if store is None:
            return
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'pins'").fetchone()
        known = orjson.loads(row[0]) if row is not None else None
        self._pinned = store.pin_indexes(known if isinstance(known, dict) else None)

    def _remember_pins(self, plans: list[_Plan]) -> None:
        """Record, for the next refresh, the index file id of every big Box folder re-read now."""
        if as_unlisted_reads(self.ws.store) is None:
            return
        row = self.conn.execute("SELECT v FROM meta WHERE k = 'pins'").fetchone()
        pins = orjson.loads(row[0]) if row is not None else {}
        pins = dict(pins) if isinstance(pins, dict) else {}
        for plan in plans:
            fid = self._pinned.get(plan.folder)
            if fid is None and plan.entries > PIN_MIN_ENTRIES:
                st = self.ws.store.stat(join(plan.folder, INDEX_NAME))  # listed already
                fid = st.file_id if st is not None else None
            if fid is not None and plan.entries > PIN_MIN_ENTRIES:
                pins[plan.folder] = fid
            else:
                pins.pop(plan.folder, None)
        self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('pins', ?)", (orjson.dumps(pins).decode(),))

    def _folder_rows(self) -> dict[str, tuple[Any, Any, str, Any]]:
        return {
            r[0]: (r[1], r[2], r[3], r[4])
            for r in self.conn.execute("SELECT folder, index_sig, dir_sig, warnings, files_sig FROM folders")
        }

    def _drop_folder(self, folder: str) -> None:
        db = self.conn
        rids = [r[0] for r in db.execute("SELECT rid FROM entries WHERE folder = ?", (folder,))]
        self._delete_rids(rids)
        db.execute("DELETE FROM folders WHERE folder = ?", (folder,))
        self.stats.removed += len(rids)

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
        pinned = folder in self._pinned  # on Box: read through its index, never listed
        local = None if pinned else as_batch_reads(ws.store)
        digest = None
        try:
            idx = load_index(ws, folder)
            if local is not None:
                # The stats the listing was made from give the folder's files digest (as
                # `folder_stats` makes it), taken before any file is read: a file changed after
                # this shows as a changed digest next time, and its stat as changed since its read.
                found, stats = local.list_dir_stats(folder)
                digest = stats_digest(st for name, st in stats.items() if _memory_name(name))
            else:
                found = [] if pinned else ws.store.list_dir(folder)
            listing = [e for e in found if not e.is_dir and is_memory_file(e.name)]
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
        if pinned:
            pass  # no listing: what only a listing shows is checked where a folder is listed
        elif idx.existed:
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
        # A folder none of whose memories the cache held (a cold build, a new folder): every file
        # is read below, so the listing's digest is one of files all read after it was taken.
        # With memories kept from before, their files must be compared one by one first.
        fresh = not old
        todo: list[tuple[dict[str, Any], str, str, bytes, str | None]] = []
        replaced: list[int] = []
        seen: set[str] = set()
        for ent in idx.entries:
            mid = str(ent.get("id") or "")
            if not mid or mid in seen:
                continue
            seen.add(mid)
            sig, path = entry_digest(ent), _entry_path(folder, ent)
            file_sig = stat_of.get(path.rsplit("/", 1)[-1]) if path.startswith(folder + "/") else None
            prev = old.pop(mid, None)
            if prev is not None and prev[1] == sig and (pinned or prev[2] == file_sig):
                # (Not listed: the same index entry is the same memory, its body kept as held.)
                if prev[3] and not self._disagrees(ent, path):
                    # Changed in place earlier; the index written since agrees with the file now.
                    db.execute("UPDATE src SET drift = 0 WHERE rid = ?", (prev[0],))
                continue
            if prev is not None:
                replaced.append(prev[0])
                if prev[1] == sig:  # the same index entry, another file: changed in place
                    self._outside.add((folder, mid))
            todo.append((ent, mid, path, sig, file_sig))
        self._delete_rids([v[0] for v in old.values()] + replaced)
        self.stats.removed += len(old)
        team = ws.folder_team(folder)
        return _Plan(folder, team, sigs, warnings, todo, len(seen), digest if fresh else None)

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
        self._plan_bodies(items)
        from box_memory.progress import task  # a build's bar: a warm recall reads no file

        bulk = self.begin_bulk(len(items))
        with task("Recall cache: reading memory files", total=len(items), unit="memories") as bar:
            for start in range(0, len(items), BATCH):
                self._insert(items[start : start + BATCH])
                bar.advance(len(items[start : start + BATCH]))
        if bulk:
            self.end_bulk()

    def _plan_bodies(self, items: list[tuple[str, str, Todo]]) -> None:
        """On Box: fetch the bodies to read when they are few (EAGER_READS), concurrently - by
        listing in a listed folder, by file id in a pinned one - else leave the ones this machine
        does not hold pending (a cold build of a big workspace reads its indexes only)."""
        self._defer, self._fetched = set(), {}
        store = self.ws.store
        if store.local_root is not None:
            return  # local: read as always (a Box Drive placeholder is left pending by its stat)
        listed, by_id = [], {}
        for folder, _team, t in items:
            path = t[2]
            if folder in self._pinned:
                fid = t[0].get("file_id")
                by_id[path] = str(fid) if fid else None
            elif store.read_if_local(path) is None:
                listed.append(path)
        if len(listed) + len(by_id) > EAGER_READS:
            self._defer = set(listed) | set(by_id)
            return
        if listed:
            store.prefetch(listed)
        reads = as_unlisted_reads(store)
        wanted: dict[str, str | None] = {fid: None for fid in by_id.values() if fid}
        got = reads.fetch_bodies(wanted) if reads is not None and wanted else {}
        for path, fid in by_id.items():
            if fid is not None and fid in got:
                self._fetched[path] = got[fid]
            else:
                self._defer.add(path)  # no listing to read it by: left for a search or a fill

    def _finish_folder(self, plan: _Plan) -> None:
        """Record a re-read folder's signatures and warnings (none kept when a file could not be
        read: the folder is read again next time)."""
        folder, sigs, warnings = plan.folder, plan.sigs, plan.warnings
        unreadable = [msg for f, msg in self.unreadable if f == folder]
        warnings += [f"{msg} (recall uses its index entry only)" for msg in unreadable]
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
        # Its files' digest, when every file was read as plain and none had changed so recently
        # that its stat may not show a next change (racy): then `_check_files` has nothing to
        # compare at the end of this refresh, and the next one compares digests. Otherwise the
        # files are compared one by one, as for a folder never compared.
        digest = plan.digest
        if unread or denied or unreadable or folder in self._racy:
            digest = None
        if digest is not None:
            self._settled.add(folder)
        self.conn.execute(
            "INSERT OR REPLACE INTO folders(folder, index_sig, dir_sig, warnings, files_sig) "
            "VALUES (?, ?, ?, ?, ?)",
            (folder, sigs[0], sigs[1], orjson.dumps(warnings).decode(), digest),
        )

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
                    self._insert([(folder, team, (ent, mid, path, entry_digest(ent), file_sig))])
                    if self.unreadable or self._unread or self._denied:  # a refresh warns: leave it to one
                        raise sqlite3.OperationalError("written memory unreadable for the recall cache")
                sigs = (signature(ws, join(folder, INDEX_NAME)), signature(ws, folder))
                # files_sig: the folder's files are compared one by one again next time (a file
                # another program changed before this write must not be taken for current), unless
                # a watch has the folder: such a change is an event the next call reads.
                root, watch = ws.store.local_root, self.watch
                where = os.path.join(root, folder) if root is not None else ""  # noqa: PTH118
                watched = watch is not None and bool(where) and watch.watching(where)
                db.execute(
                    "UPDATE folders SET index_sig = ?, dir_sig = ?, "
                    "files_sig = CASE WHEN ? THEN files_sig END WHERE folder = ?",
                    (*sigs, watched, folder),
                )
                done += 1
            self._count_entries()
            db.execute("COMMIT")
        except BaseException:
            rollback(db)
            raise
        return done


class _Plan:
    """A folder to re-read: what `_plan_folder` found, for `_insert_planned` and `_finish_folder`;
    `entries`: the entries its index holds. (A plain class: a NamedTuple is built at import, ~0.3
    ms of every recall's start, and only a refresh that re-reads a folder makes one.)"""

    __slots__ = ("digest", "entries", "folder", "sigs", "team", "todo", "warnings")

    def __init__(
        self,
        folder: str,
        team: str,
        sigs: tuple[str | None, str | None],
        warnings: list[Any],
        todo: list[Todo],
        entries: int = 0,
        digest: str | None = None,
    ) -> None:
        self.folder = folder
        self.team = team
        self.sigs = sigs
        self.warnings = warnings
        self.todo = todo
        self.entries = entries
        self.digest = digest  # a folder read whole: its files' digest as listed (`stats_digest`)


def _entry_path(folder: str, ent: dict[str, Any]) -> str:
    return entry_path(folder, ent)
