"""The first recall after a write into a large folder, and the write itself, cold processes.

Usage: python bench/after_write_bench.py [--size 100000] [--runs 7] [--out DIR]
                                         [--python PY] [--baseline-python PY]

Uses the corpus of `bench/recall_bench.py` (`DIR/ws-N`; at 100k its `memories/` folder holds 40,000
memories). Each round, for each interpreter in turn (its own BOX_MEMORY_HOME, so its own recall
cache): an untimed recall brings its cache up to date with the other interpreter's writes; then a
timed `python -m box_memory write ... --quiet` into `memories/`, then the timed first recall after
it (`recall zanzibar --json`), then a second recall (the warm figure, for reference). Reported: wall
p50 (p90) and the median CPU time of the child (user + system), the steadier figure on a shared
machine. Run from a
folder outside any checkout, so each interpreter imports its own installed box_memory. The corpus
keeps the writes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serve_bench import _env, _pct, add_build_args, builds, corpus  # noqa: E402


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU (user + system of the child) milliseconds of one process."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=7)
    add_build_args(ap)
    args = ap.parse_args()
    pythons = builds(args)
    ws, _ = corpus(args.size, args.out)
    print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
    envs = {name: _env(args.out / f"home-after-write-{args.size}" / name) for name in pythons}
    times: dict[str, dict[str, list[tuple[float, float]]]] = {
        n: {"write": [], "first": [], "warm": []} for n in pythons
    }
    for i in range(args.runs):
        for name, py in pythons.items():
            recall = [py, "-m", "box_memory", "recall", "zanzibar", "-w", str(ws), "--json"]
            _run(recall, envs[name], ws)  # untimed: catch up with the other interpreter's writes
            write = [
                py, "-m", "box_memory", "write", f"Bench note {i} about the zanzibar queue.",
                "--title", f"Bench after-write {name} {time.time_ns()}", "-w", str(ws), "--quiet",
            ]  # fmt: skip
            times[name]["write"].append(_run(write, envs[name], ws))
            times[name]["first"].append(_run(recall, envs[name], ws))
            times[name]["warm"].append(_run(recall, envs[name], ws))
    lines = [
        "| memories in memories/ | step | "
        + " | ".join(f"{n} wall p50 (p90) ms | {n} cpu p50 ms" for n in pythons)
        + " |",
        "|---:|---|" + "---:|---:|" * len(pythons),
    ]
    n_folder = int(args.size * 0.4)
    for step, label in (
        ("write", "write"),
        ("first", "first recall after the write"),
        ("warm", "next recall"),
    ):
        cells = []
        for n in pythons:
            wall, cpu = [w for w, _ in times[n][step]], [c for _, c in times[n][step]]
            cells.append(
                f"{statistics.median(wall):.0f} ({_pct(wall, 0.9):.0f}) | {statistics.median(cpu):.0f}"
            )
        lines.append(f"| {n_folder:,} | {label} | " + " | ".join(cells) + " |")
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
