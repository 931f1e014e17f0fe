"""A first brain-sync against the emulator's rate limit: bursting (before) vs paced (after).

Usage: python bench/paced_sync_bench.py [--files 10000] [--folders 20] [--budget 1000]
                                        [--concurrency 4] [--latency-ms 0] [--skip-before] [--out DIR]

The emulator runs as its own process with `--rate-limit --calls-per-minute BUDGET` (Box's
published per-user figure is 1000 calls a minute, developer.box.com "Rate Limits":
https://developer.box.com/guides/api-calls/permissions-and-errors/rate-limits/), over a generated
tree of text files. Each run is a first sync into a fresh Box Brain store against a fresh
emulator (an empty window):

- before: unpaced, `concurrency` workers, the client's old 30 s cap on Retry-After (the code as
  it was: calls as fast as the server answers);
- after: the default pacer scaled to the budget (95% of it), the same workers.

Reported per run: tool calls that reached the server, the 429s among them, files indexed, wall
time, and the achieved rate of admitted calls against the budget. A scaled-down budget with
fewer files (e.g. `--budget 600 --files 2000`) keeps the run to minutes; the full-scale 10,000
files at 1000 a minute takes about 11 minutes a run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.brain_bench import TOKEN, make_tree, start_emulator
from box_memory.brain.pace import SAFETY
from box_memory.brain.sync import SyncOptions, SyncRequest, brain_sync
from box_memory.maintenance.init import InitRequest, init


def one_run(base: Path, name: str, args: argparse.Namespace, opts: SyncOptions) -> dict:
    log = base / f"calls-{name}.jsonl"
    rate = ("--rate-limit", "--calls-per-minute", str(args.budget))
    proc, url = start_emulator(base / "box", args.latency_ms, log, *rate)
    home = base / f"home-{name}"
    os.environ.update(BOX_MCP_URL=url, BOX_ACCESS_TOKEN=TOKEN, BOX_MEMORY_HOME=str(home))
    try:
        init(InitRequest(name=f"bench-{name}", path=base / f"ws-{name}"))
        t0 = time.perf_counter()
        report = brain_sync(SyncRequest(folder_id="0", max_items=max(args.files, 200), review=False), opts)
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(10)
    run = report.runs[0]
    outcomes = [json.loads(x)["outcome"] for x in log.read_text(encoding="utf-8").splitlines()]
    admitted = sum(1 for o in outcomes if o != "rate_limited")
    rate = admitted / wall * 60
    return {
        "run": name,
        "status": run.status,
        "indexed": run.counts.get("indexed", 0),
        "failed": run.counts.get("failed", 0),
        "calls": len(outcomes),
        "429s": len(outcomes) - admitted,
        "wall_s": wall,
        "rate": rate,
        "pct": 100 * rate / args.budget,
        "error": run.error,
        "pace": run.pace,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--folders", type=int, default=20)
    ap.add_argument("--budget", type=int, default=1000, help="the emulator's calls per minute")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--latency-ms", type=float, default=0)
    ap.add_argument("--skip-before", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    base = args.out or Path(tempfile.mkdtemp(prefix="paced-bench-"))
    make_tree(base / "box", args.files, args.folders)
    rows = []
    if not args.skip_before:
        before = SyncOptions(concurrency=args.concurrency, calls_per_minute=0)
        before.client_kwargs["retry_after_cap"] = 30.0  # the client's cap before the pacer
        rows.append(one_run(base, "before", args, before))
    after = SyncOptions(concurrency=args.concurrency, calls_per_minute=args.budget * SAFETY)
    rows.append(one_run(base, "after", args, after))
    print(
        f"{args.files} files in {args.folders} folders, emulator budget {args.budget} calls/min "
        f"(sliding 60 s window), concurrency {args.concurrency}, {args.latency_ms:g} ms per call"
    )
    print("| run | status | files indexed | tool calls | 429s | wall | admitted calls/min | of budget |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['run']} | {r['status']} | {r['indexed']} | {r['calls']} | {r['429s']} | "
            f"{r['wall_s']:.0f} s | {r['rate']:.0f} | {r['pct']:.1f}% |"
        )
    for r in rows:
        if r["error"] or r["pace"]:
            print(f"{r['run']}: error={r['error']} pace={r['pace']}")


if __name__ == "__main__":
    main()
