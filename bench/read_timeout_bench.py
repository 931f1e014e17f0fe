"""What the read timeout costs: a cold recall-cache build (every memory file read once).

Usage: python bench/read_timeout_bench.py [--size 10000] [--runs 7] [--out DIR] [--baseline-src DIR]

The same corpus (bench/corpus.py, under DIR/Box/ws) is recalled by a fresh
`python -m box_memory recall zanzibar -w WS --json` process with its recall cache deleted, with
HOME set two ways: HOME=DIR makes DIR/Box a Box Drive folder (`names.box_drive_roots`), so every
read is timed on a worker thread; HOME=DIR/elsewhere leaves the workspace outside Box Drive, so
reads stay in the calling thread. With --baseline-src (a checkout without the timeout, e.g. the
main branch before it) two more rows run that code on the same corpus, both ways. Rows run
interleaved, round by round; reported are wall and CPU (user + system of the child) medians in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import generate  # noqa: E402


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    shutil.rmtree(Path(env["BOX_MEMORY_HOME"]) / "cache", ignore_errors=True)
    before = os.times()
    t = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, check=True)
    wall = (time.perf_counter() - t) * 1000
    after = os.times()
    cpu = (after.children_user - before.children_user + after.children_system - before.children_system) * 1000
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path("/tmp/box-memory-read-timeout-bench"))
    ap.add_argument("--baseline-src", type=Path, default=None)
    args = ap.parse_args()
    ws = args.out / "Box" / "ws"
    if not ws.exists():
        generate(args.size, ws)
    (args.out / "elsewhere").mkdir(exist_ok=True)
    cmd = [sys.executable, "-m", "box_memory", "recall", "zanzibar", "-w", str(ws), "--json"]
    base = {k: v for k, v in os.environ.items() if not k.startswith("BOX_MEMORY_")}
    outside, inside = str(args.out / "elsewhere"), str(args.out)
    rows: dict[str, dict[str, str]] = {
        "this code, outside Box Drive (reads inline)": {"HOME": outside, "PYTHONPATH": str(ROOT)},
        "this code, inside Box Drive (reads timed)": {"HOME": inside, "PYTHONPATH": str(ROOT)},
    }
    if args.baseline_src:
        rows["before, outside Box Drive"] = {**rows["this code, outside Box Drive (reads inline)"]}
        rows["before, inside Box Drive"] = {**rows["this code, inside Box Drive (reads timed)"]}
        for name in ("before, outside Box Drive", "before, inside Box Drive"):
            rows[name]["PYTHONPATH"] = str(args.baseline_src)
    envs = {
        name: {**base, **extra, "BOX_MEMORY_HOME": str(args.out / f"home-{i}")}
        for i, (name, extra) in enumerate(rows.items())
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in envs}
    for env in envs.values():
        _run(cmd, env)  # warm the OS file cache, untimed
    for _ in range(args.runs):
        for name, env in envs.items():
            results[name].append(_run(cmd, env))
    print(f"| {args.size:,} memories, cold recall cache | wall ms (median) | CPU ms (median) |")
    print("|---|---:|---:|")
    for name, got in results.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(f"| {name} | {wall:.0f} | {cpu:.0f} |")


if __name__ == "__main__":
    main()
