"""The `brain` command group's services over the local Box Brain store: sources and their runs,
items and review candidates. Each returns a `Result`; `cli/brain_cmd.py` renders it. Reading
commands never create the store (no store yet is an empty answer); acting on a candidate or a
source without one is `not_found`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from box_memory.brain.db import (
    CANDIDATE_STATUSES,
    ITEM_STATUSES,
    SQLITE_MAX_INT,
    BrainStore,
    default_path,
)
from box_memory.errors import InvalidInput, NotFound
from box_memory.result import Result


def open_store(create: bool = False) -> BrainStore | None:
    if not create and not default_path().exists():
        return None
    return BrainStore(create=True)


def _source_id(store: BrainStore, ref: str | None) -> int | None:
    return None if ref is None else int(store.find_source(ref).id)


def _limit(n: int) -> int:
    """A row limit: at least 1; more than SQLite can count means "all of them"."""
    if n < 1:
        raise InvalidInput("--limit must be at least 1")
    return min(n, SQLITE_MAX_INT)


def candidate_id(text: str) -> int:
    """A review candidate id as typed (`7`, `#7`): ASCII digits naming a row SQLite can hold."""
    raw = text.strip().removeprefix("#")
    if not (raw.isascii() and raw.isdigit()):
        raise InvalidInput(f"review candidate ids are numbers (see `box-memory brain review`), not {text!r}")
    raw = raw.lstrip("0") or "0"
    if len(raw) > len(str(SQLITE_MAX_INT)) or int(raw) > SQLITE_MAX_INT:
        shown = raw if len(raw) <= 30 else raw[:30] + "..."
        raise NotFound(f"no review candidate {shown}: ids stop at {SQLITE_MAX_INT}")
    return int(raw)


def status() -> Result:
    """Every source with its settings, item counts, due time and candidates to review."""
    from box_memory.brain.sync import is_due

    path = default_path()
    store = open_store()
    data: dict[str, Any] = {"store": str(path), "exists": store is not None, "sources": []}
    if store is None:
        return Result(data)
    with store:
        now = dt.datetime.now(dt.UTC)
        for s in store.sources():
            due, due_at = is_due(s, now)
            info = s.to_dict()
            info["items"] = store.item_counts(s.id)
            info["due"] = due
            info["next_due_at"] = (
                due_at.isoformat(timespec="seconds").replace("+00:00", "Z") if due_at else None
            )
            info["proposed_candidates"] = len(
                store.candidates(status="proposed", source_id=s.id, limit=10000)
            )
            info["enabled"] = s.settings.enabled
            info["last_run_counts"] = _last_counts(store, s.id)
            data["sources"].append(info)
    data["size_bytes"] = path.stat().st_size
    return Result(data)


LAST_RUN_COUNTS = ("indexed", "unchanged", "deleted", "failed")


def _last_counts(store: BrainStore, source_id: int) -> dict[str, int] | None:
    """The last run's indexed/unchanged/deleted/failed counts; None before the first run or when
    the last one failed (or is still going) without counting anything."""
    last = store.runs(source_id=source_id, limit=1)
    counts = last[0]["counts"] if last else {}
    if not counts:
        return None
    return {k: int(counts.get(k, 0)) for k in LAST_RUN_COUNTS}


def runs(source: str | None = None, limit: int = 20) -> Result:
    store = open_store()
    if store is None:
        return Result({"runs": []})
    with store:
        return Result({"runs": store.runs(source_id=_source_id(store, source), limit=_limit(limit))})


def items(source: str | None = None, status: str | None = None, limit: int = 100) -> Result:
    if status is not None and status not in ITEM_STATUSES:
        raise InvalidInput(f"unknown item status {status!r} (expected one of: {', '.join(ITEM_STATUSES)})")
    store = open_store()
    if store is None:
        return Result({"items": []})
    with store:
        rows = store.item_rows(source_id=_source_id(store, source), status=status, limit=_limit(limit))
    return Result({"items": rows})


def candidates(source: str | None = None, status: str = "proposed", limit: int = 100) -> Result:
    if status != "all" and status not in CANDIDATE_STATUSES:
        raise InvalidInput(f"unknown candidate status {status!r} (proposed, accepted, rejected or all)")
    store = open_store()
    if store is None:
        return Result({"candidates": []})
    with store:
        rows = store.candidates(
            status=None if status == "all" else status,
            source_id=_source_id(store, source),
            limit=_limit(limit),
        )
    return Result({"candidates": rows})


def existing_store(what: str) -> BrainStore:
    store = open_store()
    if store is None:
        raise NotFound(f"{what} (no Box Brain store yet)")
    return store


def purge(source: str) -> Result:
    """Forget a source: its entries, items, runs and candidates (Box itself is never touched)."""
    with existing_store(f"no Box Brain source {source!r}") as store:
        src = store.find_source(source)
        removed = store.purge_source(src)
    return Result({"source": src.to_dict(), "removed": removed})


def set_enabled(source: str, enabled: bool) -> Result:
    with existing_store(f"no Box Brain source {source!r}") as store:
        src = store.find_source(source)
        src = store.save_settings(src, src.settings.updated({"enabled": enabled}))
    return Result({"source": src.to_dict()})
