"""index-rebuild throughput: memories per second, each run a cold `python -m box_memory` process.

Usage: python bench/rebuild_bench.py [--sizes 10000 100000] [--runs 3] [--workdir DIR] [--keep]

For each size it generates a corpus (bench/corpus.py; a minimal built-in generator if that is not
available), then times, in fresh processes: `index-rebuild` with current indexes, `index-rebuild
--check`, and `index-rebuild` after every `_index.json` was deleted (a rebuild from files alone).
It also times frontmatter parsing in-process, fast path vs the safe YAML loader, on a sample.
Goal: >= 5,000 memories/s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def make_corpus(n: int, out: Path) -> str:
    """bench/corpus.py when it works; otherwise a minimal generator (same file shape)."""
    try:
        sys.path.insert(0, str(ROOT / "bench"))
        from corpus import generate  # type: ignore[import-not-found]

        generate(n, out, seed=7, teams=4)
        return "bench/corpus.py"
    except Exception as e:  # fall back, but say so
        print(f"  (bench/corpus.py unavailable: {type(e).__name__}: {e}; using the built-in generator)")
        import shutil

        shutil.rmtree(out, ignore_errors=True)
        minimal_corpus(n, out)
        return "built-in"


def minimal_corpus(n: int, out: Path) -> None:
    """n memory files spread over the default scope and four teams, then indexes via a rebuild."""
    import random

    from box_memory.format import frontmatter
    from box_memory.maintenance.init import init_workspace
    from box_memory.maintenance.regenerate import rebuild
    from box_memory.store.local import LocalStore

    rng = random.Random(7)
    out.mkdir(parents=True)
    teams = ["platform", "payments", "mobile", "data"]
    ws, _ = init_workspace(LocalStore(out.resolve()), f"bench-{n}", teams=teams, layout="sibling")
    words = [f"w{i}" for i in range(500)]
    for i in range(n):
        scope = None if rng.random() < 0.4 else rng.choice(teams)
        folder = out / ws.memories_folder(scope)
        title = " ".join(rng.sample(words, 4)) + f" {i}"
        slug = title.replace(" ", "-")
        stamp = f"2025-01-01T00:00:{i % 60:02d}.{i % 1000:03d}Z"
        meta = {
            "id": f"mem_{i:026d}",
            "slug": slug,
            "title": title,
            "kind": "note",
            "status": "active",
            "team": ws.team_of(scope),
            "created_at": stamp,
            "updated_at": stamp,
            "tags": sorted(rng.sample(words[:40], 2)),
        }
        body = f"# {title}\n\n" + " ".join(rng.choices(words, k=120)) + "\n"
        (folder / f"note__{slug}.md").write_text(frontmatter.render(meta, body), encoding="utf-8")
    rebuild(ws)


def cold(args: list[str], env: dict[str, str]) -> tuple[float, float, dict[str, Any]]:
    """(wall s, CPU s of the child: user + sys, envelope). CPU shows the cost on a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "box_memory", *args, "--json"],
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        envelope = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(
            f"not JSON (exit {proc.returncode}): {proc.stdout[:300]!r} {proc.stderr[:300]!r}"
        ) from None
    return wall, cpu, envelope


def parse_sample(ws: Path, k: int = 2000) -> dict[str, float]:
    """Microseconds per file: frontmatter.parse (fast path) vs the safe loader on the same text."""
    import yaml

    from box_memory.format import frontmatter

    files = sorted((ws / "memories").glob("*.md"))[:k]
    texts = [p.read_text(encoding="utf-8") for p in files]
    blocks = [m.group(1) for t in texts if (m := frontmatter._FM_RE.match(t))]

    def best(fn: Any, xs: list[str]) -> float:
        runs = []
        for _ in range(3):
            t = time.perf_counter()
            for x in xs:
                fn(x)
            runs.append((time.perf_counter() - t) / len(xs) * 1e6)
        return round(min(runs), 1)

    return {
        "files": len(texts),
        "fast_path_accepts": sum(frontmatter.fast_mapping(b) is not None for b in blocks),
        "parse_us": best(frontmatter.parse, texts),
        "safe_loader_us": best(lambda b: yaml.load(b, Loader=frontmatter._Loader), blocks),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="Keep the generated corpora.")
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="bm-rebuild-bench-"))
    env = {**os.environ, "BOX_MEMORY_HOME": str(work / "home")}
    env.pop("BOX_MEMORY_WORKSPACE", None)
    results = []
    for n in a.sizes:
        ws = work / f"ws-{n}"
        if not (ws / "_box-memory.json").exists():
            t = time.perf_counter()
            source = make_corpus(n, ws)
            print(f"corpus {n}: {source}, {time.perf_counter() - t:.1f} s -> {ws}")
        row: dict[str, Any] = {"n": n}
        for label, args, prep in (
            ("rebuild", ["index-rebuild", "-w", str(ws)], None),
            ("check", ["index-rebuild", "--check", "-w", str(ws)], None),
            ("from_files", ["index-rebuild", "-w", str(ws)], "drop-indexes"),
        ):
            walls, cpus = [], []
            for _ in range(a.runs):
                if prep == "drop-indexes":
                    for p in ws.rglob("_index.json"):
                        if "_archive" not in p.parts:
                            p.unlink()
                wall, cpu, env_out = cold(args, env)
                data = env_out["data"]
                assert data["memories"] + data["companions"] == n, (label, data["memories"], n)
                assert env_out["exit_code"] == 0, env_out["errors"]
                walls.append(wall)
                cpus.append(cpu)
            row[label] = {
                "best_s": round(min(walls), 2),
                "median_s": round(statistics.median(walls), 2),
                "per_s": round(n / min(walls)),
                "median_per_s": round(n / statistics.median(walls)),
                "cpu_s": round(min(cpus), 2),
                "per_cpu_s": round(n / min(cpus)),
            }
            print(
                f"  {n:>7} {label:<11} best {min(walls):6.2f} s  {n / min(walls):>8,.0f} memories/s"
                f"  (median {statistics.median(walls):.2f} s; CPU {min(cpus):.2f} s = {n / min(cpus):,.0f}/s;"
                f" load {os.getloadavg()[0]:.1f})"
            )
        row["parse"] = parse_sample(ws)
        print(f"  parse sample: {row['parse']}")
        results.append(row)
        if not a.keep:
            import shutil

            shutil.rmtree(ws, ignore_errors=True)
    print(
        json.dumps({"cpus": os.cpu_count(), "python": sys.version.split()[0], "results": results}, indent=1)
    )


if __name__ == "__main__":
    main()
