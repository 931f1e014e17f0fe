"""Filling the text cache of a big Box workspace under Box's per-user rate limit.

Usage: python bench/fetch_bench.py [--size 10000] [--latency-ms 50] [--budget 1000]
           [--before /tmp/venv-main/bin/python] [--before-timeout-s 200] [--out /tmp/fetch-bench]

The emulator (real MCP over HTTP on 127.0.0.1) enforces Box's published per-user limits
(`rate_limit` switch, emulator/ratelimit.py: 1,000 calls a minute, a sliding 60 s window,
429 with Retry-After past it; developer.box.com/guides/api-calls/permissions-and-errors/
rate-limits/), each call waiting `--latency-ms` first. The workspace is seeded as
bench/cold_recall_bench.py seeds it.

- before: main has no way to fill the text cache but its first recall, which reads every memory
  file as fast as Box answers (8 at a time): run once with an empty cache, stopped after
  `--before-timeout-s`;
- after: a cold recall (indexes only), then `box-memory fetch` (paced at its default, 95% of
  the budget), each in its own process with the same empty cache.

Reported: tool calls that reached the server, the 429s among them, wall time, the bodies the
cache holds afterwards, and the rate of admitted calls against the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cold_recall_bench import TOKEN, seed  # noqa: E402


def run(emu: Any, python: str, home: Path, args: list[str], timeout: float) -> dict[str, Any]:
    emu.reset_calls()
    started = time.perf_counter()
    env = {**os.environ, "BOX_MEMORY_HOME": str(home)}
    try:
        proc = subprocess.run(
            [python, "-m", "box_memory", *args, "--json"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            cwd="/",
        )
        out = json.loads(proc.stdout) if proc.stdout.strip() else {}
        done = proc.returncode == 0
    except subprocess.TimeoutExpired:
        out, done = {}, False
    wall = time.perf_counter() - started
    c = emu.counters
    admitted = sum(1 for call in emu.calls if call.outcome != "rate_limited")
    return {
        "wall": wall,
        "done": done,
        "calls": len(emu.calls),
        "admitted": admitted,
        "http_429": c.get("rate_limited", 0) + c.get("http_429", 0),
        "data": out.get("data") or {},
        "errors": out.get("errors") or [],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--budget", type=int, default=1000, help="calls a minute (Box: 1000)")
    ap.add_argument("--before", default="", help="the interpreter of a non-editable install of main")
    ap.add_argument("--before-timeout-s", type=float, default=200)
    ap.add_argument("--out", type=Path, default=Path("/tmp/fetch-bench"))
    a = ap.parse_args()
    if a.out.exists():
        shutil.rmtree(a.out)
    home = a.out / "home"
    os.environ.update(
        {"BOX_MEMORY_HOME": str(home), "BOX_ACCESS_TOKEN": TOKEN, "BOX_MEMORY_LOCK_SETTLE_S": "0.1"}
    )
    from box_memory.emulator.testing import running_emulator

    rows: list[tuple[str, dict[str, Any]]] = []
    with running_emulator(a.out / "box", token=TOKEN) as emu:
        os.environ["BOX_MCP_URL"] = emu.url
        spec, manifest = seed(emu, a.out / "box", a.size, a.out / "scratch")
        print(f"seeded {a.size} memories ({spec})", flush=True)
        probe = [manifest["probe_title"]]
        if a.before:
            time.sleep(61)  # the seeding's calls leave the window first
            emu.configure(latency_ms=a.latency_ms, rate_limit=True, calls_per_minute=a.budget)
            cold = a.out / "home-before"
            r = run(emu, a.before, cold, ["recall", *probe, "-w", spec], a.before_timeout_s)
            rows.append(("before: main's first recall (reads every file)", r))
            print(_line(*rows[-1]), flush=True)
            emu.configure(rate_limit=False)
        time.sleep(61)
        emu.configure(latency_ms=a.latency_ms, rate_limit=True, calls_per_minute=a.budget)
        fresh = a.out / "home-after"
        r = run(emu, sys.executable, fresh, ["recall", *probe, "-w", spec], 600)
        rows.append(("after: first recall (indexes only)", r))
        print(_line(*rows[-1]), flush=True)
        r = run(emu, sys.executable, fresh, ["fetch", "-w", spec], 3600)
        rows.append(("after: `box-memory fetch` (paced)", r))
        print(_line(*rows[-1]), flush=True)
        r = run(emu, sys.executable, fresh, ["recall", manifest["probe_body_word"], "-w", spec], 600)
        rows.append(("after: a body-word recall then", r))
        print(_line(*rows[-1]), flush=True)
    print()
    print(
        f"| {a.size:,} memories, {a.budget} calls/min, {a.latency_ms:g} ms a call | tool calls | 429s "
        "| wall | bodies fetched | admitted calls a minute (of the budget) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for label, r in rows:
        per_min = r["admitted"] / r["wall"] * 60 if r["wall"] > 0 else 0
        fetched = r["data"].get("fetched", "")
        wall = f"{r['wall']:.0f} s" + ("" if r["done"] else " (stopped)")
        print(
            f"| {label} | {r['calls']} | {r['http_429']} | {wall} | {fetched} | "
            f"{per_min:.0f} ({per_min / a.budget:.1%}) |"
        )


def _line(label: str, r: dict[str, Any]) -> str:
    return (
        f"{label:50} calls {r['calls']:>6} 429s {r['http_429']:>5} {r['wall']:7.1f} s "
        f"{'done' if r['done'] else 'NOT DONE'} {json.dumps(r['data'].get('pace') or {})} {r['errors'][:1]}"
    )


if __name__ == "__main__":
    main()
