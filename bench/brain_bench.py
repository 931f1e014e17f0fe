"""brain-sync throughput against the Box MCP emulator with a fixed latency per MCP call.

Usage: python bench/brain_bench.py [--files 2000] [--folders 20] [--latency-ms 50]
                                   [--concurrency 4,8] [--out DIR]

The emulator runs as its own process (`python -m box_memory.emulator --latency-ms ...`, so it
does not share the interpreter lock with the client) over a generated tree of text files. For
each concurrency the bench does a first sync into a fresh Box Brain store and an unchanged
re-sync; then, in the same run, a first sync with concurrency 1 (one call at a time: the
sequential-retrieval baseline). MCP calls are counted from the emulator's own call log.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from box_memory.brain.sync import SyncOptions, SyncRequest, brain_sync

TOKEN = "bench-token"
WORDS = [
    "retention", "policy", "vendor", "contract", "budget", "incident", "rollout", "review", "backup",
    "restore", "audit", "region", "latency", "owner", "deadline", "customer", "invoice", "roadmap",
    "release", "pager", "escalation",
]  # fmt: skip


def make_tree(root: Path, files: int, folders: int) -> None:
    per = -(-files // folders)
    n = 0
    for f in range(folders):
        d = root / f"team-{f:02d}"
        d.mkdir(parents=True)
        for _ in range(per):
            if n == files:
                return
            words = " ".join(WORDS[(n * 7 + k) % len(WORDS)] for k in range(220))
            (d / f"doc-{n:05d}.md").write_text(f"# Document {n}\n\n{words}\n", encoding="utf-8")
            n += 1


def start_emulator(
    root: Path, latency_ms: float, call_log: Path, *switches: str
) -> tuple[subprocess.Popen[str], str]:
    """The emulator in its own process (`switches`: more of its flags); (process, its URL)."""
    proc = subprocess.Popen(
        [
            *[sys.executable, "-m", "box_memory.emulator", "--root", str(root), "--port", "0"],
            *["--token", TOKEN, "--latency-ms", str(latency_ms), "--call-log", str(call_log)],
            *switches,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"emulator did not start: {line!r}")
    return proc, line.rsplit(" ", 1)[-1].strip()


def calls(log: Path, start: int) -> tuple[Counter[str], int]:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return Counter(json.loads(x)["name"] for x in lines[start:]), len(lines)


def one_sync(home: Path, concurrency: int, files: int) -> tuple[float, dict]:
    os.environ["BOX_MEMORY_HOME"] = str(home)
    t0 = time.perf_counter()
    report = brain_sync(
        SyncRequest(folder_id="0", max_items=max(files, 200), review=False),
        SyncOptions(concurrency=concurrency),
    )
    wall = time.perf_counter() - t0
    run = report.runs[0]
    if run.status != "completed":
        raise SystemExit(f"sync did not complete: {run.status} {run.error} {run.reasons}")
    return wall, run.to_dict()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=20)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--concurrency", default="4,8")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    base = args.out or Path(tempfile.mkdtemp(prefix="brain-bench-"))
    root = base / "box"
    make_tree(root, args.files, args.folders)
    log = base / "calls.jsonl"
    proc, url = start_emulator(root, args.latency_ms, log)
    os.environ.update(BOX_MCP_URL=url, BOX_ACCESS_TOKEN=TOKEN)
    rows = []
    try:
        # Warm-up, not timed: the emulator gives every file its Box id (hashing it) on the first
        # listing, and this process imports the MCP stack once.
        os.environ["BOX_MEMORY_HOME"] = str(base / "home-warmup")
        brain_sync(
            SyncRequest(folder_id="0", max_items=max(args.files, 200), include_content=False, review=False)
        )
        _, seen = calls(log, 0)
        for level in [*levels, 1]:
            home = base / f"home-c{level}"
            wall, run = one_sync(home, level, args.files)
            first_calls, seen = calls(log, seen)
            row = {
                "concurrency": level,
                "first_s": wall,
                "files_per_s": run["counts"]["indexed"] / wall,
                "first_calls": dict(first_calls),
                "indexed": run["counts"]["indexed"],
            }
            if level != 1:
                wall2, run2 = one_sync(home, level, args.files)
                again_calls, seen = calls(log, seen)
                row.update(
                    resync_s=wall2, resync_calls=dict(again_calls), unchanged=run2["counts"]["unchanged"]
                )
            rows.append(row)
    finally:
        proc.terminate()
        proc.wait(10)
    sequential = rows[-1]["first_s"]
    listing_pages = rows[-1]["first_calls"].get("list_folder_content_by_folder_id", 0)
    print(
        f"{args.files} files in {args.folders} folders, {args.latency_ms:g} ms per MCP call, "
        "emulator in its own process"
    )
    print(f"floor for one-at-a-time retrieval: {(args.files + listing_pages) * args.latency_ms / 1000:.1f} s")
    print("| run | concurrency | wall s | files/s | MCP calls | speed-up vs sequential |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        kind = "first sync (sequential baseline)" if r["concurrency"] == 1 else "first sync"
        print(
            f"| {kind} | {r['concurrency']} | {r['first_s']:.1f} | {r['files_per_s']:.0f} | "
            f"{sum(r['first_calls'].values())} | {sequential / r['first_s']:.2f}x |"
        )
        if "resync_s" in r:
            names = ", ".join(f"{k} {v}" for k, v in sorted(r["resync_calls"].items()))
            print(
                f"| unchanged re-sync ({r['unchanged']} unchanged) | {r['concurrency']} | "
                f"{r['resync_s']:.2f} | - | "
                f"{sum(r['resync_calls'].values())} ({names}) | - |"
            )


if __name__ == "__main__":
    main()
