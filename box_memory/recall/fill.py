"""`box-memory fetch`: bring the text of every memory the recall cache holds only by its index
entry onto this machine, paced under Box's per-user rate limit.

A first recall on a big Box workspace reads the indexes only (cache_refresh: bodies `pending`),
and a Box Drive placeholder is never read by recall. This fills those bodies so that every later
recall searches all the text locally, with no Box search and no lag:

- on Box: each folder holding pending bodies is listed once (its files' ids and sha1s, a call per
  page), then the files are fetched a few at a time, every call first taking a slot from one
  `CallPacer` (brain/pace.py: 95% of Box's published 1,000 calls a minute by default, so no
  60-second window holds more than the budget; a chunk of CHUNK calls takes its slots at once, so
  its calls' time overlaps the wait for the next chunk). Text is kept only when it hashes to the listed
  sha1. Newest memories first, so an interrupted run has filled the ones recall meets most;
- on Box Drive: the placeholders are read, which makes Box Drive download them (that is what the
  command is asked for), unpaced: Box Drive does the transfer.

Bodies are added to the cache in batches, each committed, so an interrupted run keeps what it
fetched and the next run goes on from there. The run says up front how many calls it plans and
how long they take at that pace; it has no command deadline (long by design).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from box_memory.brain.pace import DEFAULT_CALLS_PER_MINUTE, CallPacer, duration
from box_memory.progress import task
from box_memory.recall.cache import with_cache
from box_memory.recall.cache_db import NOT_FETCHED, ONLINE_ONLY
from box_memory.recall.cache_refresh import RecallCache
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

CHUNK = 8  # files fetched concurrently, each after its own pacer slot
HOLD_EVERY = 200  # bodies added to the cache per committed batch
PAGE = 1000  # entries a listing page holds (settings.list_limit's default)


@dataclass(frozen=True)
class FillRequest:
    calls_per_minute: float | None = DEFAULT_CALLS_PER_MINUTE  # None or 0: unpaced
    limit: int | None = None  # at most this many bodies (newest first)
    notice: Callable[[str], None] | None = None  # the plan line, before any fetch


def fetch_text(ws: Workspace, req: FillRequest) -> Result:
    """Fill the pending bodies of `ws`'s recall cache (see the module doc)."""
    return with_cache(ws, lambda cache, warnings: _fill(ws, cache, req, warnings))


def _fill(ws: Workspace, cache: RecallCache, req: FillRequest, warnings: list[str]) -> Result:
    rows = cache.conn.execute(
        "SELECT e.rid, e.path, s.pending FROM entries e JOIN src s ON s.rid = e.rid "
        "WHERE s.pending > 0 ORDER BY e.rid DESC"
    ).fetchall()
    pending = len(rows)
    if req.limit is not None:
        rows = rows[: max(0, req.limit)]
    local = ws.store.local_root is not None
    rate = req.calls_per_minute if (req.calls_per_minute or 0) > 0 and not local else None
    pacer = CallPacer(rate) if rate else None
    folders: dict[str, int] = {}
    for _rid, path, kind in rows:
        if kind == NOT_FETCHED:
            folder = path.rpartition("/")[0]
            folders[folder] = folders.get(folder, 0) + 1
    listed = _folder_sizes(cache, folders)
    planned = len(rows) + sum(math.ceil(max(1, n) / PAGE) for n in listed.values())
    if rows and req.notice is not None:
        where = "Box Drive" if local else "Box"
        pace = f" at {rate:g} calls a minute: {duration(pacer.estimate_s(planned))}" if pacer else ""
        req.notice(f"Fetching the text of {len(rows)} memories from {where} ({planned} calls{pace})")
    started = time.monotonic()
    fetched = failed = 0
    done: dict[int, bytes] = {}
    with task("Fetching memory text", total=len(rows), unit="memories") as bar:
        for folder, n in listed.items():
            if pacer is not None:
                pacer.acquire(math.ceil(max(1, n) / PAGE))
            ws.store.list_dir(folder)  # the files' ids and sha1s: fetched by id from here on
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            paths = [p for _r, p, kind in chunk if kind == NOT_FETCHED]
            if pacer is not None:
                pacer.acquire(len(chunk))  # the chunk's calls go at once: see CallPacer.acquire
            if len(paths) > 1:
                ws.store.prefetch(paths)
            for rid, path, kind in chunk:
                raw = _read(ws, path, downloaded=kind == ONLINE_ONLY or len(paths) < 2)
                if raw is None:
                    failed += 1
                    continue
                done[rid] = raw
            bar.advance(len(chunk))
            if len(done) >= HOLD_EVERY:
                fetched += cache.hold(done)
                done = {}
        fetched += cache.hold(done)
    seconds = time.monotonic() - started
    calls = pacer.granted if pacer is not None else None
    data: dict[str, Any] = {
        "fetched": fetched,
        "failed": failed,
        "remaining": pending - fetched,
        "planned_calls": planned if rows else 0,
        "seconds": round(seconds, 1),
        "pace": {
            "calls_per_minute": rate,
            "calls": calls,
            "achieved_per_minute": round(calls / seconds * 60, 1) if calls and seconds > 0 else None,
            "held_s": round(pacer.held_s, 1) if pacer is not None else None,
        },
    }
    more = [f"{failed} memories could not be fetched; run `box-memory fetch` again"] if failed else []
    return Result(data, [*warnings, *more])


def _folder_sizes(cache: RecallCache, folders: dict[str, int]) -> dict[str, int]:
    """Each folder holding pending Box bodies with the number of entries a listing of it pages
    through (all its memories, not only the pending ones)."""
    out: dict[str, int] = {}
    for folder in folders:
        (n,) = cache.conn.execute(
            "SELECT count(*) FROM entries WHERE path > ? AND path < ?", (folder + "/", folder + "0")
        ).fetchone()
        out[folder] = int(n)
    return out


def _read(ws: Workspace, path: str, *, downloaded: bool) -> bytes | None:
    """The file's bytes: from what was just fetched (the content cache), else read (one call on
    Box; on Box Drive a download). None when it cannot be read now."""
    from box_memory.errors import BoxMemoryError

    raw = ws.store.read_if_local(path)
    if raw is not None or not downloaded:
        return raw
    try:
        return ws.store.read_bytes(path)
    except (BoxMemoryError, OSError):
        return None
