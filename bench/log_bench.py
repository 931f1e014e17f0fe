"""`log` against a structured recall (`recall --kind decision`) on one corpus, as fresh processes.

Usage: python bench/log_bench.py [--size 10000] [--runs 15] [--out DIR]

The corpus is bench/corpus.py's (DIR/ws-N, reused when present). Every timed command is a fresh
`python -m box_memory ... --json` process run from the corpus folder, after one untimed run of each
(the recall cache built, the OS file cache warm). Rounds interleave `--version`, `recall --kind
decision` and the `log` variants so all see the same machine. Reported: wall p50 (p90), the child's
CPU p50, and the goal's ratio of `log` to the structured recall (at most 2x).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.after_write_bench import _run  # noqa: E402
from bench.serve_bench import _env, _pct, corpus  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--out", type=Path, default=Path("/tmp/bm-bench"))
    a = ap.parse_args()
    ws, _ = corpus(a.size, a.out)
    env = _env(a.out / f"home-log-{a.size}")
    py = sys.executable
    base = [py, "-m", "box_memory"]
    shapes = {
        "--version": [*base, "--version"],
        "recall --kind decision": [*base, "recall", "--kind", "decision", "-w", str(ws), "--json"],
        "log": [*base, "log", "-w", str(ws), "--json"],
        "log --kind decision": [*base, "log", "--kind", "decision", "-w", str(ws), "--json"],
        "log --since 2026-01-01": [*base, "log", "--since", "2026-01-01", "-w", str(ws), "--json"],
        "log --limit 10000": [*base, "log", "--limit", "10000", "-w", str(ws), "--json"],
    }
    for cmd in shapes.values():
        _run(cmd, env, ws)
    got: dict[str, list[tuple[float, float]]] = {s: [] for s in shapes}
    for _ in range(a.runs):
        for shape, cmd in shapes.items():
            got[shape].append(_run(cmd, env, ws))
    recall_wall = statistics.median(w for w, _ in got["recall --kind decision"])
    print(f"corpus: {a.size:,} memories ({ws}); {a.runs} runs; python {sys.version.split()[0]}")
    print("| command | wall p50 (p90) ms | CPU p50 ms | / recall --kind |")
    print("|---|---|---|---|")
    for shape in shapes:
        walls = [w for w, _ in got[shape]]
        wall = statistics.median(walls)
        cpu = statistics.median(c for _, c in got[shape])
        print(f"| {shape} | {wall:.0f} ({_pct(walls, 0.9):.0f}) | {cpu:.0f} | {wall / recall_wall:.2f}x |")


if __name__ == "__main__":
    main()
