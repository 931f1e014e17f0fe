"""Recall at 10k, before vs after a change: two code trees, one corpus, interleaved cold processes.

Usage: python bench/recall_ab.py BEFORE_TREE AFTER_TREE [RUNS] [--out DIR]

Each timed recall is a fresh `python -m box_memory recall QUERY -w WS --json` process with
PYTHONPATH set to one tree; both trees alternate query by query, round by round (the order flips
every round), each with its own warm recall cache. Reported per query: wall-clock median and the
median CPU time of the child (user + system), the steadier number on a shared machine.
Trees are plain checkouts, e.g. `git archive main | tar -x -C /tmp/before`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import generate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("runs", nargs="?", type=int, default=21)
    ap.add_argument("--out", default="/tmp/box-memory-recall-ab")
    a = ap.parse_args()
    out = Path(a.out)
    ws = out / "ws-10000"
    if not (ws / "manifest.json").exists():
        generate(10000, ws)
    m = orjson.loads((ws / "manifest.json").read_bytes())
    queries = [
        m["probe_id"],
        "kind:decision tag:auth",
        "what did we decide about kafka retry",
        m["probe_body_word"],
    ]
    sides = {}
    for name, tree in (("before", a.before), ("after", a.after)):
        env = dict(os.environ, PYTHONPATH=tree, BOX_MEMORY_HOME=str(out / f"home-{name}"))
        env.pop("BOX_MEMORY_WORKSPACE", None)
        sides[name] = env
    argv = [sys.executable, "-m", "box_memory", "recall", "", "-w", str(ws), "--json"]
    for env in sides.values():  # warm the OS file cache and each side's recall cache
        for q in queries:
            subprocess.run([*argv[:4], q, *argv[5:]], env=env, capture_output=True, check=True)
    wall = {(s, q): [] for s in sides for q in queries}
    cpu = {(s, q): [] for s in sides for q in queries}
    for r in range(a.runs):
        for q in queries:
            for s in ("before", "after") if r % 2 == 0 else ("after", "before"):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t = time.perf_counter()
                subprocess.run([*argv[:4], q, *argv[5:]], env=sides[s], capture_output=True, check=True)
                wall[(s, q)].append((time.perf_counter() - t) * 1000)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[(s, q)].append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000)
    print("| query | wall p50 before | after | cpu p50 before | after | cpu diff |")
    print("|---|---|---|---|---|---|")
    for q in queries:
        wb, wa = statistics.median(wall[("before", q)]), statistics.median(wall[("after", q)])
        cb, ca = statistics.median(cpu[("before", q)]), statistics.median(cpu[("after", q)])
        print(f"| `{q[:40]}` | {wb:.0f} | {wa:.0f} | {cb:.1f} | {ca:.1f} | {ca - cb:+.1f} |")


if __name__ == "__main__":
    main()
