"""Getting at a workspace's recall cache: opened per call, kept open by `serve`, updated by writes.

A call opens the cache and refreshes it (`with_cache`); a long-lived process keeps it open between
calls (`keep_open`); a write this process makes brings it along (`before_write`, `after_write`).

A missing, foreign or corrupt database is rebuilt transparently; a database that cannot be opened
at all (read-only cache dir, held lock) falls back to an in-memory one for that call.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from box_memory.errors import BoxMemoryError
from box_memory.recall.cache_db import SCHEMA_VERSION, Refresh, cache_path, remove_db, signature
from box_memory.recall.cache_refresh import RecallCache
from box_memory.store.base import join
from box_memory.workspace.resolve import INDEX_NAME, Workspace

T = TypeVar("T")


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
            remove_db(path)
        except OSError:
            break
    with _opened(ws, ":memory:") as (cache, warnings):
        note = f"recall cache {path} is unusable; answered from a temporary in-memory copy"
        return fn(cache, [*warnings, note])
