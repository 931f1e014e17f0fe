"""One machine writing again and again into a large folder: CPU per write, and its growth.

Usage: python bench/consecutive_write_bench.py [--sizes 1000,40000] [--runs 5] [--out DIR]
           [--python PY] [--baseline-python PY]

`bench/write_bytes_bench.py` alternates the builds on one workspace, so each write finds an index
the other build wrote. Here each build writes into its own copy of the corpus, one write after
another, as one user's agent does: a warm-up write, then `--runs` timed `python -m box_memory
write ... --quiet` processes. Reported: the child's CPU (user + system), median, and its ratio to
the smallest size's. The corpora are bench/corpus.py's (every memory in `memories/`, no teams),
made once in --out.
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


def cpu_of(cmd: list[str], env: dict[str, str]) -> float:
    before = os.times()
    subprocess.run(cmd, env=env, check=True, cwd="/", capture_output=True)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def write(py: str, ws: Path, home: Path, label: str) -> float:
    title = f"Consecutive {label} {time.time_ns()}"
    cmd = [py, "-m", "box_memory", "write", f"{title}: we decided the queue.", "--title", title]
    env = {**os.environ, "BOX_MEMORY_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return cpu_of([*cmd, "-w", str(ws), "--quiet"], env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,40000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("/tmp/consecutive-write-bench"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--baseline-python", default=None)
    a = ap.parse_args()
    from bench.corpus import generate

    builds = {"baseline": a.baseline_python, "new": a.python} if a.baseline_python else {"new": a.python}
    sizes = [int(s) for s in a.sizes.split(",") if s]
    medians: dict[tuple[int, str], float] = {}
    print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.")
    for n in sizes:
        corpus = a.out / f"corpus-{n}"
        if not corpus.exists():
            generate(n, corpus, teams=0)
        for name, py in builds.items():
            ws, home = a.out / f"ws-{n}-{name}", a.out / f"home-{n}-{name}"
            shutil.rmtree(ws, ignore_errors=True)
            shutil.rmtree(home, ignore_errors=True)
            shutil.copytree(corpus, ws)
            write(py, ws, home, "warm-up")
            medians[(n, name)] = statistics.median(write(py, ws, home, str(i)) for i in range(a.runs))
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("| memories in memories/ | build | write CPU s (median) | over the smallest size |")
    print("|---:|---|---:|---:|")
    for n in sizes:
        for name in builds:
            ratio = medians[(n, name)] / medians[(sizes[0], name)]
            print(f"| {n:,} | {name} | {medians[(n, name)]:.2f} | {ratio:.1f}x |")


if __name__ == "__main__":
    main()
