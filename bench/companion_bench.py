"""Companion hashing benchmark: peak memory and throughput of `companion` on a large binary.

Creates a fresh workspace with a sparse file of --size-mb MiB (default 1 GiB) in files/, then runs
each command in a cold subprocess (`python -m box_memory ...`) and reads that child's own peak RSS
from os.wait4 (the per-child form of getrusage(RUSAGE_CHILDREN)). Throughput is the binary's size
over the command's wall time, start-up included. A baseline (`--version`) shows what the
interpreter and CLI cost before any hashing.

    .venv/bin/python bench/companion_bench.py [--size-mb 1024] [--runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RSS_LIMIT_MB = 50.0


def run_child(args: list[str], env: dict[str, str]) -> tuple[int, float, float, str]:
    """(exit code, wall seconds, peak RSS MiB, stdout) of one cold `python -m box_memory` run."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "box_memory", *args], stdout=out, stderr=subprocess.PIPE, env=env
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        out.seek(0)
        text = out.read().decode()
    if proc.returncode not in (0, 6):
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err or text}")
    return proc.returncode, wall, usage.ru_maxrss / 1024, text  # ru_maxrss is KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3, help="repetitions of each hashing command")
    ap.add_argument("--keep", type=Path, help="work in this folder and keep it")
    a = ap.parse_args()

    base = a.keep or Path(tempfile.mkdtemp(prefix="bm-companion-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    root = base / "ws"
    env = {**os.environ, "BOX_MEMORY_HOME": str(base / "home")}
    env.pop("BOX_MEMORY_WORKSPACE", None)
    try:
        run_child(["init", "--path", str(root), "--json"], env)
        big = root / "files" / "big.bin"
        size = a.size_mb * 1024 * 1024
        with big.open("wb") as f:
            f.truncate(size)  # sparse: no disk space, reads return zeros (pure hashing cost)
        w = ["-w", str(root), "--json"]
        rows: list[tuple[str, float, float, float]] = []
        _, wall, rss, _ = run_child(["--version"], env)
        rows.append(("--version (baseline)", wall, rss, 0.0))
        results: dict[str, list[tuple[float, float]]] = {"write": [], "check": []}
        for i in range(a.runs):
            args = ["companion", "files/big.bin", *w] + (["--force"] if i else [])
            code, wall, rss, out = run_child(args, env)
            data = json.loads(out)["data"]
            assert data["size_bytes"] == size and data["action"] in ("created", "superseded"), data
            results["write"].append((wall, rss))
            code, wall, rss, out = run_child(["companion", "files/big.bin", "--check", *w], env)
            assert code == 0 and json.loads(out)["data"]["state"] == "current", out
            results["check"].append((wall, rss))
        mib = size / (1024 * 1024)
        for name, runs in results.items():
            best = min(w for w, _ in runs)
            peak = max(r for _, r in runs)
            rows.append((f"companion {'--check' if name == 'check' else '(write)'}", best, peak, mib / best))
    finally:
        if a.keep is None:
            shutil.rmtree(base, ignore_errors=True)

    print(f"binary: {a.size_mb} MiB sparse file; {a.runs} run(s) per command, best wall time, worst peak RSS")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    print()
    print("| command | wall s | peak RSS MiB | MiB/s |")
    print("|---|---:|---:|---:|")
    for name, wall, rss, tput in rows:
        print(
            f"| {name} | {wall:.2f} | {rss:.1f} | {tput:.0f} |"
            if tput
            else f"| {name} | {wall:.2f} | {rss:.1f} | - |"
        )
    worst = max(r[2] for r in rows)
    verdict = "PASS" if worst < RSS_LIMIT_MB else "FAIL"
    print(f"\npeak RSS {worst:.1f} MiB vs limit {RSS_LIMIT_MB:.0f} MB: {verdict}")
    if verdict == "FAIL":
        raise SystemExit(1)


if __name__ == "__main__":
    main()
