"""What the recall cache's per-file freshness check costs per recall, at 10k memories and more.

Usage: python bench/freshness_bench.py [--sizes 10000] [--runs 51] [--out DIR]

For each size, the corpus of `bench/recall_bench.py` (bench/corpus.py, seed 7) under DIR is reused
or generated, and its recall cache built once (untimed). Then, in this process, on one open cache
(as `serve` keeps it; a CLI recall does the same work after opening the database), timed per run:

- `refresh (folder signatures only)`: `RecallCache.refresh` with the per-file check turned off, the
  cost before the check existed;
- `refresh (with per-file check)`: `RecallCache.refresh` as shipped: one `scandir` per folder, one
  stat per memory file, one digest compare per folder;
- `floor: one os.stat per memory file`: the stat calls alone, on paths built in advance, the least
  any per-file check can cost;
- `refresh after one in-place edit`: one memory file rewritten in place (same size, mtime set back)
  before each run: the folder's files are compared one by one and the file read again.

Reported: wall p50 and p90 and CPU p50 (this process's user + system time) in milliseconds, and
the check's extra cost (p50 with minus p50 without).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serve_bench import _pct, corpus  # noqa: E402


def _time(
    fn: Callable[[], object], runs: int, before: Callable[[], object] | None = None
) -> tuple[list[float], list[float]]:
    """(wall ms, CPU ms) per run: on a shared machine CPU time is the steadier figure."""
    wall, cpu = [], []
    for _ in range(runs):
        if before is not None:
            before()
        c, t = time.process_time(), time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    return wall, cpu


def bench_size(n: int, out: Path, runs: int) -> list[str]:
    ws_path, _ = corpus(n, out)
    os.environ["BOX_MEMORY_HOME"] = str(out / f"home-fresh-{n}")
    from box_memory.recall.cache_db import RACY_NS, cache_path
    from box_memory.recall.cache_refresh import RecallCache
    from box_memory.workspace.resolve import open_workspace

    ws = open_workspace(str(ws_path))
    cache = RecallCache(ws, cache_path(ws))
    cache.open()
    cache.refresh()  # untimed: builds the cache
    time.sleep(RACY_NS / 1e9)  # past the racy window of the files just read
    cache.refresh()
    paths = [os.path.join(ws_path, p) for (p,) in cache.conn.execute("SELECT path FROM entries")]
    real_check = RecallCache._check_files

    def without() -> None:
        RecallCache._check_files = lambda self, folders, rows, events: False  # type: ignore[method-assign]
        try:
            cache.refresh()
        finally:
            RecallCache._check_files = real_check  # type: ignore[method-assign]

    def floor() -> None:
        for p in paths:
            os.stat(p)

    target = Path(paths[len(paths) // 2])
    flip = [b"a", b"b"]

    def edit() -> None:
        st = target.stat()
        raw = bytearray(target.read_bytes())
        raw[-2:-1] = flip[0]
        flip.reverse()
        with target.open("r+b") as f:
            f.write(bytes(raw))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))

    before = _time(without, runs)
    after = _time(cache.refresh, runs)
    stats = _time(floor, runs)
    edited = _time(cache.refresh, max(5, runs // 5), before=edit)
    cache.close()
    rows = []
    for name, (wall, cpu) in (
        ("refresh (folder signatures only)", before),
        ("refresh (with per-file check)", after),
        (f"floor: one os.stat per memory file ({len(paths):,})", stats),
        ("refresh after one in-place edit", edited),
    ):
        rows.append(
            f"| {n:,} | {name} | {statistics.median(wall):.2f} | {_pct(wall, 0.9):.2f} "
            f"| {statistics.median(cpu):.2f} |"
        )
    extra = [statistics.median(after[i]) - statistics.median(before[i]) for i in (0, 1)]
    rows.append(f"| {n:,} | per-file check, extra per recall (p50) | {extra[0]:.2f} | | {extra[1]:.2f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--runs", type=int, default=51)
    ap.add_argument(
        "--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "box-memory-recall-bench"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
    rows = ["| memories | what | wall p50 ms | wall p90 ms | cpu p50 ms |", "|---:|---|---:|---:|---:|"]
    for n in (int(s) for s in args.sizes.split(",")):
        rows += bench_size(n, args.out, args.runs)
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
