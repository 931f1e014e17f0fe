"""`box-memory import` of N items into an empty local workspace, cold process, timed from the parent.

Usage: python bench/import_bench.py [--n 10000] [--runs 3] [--format markdown|mem0|basic-memory]

Builds a source of N items in the chosen format (markdown folder, basic-memory project or one
mem0 JSON file), then for each run: a fresh workspace, `python -m box_memory import SRC --json`
(interpreter start, detection, reading, validation, one lock, N memory files created with fsync,
indexes and rollup), then the same import again (idempotent re-run: reads the source and the
workspace, writes nothing). Goal: 10,000 items in under 30 s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.write_bench import WORDS


def item_text(i: int) -> tuple[str, str]:
    w = [WORDS[(i * 7 + k) % len(WORDS)] for k in range(4)]
    title = f"{w[0].title()} {w[1]} import {i}"
    body = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60))
    return title, body


def build_source(root: Path, n: int, fmt: str) -> Path:
    root.mkdir(parents=True)
    if fmt == "mem0":
        items = []
        for i in range(n):
            title, body = item_text(i)
            items.append({
                "id": f"00000000-0000-4000-8000-{i:012d}",
                "memory": f"{title}: {body}",
                "hash": f"{i:032x}",
                "metadata": {"category": WORDS[i % len(WORDS)]},
                "created_at": "2024-07-20T10:15:30.123456-07:00",
                "updated_at": None,
                "user_id": "bench",
            })  # fmt: skip
        path = root / "mem0.json"
        path.write_text(json.dumps({"results": items}))
        return path
    for i in range(n):
        title, body = item_text(i)
        sub = root / f"d{i % 20:02d}"
        sub.mkdir(exist_ok=True)
        if fmt == "basic-memory":
            slug = title.lower().replace(" ", "-")
            text = (
                f"---\ntitle: {title}\ntype: note\ntags: [{WORDS[i % len(WORDS)]}]\n"
                f"permalink: {slug}\n---\n\n"
                f"# {title}\n\n## Observations\n- [note] {body} #bench\n\n## Relations\n"
                f"- relates_to [[{item_text(i + 1)[0]}]]\n"
            )
        else:
            text = f"# {title}\n\n{body}\n"
        (sub / f"note-{i}.md").write_text(text)
    return root


def run_import(src: Path, ws: Path, home: Path) -> tuple[float, dict]:
    env = {**os.environ, "BOX_MEMORY_HOME": str(home)}
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-m", "box_memory", "import", str(src), "-w", str(ws), "--json"],
        capture_output=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - t
    if res.returncode != 0:
        raise SystemExit(f"import failed ({res.returncode}): {res.stdout[-500:]!r} {res.stderr[-500:]!r}")
    return elapsed, json.loads(res.stdout)["data"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--format", default="markdown", choices=["markdown", "mem0", "basic-memory"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        src = build_source(base / "src", args.n, args.format)
        firsts, agains = [], []
        for r in range(args.runs):
            ws = base / f"ws{r}"
            home = base / f"home{r}"
            env = {**os.environ, "BOX_MEMORY_HOME": str(home)}
            subprocess.run(
                [sys.executable, "-m", "box_memory", "init", "bench", "--path", str(ws), "--quiet"],
                check=True,
                env=env,
            )
            first, data = run_import(src, ws, home)
            assert data["imported"] == args.n, data["imported"]
            again, data2 = run_import(src, ws, home)
            assert data2["imported"] == 0 and data2["already_imported"] == args.n
            firsts.append(first)
            agains.append(again)
            print(f"run {r + 1}: import {first:.1f} s, re-run (nothing new) {again:.1f} s", flush=True)
        print(
            f"{args.format} x {args.n}: import median {statistics.median(firsts):.1f} s "
            f"(min {min(firsts):.1f}, max {max(firsts):.1f}); re-run median {statistics.median(agains):.1f} s"
        )


if __name__ == "__main__":
    main()
