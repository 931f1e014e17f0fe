"""The recall cache's cold build (first recall with no cache) and the cache's size, per build.

Usage: python bench/cache_build_bench.py [--sizes 10000,100000] [--runs 3] [--out DIR]
                                         [--python PY] [--baseline-python PY]

Per size, the corpus of `bench/recall_bench.py` (DIR/ws-N) is reused or generated. Each run, for
each build in turn: an empty BOX_MEMORY_HOME, then one timed `PY -m box_memory recall "warm up"
-w WS --json` (interpreter start, imports, reading every folder index and memory file, filling
the cache, the query), run from the corpus folder so each interpreter imports its own installed
box_memory. Reported: wall and CPU (user + system of the child) p50 over the runs, memories per
second of wall, and the cache file's size against the bytes of the memory files it was built
from, with the largest tables and indexes (SQLite's `dbstat`) of the last build.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.after_write_bench import _run  # noqa: E402
from bench.serve_bench import _env, corpus, sized_build_args  # noqa: E402


def memory_bytes(ws: Path) -> int:
    """Bytes of the memory files (`mem_`-indexed markdown under memories/ and teams/)."""
    return sum(
        p.stat().st_size
        for top in ("memories", "teams")
        for p in (ws / top).rglob("*.md")
        if p.is_file() and not p.name.startswith("_")
    )


def breakdown(db_path: Path, top: int = 6) -> str:
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.Error as e:  # a SQLite built without dbstat
        return f"(no dbstat: {e})"
    finally:
        db.close()
    return ", ".join(f"{name} {size / 1e6:.1f}" for name, size in rows[:top])


# The reference: the bodies into a bare FTS5 table, nothing else (no index, no metadata, no checks),
# journaled as the cache's first fill is (SQLite's rollback journal, not WAL: each page written
# once; 2-5% faster than through WAL here).
BARE_FTS5 = r"""
import os, sqlite3, sys
ws, db_path = sys.argv[1], sys.argv[2]
db = sqlite3.connect(db_path, isolation_level=None)
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE VIRTUAL TABLE fts USING fts5(body, content='', "
           "tokenize='porter unicode61 remove_diacritics 2')")
db.execute("BEGIN")
rows = []
for top in ("memories", "teams"):
    for folder, _dirs, files in os.walk(os.path.join(ws, top)):
        for name in files:
            if name.endswith(".md") and not name.startswith("_"):
                with open(os.path.join(folder, name), "rb") as f:
                    text = f.read().decode("utf-8", "replace")
                end = text.find("\n---", 3) if text.startswith("---") else -1
                rows.append((len(rows) + 1, text[end + 5 :] if end >= 0 else text))
db.executemany("INSERT INTO fts(rowid, body) VALUES (?, ?)", rows)
db.execute("COMMIT")
db.close()
"""


def bare_fts5(py: str, ws: Path, scratch: Path) -> tuple[float, float]:
    """(wall ms, cpu ms) of the reference build of `ws`'s bodies into a fresh database."""
    scratch.mkdir(parents=True, exist_ok=True)
    db = scratch / "bare.sqlite3"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return _run([py, "-c", BARE_FTS5, str(ws), str(db)], _env(scratch / "home"), ws)


def main() -> None:
    args, pythons = sized_build_args(__doc__, runs=3)
    rows = [
        "| memories | build | cold build wall p50 s | cpu p50 s | memories/s (wall) | cache MB "
        "| memory files MB | cache / files | wall / cpu over bare FTS5 | largest parts, MB |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        ws, _ = corpus(n, args.out)
        files = memory_bytes(ws)
        got: dict[str, list[tuple[float, float]]] = {name: [] for name in pythons}
        bare: list[tuple[float, float]] = []
        size: dict[str, tuple[int, str]] = {}
        for _ in range(args.runs):
            bare.append(bare_fts5(next(iter(pythons.values())), ws, args.out / f"bare-{n}"))
            for name, py in pythons.items():
                home = args.out / f"home-build-{n}" / name
                shutil.rmtree(home, ignore_errors=True)
                got[name].append(_run([py, "-m", "box_memory", "recall", "warm up", "-w", str(ws), "--json"],
                                      _env(home), ws))  # fmt: skip
                caches = list((home / "cache" / "recall").glob("*.sqlite3"))
                if len(caches) != 1:
                    raise SystemExit(f"{name}: expected one recall cache under {home}, found {caches}")
                size[name] = (caches[0].stat().st_size, breakdown(caches[0]))
        ref_wall = statistics.median(w for w, _ in bare) / 1000
        ref_cpu = statistics.median(c for _, c in bare) / 1000
        rows.append(
            f"| {n:,} | bare FTS5 | {ref_wall:.2f} | {ref_cpu:.2f} | {n / ref_wall:,.0f} "
            "| | | | 1.00x / 1.00x | |"
        )
        for name in pythons:
            wall = statistics.median(w for w, _ in got[name]) / 1000
            cpu = statistics.median(c for _, c in got[name]) / 1000
            cache, parts = size[name]
            rows.append(
                f"| {n:,} | {name} | {wall:.2f} | {cpu:.2f} | {n / wall:,.0f} | {cache / 1e6:.1f} "
                f"| {files / 1e6:.1f} | {cache / files:.2f}x | {wall / ref_wall:.2f}x / {cpu / ref_cpu:.2f}x "
                f"| {parts} |"
            )
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
