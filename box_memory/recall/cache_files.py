"""The recall cache's check of memory files edited in place (local workspaces).

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

import os
from typing import Any

import orjson

from box_memory.errors import BoxMemoryError
from box_memory.recall.cache_db import (
    CacheDB,
    Todo,
    as_indexed,
    body_digest,
    differs,
    entry_digest,
    recorded_stat,
    rollback,
    stat_signature,
)


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
