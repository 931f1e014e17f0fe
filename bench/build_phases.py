"""Where a cold recall-cache build's CPU goes: its phases and each SQL statement, in one process.

Usage: python bench/build_phases.py WORKSPACE [QUERY]

One `box-memory recall QUERY -w WORKSPACE --json` in this process with an empty BOX_MEMORY_HOME
(so the recall cache is built from nothing), with the refresh's phases (`RecallCache._plan_folder`,
`_insert`, `end_bulk`, `_check_files`, ...) and every statement the cache's connection runs timed by
`time.process_time` (statements grouped by their first words; `executemany` by its SQL's start).
WORKSPACE is a local folder or a `box:` spec (then BOX_MCP_URL and a token must point at a server,
as `bench/cold_recall_bench.py` sets up). Printed to stderr, largest first, in ms. The timers add
a little per call (~1 us), so the phases are a few percent high; compare runs with each other.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

T: dict[str, float] = {}


def _add(key: str, since: float) -> None:
    T[key] = T.get(key, 0.0) + time.process_time() - since


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*a: Any, **k: Any) -> Any:
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            _add(name, t)

    return run


class _Timed:
    """The cache's connection, each statement timed."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, *args: Any) -> Any:
        t = time.process_time()
        try:
            return self._db.execute(sql, *args)
        finally:
            _add("sql " + " ".join(sql.split()[:3])[:40], t)
            _add("(all SQL)", t)

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = rows if isinstance(rows, list) else list(rows)
        t = time.process_time()
        try:
            return self._db.executemany(sql, rows)
        finally:
            _add("many " + sql[:40], t)
            _add("(all SQL)", t)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    home = tempfile.mkdtemp(prefix="build-phases-")
    os.environ["BOX_MEMORY_HOME"] = home
    started = time.process_time()
    from box_memory.recall import cache_db, cache_refresh

    opened = cache_db.CacheDB.open

    def open_timed(self: Any, *a: Any, **k: Any) -> None:
        opened(self, *a, **k)
        self.db = _Timed(self.db)

    cache_db.CacheDB.open = open_timed  # type: ignore[method-assign]
    for name in ("refresh", "_update", "_plan_folder", "_insert", "end_bulk", "_check_files", "_plan_bodies"):
        setattr(cache_refresh.RecallCache, name, _timed(name, getattr(cache_refresh.RecallCache, name)))
    from box_memory.cli import app

    _add("imports", started)
    query = sys.argv[2] if len(sys.argv) > 2 else "warm up"
    sys.argv = ["box-memory", "recall", query, "-w", sys.argv[1], "--json"]
    t = time.process_time()
    with contextlib.suppress(SystemExit):
        app.main()
    _add("the command", t)
    for key, value in sorted(T.items(), key=lambda kv: -kv[1]):
        print(f"{value * 1000:9.1f} ms  {key}", file=sys.stderr)
    shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
