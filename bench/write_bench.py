"""`box-memory write` end to end, cold process, into one folder already holding N memories.

Usage: python bench/write_bench.py [--sizes 1000,10000] [--runs 15] [--out DIR]
Each run is a fresh `python -m box_memory write ...` process (interpreter start, imports, lock,
index read/update/write, rollup), timed from the parent. Reports median and p90 per size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from box_memory.format import frontmatter
from box_memory.maintenance.init import init_workspace
from box_memory.maintenance.regenerate import rebuild
from box_memory.store.local import LocalStore

WORDS = [
    "auth",
    "token",
    "session",
    "deploy",
    "queue",
    "retry",
    "cache",
    "index",
    "schema",
    "migration",
    "rollout",
    "incident",
    "budget",
    "latency",
    "throughput",
    "contract",
    "policy",
    "vendor",
    "review",
    "backup",
    "restore",
    "audit",
    "compliance",
    "region",
]


def memory_file(i: int) -> tuple[str, str]:
    """The i-th memory of the bench corpus: (file name, file text), deterministic."""
    w = [WORDS[(i * 7 + k) % len(WORDS)] for k in range(4)]
    title = f"{w[0].title()} {w[1]} note {i}"
    slug = f"{w[0]}-{w[1]}-note-{i}"
    meta = {
        "id": f"mem_01J{i:023d}",
        "slug": slug,
        "title": title,
        "kind": "note",
        "status": "active",
        "team": "default",
        "created_at": "2026-01-01T00:00:00.000Z",
        "updated_at": "2026-01-01T00:00:00.000Z",
        "tags": [w[2], w[3]],
    }
    body = f"# {title}\n\n" + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60)) + "\n"
    return f"note__{slug}.md", frontmatter.render(meta, body)


def seed_folder(root: Path, n: int) -> None:
    """N realistic memory files in memories/, then a real index built from them."""
    root.mkdir(parents=True)
    ws, _ = init_workspace(LocalStore(root), "bench", teams=[], layout="sibling")
    folder = root / "memories"
    for i in range(n):
        name, text = memory_file(i)
        (folder / name).write_text(text)
    rebuild(ws)


def time_writes(root: Path, runs: int) -> list[float]:
    env = {**os.environ, "BOX_MEMORY_HOME": str(root.parent / "home")}
    out = []
    for i in range(runs):
        cmd = [
            sys.executable,
            "-m",
            "box_memory",
            "write",
            f"We decided bench item {i} uses the queue.",
            "--title",
            f"Bench write {i}",
            "--tag",
            "bench",
            "-w",
            str(root),
            "--quiet",
        ]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=env)
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    # Interpreter floor: the same cold process doing nothing.
    t = time.perf_counter()
    for _ in range(5):
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    floor = (time.perf_counter() - t) * 1000 / 5
    print(f"python -c pass: {floor:.0f} ms")
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d) / "ws"
            seed_folder(root, n)
            ms = sorted(time_writes(root, args.runs))
            p90 = ms[int(len(ms) * 0.9) - 1]
            p50 = statistics.median(ms)
            print(f"write into {n:>6} memories: p50 {p50:.0f} ms  p90 {p90:.0f} ms  (runs={len(ms)})")


if __name__ == "__main__":
    main()
