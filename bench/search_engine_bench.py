"""The search engine's own floor: a bare SQLite FTS5 table against a tantivy index, same corpus.

Usage: python bench/search_engine_bench.py [--sizes 10000,100000] [--runs 51] [--out DIR]

Needs `tantivy` (the Python bindings of the Rust search library) in the running interpreter; it
is not a dependency of box-memory: `pip install tantivy` into a bench venv.

For each size, the corpus of `bench/recall_bench.py` (DIR/ws-N, bench/corpus.py) is reused or
generated. Its memory files (memories/ and teams/, as bench/cache_build_bench.py's bare FTS5
build walks them) are read and split by `box_memory.format.frontmatter.parse` once, untimed for
either engine. Then, in this process, each engine indexes the same documents:

- FTS5: `fts5(title, slug, tags, body, content='', tokenize='porter unicode61 remove_diacritics
  2')` (the recall cache's tokenizer) plus a side table `docs(rid, kind, updated)`, in one
  transaction, WAL, synchronous=NORMAL.
- tantivy: fields title, slug, tags, body (tokenizer `en_stem`: lower case, Snowball English
  stemmer), kind (raw), rid and updated (i64 fast fields), one writer thread, merges waited for.

Each query shape is the query of `bench.recall_bench._queries(manifest)`; inline `kind:`/`tag:`
terms are split off as box_memory's `parse_filters` does, and the rest is tokenised by
`box_memory.recall.query.tokens_of`. Per shape, top-10 retrieval of row ids, four ways:

- body OR: any of the words, in the body only, BM25, top 10 (the like-for-like one: a single
  field, where both engines score plain BM25 over the same postings);
- OR: any of the words, over all four text fields, BM25, top 10;
- AND: all of the words (multi-word shapes only);
- weighted: OR with title 4 > slug 3 > tags 2 > body 1 (FTS5 `bm25(fts, 4, 3, 2, 1)`, tantivy
  field boosts).

A shape with no free words left (structured: `kind:decision tag:auth`) is a filter: tag `auth`
and kind `decision`, newest first (FTS5: the tags column matched and joined to `docs`; tantivy:
`kind:decision AND tags:auth` ordered by the `updated` fast field); it has the OR column only.
Across several fields the two engines score differently (FTS5: one BM25 per word over the
columns' weighted counts and the whole row's length; tantivy: a BM25 per field, summed), so the
OR and weighted top 10s agree less than body OR's; tantivy also keeps field lengths in one byte,
which ties more scores at the cut.

Timed: one call from the Python query string to a list of 10 row ids (FTS5: the statement run
through Python's sqlite3 and fetched; tantivy: `parse_query`, `search`, and the ids read from the
`rid` fast field), CPU time (`time.process_time`, every thread of this process) per call, median
over --runs calls after 3 untimed ones, every engine and variant interleaved call by call.
Reported per shape: the medians, and the overlap of the two engines' top-10 sets. Also: each
build's CPU seconds and its size on disk against the memory files' bytes.

Then box_memory's own recall on the same corpus (`MemoryServer.call` in this process, on the cache
under DIR/home-serve-N/new that `bench/serve_bench.py --in-process` uses), per shape: its CPU per
call and the CPU of replaying only the SQL statements that call runs (see `ladder_split`), the
rest being its Python: how much of a call is the engine and how much is around it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cache_build_bench import memory_bytes  # noqa: E402
from bench.recall_bench import _queries  # noqa: E402
from bench.serve_bench import corpus  # noqa: E402
from box_memory.format.frontmatter import parse  # noqa: E402
from box_memory.recall.query import tokens_of  # noqa: E402

STRUCT_RE = re.compile(r"^(kind|tag|team|status):(\S+)$", re.IGNORECASE)  # as recall.query's
FIELDS = ("title", "slug", "tags", "body")
BOOSTS = {"title": 4.0, "slug": 3.0, "tags": 2.0, "body": 1.0}
K = 10
VARIANTS = ("body OR", "OR", "AND", "weighted")


def documents(ws: Path) -> list[dict[str, Any]]:
    """The memory files as the bare FTS5 build walks them, split into frontmatter and body."""
    docs: list[dict[str, Any]] = []
    for top in ("memories", "teams"):
        for folder, _dirs, files in os.walk(ws / top):
            for name in sorted(files):
                if name.endswith(".md") and not name.startswith("_"):
                    with open(os.path.join(folder, name), "rb") as f:
                        text = f.read().decode("utf-8", "replace")
                    meta, body = parse(text, name)
                    updated = meta.get("updated_at")
                    if isinstance(updated, str):
                        updated = dt.datetime.fromisoformat(updated.replace("Z", "+00:00"))
                    docs.append({
                        "rid": len(docs) + 1,
                        "title": str(meta.get("title") or ""),
                        "slug": str(meta.get("slug") or ""),
                        "tags": " ".join(str(t) for t in meta.get("tags") or []),
                        "kind": str(meta.get("kind") or ""),
                        "updated": int(updated.timestamp()) if updated else 0,
                        "body": body,
                    })  # fmt: skip
    return docs


def disk_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# --- the two engines ------------------------------------------------------------------------


def build_fts5(docs: list[dict[str, Any]], where: Path) -> tuple[sqlite3.Connection, float]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{where}{suffix}").unlink(missing_ok=True)
    c = time.process_time()
    db = sqlite3.connect(where, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(title, slug, tags, body, content='', "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE TABLE docs(rid INTEGER PRIMARY KEY, kind TEXT NOT NULL, updated INTEGER NOT NULL)")
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO fts(rowid, title, slug, tags, body) VALUES (?, ?, ?, ?, ?)",
        [(d["rid"], d["title"], d["slug"], d["tags"], d["body"]) for d in docs],
    )
    db.executemany("INSERT INTO docs VALUES (?, ?, ?)", [(d["rid"], d["kind"], d["updated"]) for d in docs])
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db, time.process_time() - c


def build_tantivy(docs: list[dict[str, Any]], where: Path) -> tuple[Any, float]:
    import tantivy

    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    c = time.process_time()
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("rid", stored=True, indexed=False, fast=True)
    for name in FIELDS:
        sb.add_text_field(name, tokenizer_name="en_stem")
    sb.add_text_field("kind", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("updated", indexed=True, fast=True)
    index = tantivy.Index(sb.build(), path=str(where))
    writer = index.writer(heap_size=128_000_000, num_threads=1)
    for d in docs:
        writer.add_document(tantivy.Document(**d))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, time.process_time() - c


def _quote(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def fts5_calls(db: sqlite3.Connection, query: str) -> dict[str, Callable[[], list[int]]]:
    text, filters = split(query)
    words = tokens_of(text)
    if not words:
        tag, kind = filters["tag"], filters["kind"]
        sql = (
            "SELECT d.rid FROM fts JOIN docs d ON d.rid = fts.rowid WHERE fts MATCH :q "
            "AND d.kind = :kind ORDER BY d.updated DESC LIMIT 10"
        )
        args = {"q": "tags : " + _quote(tag), "kind": kind}
        return {"OR": lambda: [r for (r,) in db.execute(sql, args)]}
    any_of = {"q": " OR ".join(_quote(w) for w in words)}
    every = {"q": " AND ".join(_quote(w) for w in words)}
    plain = "SELECT rowid FROM fts WHERE fts MATCH :q ORDER BY rank LIMIT 10"
    weighted = "SELECT rowid FROM fts WHERE fts MATCH :q ORDER BY bm25(fts, 4.0, 3.0, 2.0, 1.0) LIMIT 10"
    body = {"q": "body : (" + any_of["q"] + ")"}
    calls = {
        "body OR": lambda: [r for (r,) in db.execute(plain, body)],
        "OR": lambda: [r for (r,) in db.execute(plain, any_of)],
        "weighted": lambda: [r for (r,) in db.execute(weighted, any_of)],
    }
    if len(words) > 1:
        calls["AND"] = lambda: [r for (r,) in db.execute(plain, every)]
    return calls


def tantivy_calls(index: Any, query: str) -> dict[str, Callable[[], list[int]]]:
    text, filters = split(query)
    words = tokens_of(text)
    searcher = index.searcher()

    def run(q: str, fields: tuple[str, ...] = FIELDS, **kw: Any) -> Callable[[], list[int]]:
        order = kw.pop("order_by_field", None)

        def call() -> list[int]:
            parsed = index.parse_query(q, list(fields), **kw)
            if order:
                hits = searcher.search(parsed, K, count=False, order_by_field=order).hits
            else:
                hits = searcher.search(parsed, K, count=False).hits
            return searcher.fast_field_values("rid", [a for _, a in hits])

        return call

    if not words:
        return {"OR": run(f"kind:{filters['kind']} AND tags:{filters['tag']}", order_by_field="updated")}
    q = " ".join(words)
    calls = {"body OR": run(q, ("body",)), "OR": run(q), "weighted": run(q, field_boosts=BOOSTS)}
    if len(words) > 1:
        calls["AND"] = run(q, conjunction_by_default=True)
    return calls


def split(query: str) -> tuple[str, dict[str, str]]:
    """The query's free text and its inline filters, as `recall.query.parse_filters` splits them."""
    rest, filters = [], {}
    for term in query.split():
        m = STRUCT_RE.match(term)
        if m:
            filters[m.group(1).lower()] = m.group(2)
        else:
            rest.append(term)
    return " ".join(rest), filters


# --- box_memory's own recall, split into its SQL and the rest ---------------------------------


def ladder_split(ws: Path, manifest: dict[str, Any], home: Path, runs: int) -> list[str]:
    """Per shape: `MemoryServer.call("recall")` CPU per call (median), the top-level statements it
    runs on its recall cache (traced once), and the CPU of replaying just those statements (their
    values bound as literals, as SQLite's trace gives them, each fetched to the end; FTS5's own
    nested statements run inside them): what is left is the ladder's Python."""
    os.environ["BOX_MEMORY_HOME"] = str(home)
    import gc

    from box_memory.serve.server import MemoryServer

    before = [o for o in gc.get_objects() if isinstance(o, sqlite3.Connection)]
    server = MemoryServer(str(ws))
    shapes = [(shape, query) for shape, query, _ in _queries(manifest)]
    for _, query in shapes:
        server.call("recall", {"query": query})
    conns = [
        o for o in gc.get_objects() if isinstance(o, sqlite3.Connection) and not any(o is b for b in before)
    ]
    if len(conns) != 1:
        raise SystemExit(f"expected the server's one recall cache connection, found {len(conns)}")
    db = conns[0]
    rows = []
    for shape, query in shapes:
        traced: list[str] = []
        db.set_trace_callback(traced.append)
        server.call("recall", {"query": query})
        db.set_trace_callback(None)
        statements = [t for t in traced if not t.startswith("--")]  # "--": FTS5's nested ones

        def replay(statements: list[str] = statements) -> list[int]:
            for sql in statements:
                db.execute(sql).fetchall()
            return []

        def recall(query: str = query) -> object:
            return server.call("recall", {"query": query})

        med = cpu_medians({"call": recall, "sql": replay}, runs)
        py = med["call"] - med["sql"]
        rows.append(
            f"| {manifest['n']:,} | {shape} | {len(statements)} | {med['call']:.2f} | {med['sql']:.2f} "
            f"| {py:.2f} | {med['sql'] / med['call']:.0%} |"
        )
        print("  " + rows[-1], flush=True)
    return rows


# --- timing ---------------------------------------------------------------------------------


def cpu_medians(calls: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Median CPU ms per call, the calls interleaved one by one so each sees the same load."""
    for call in calls.values():
        for _ in range(3):
            call()
    got: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(runs):
        for key, call in calls.items():
            c = time.process_time()
            call()
            got[key].append((time.process_time() - c) * 1000)
    return {k: statistics.median(v) for k, v in got.items()}


def bench_size(n: int, out: Path, runs: int) -> list[str]:
    ws, manifest = corpus(n, out)
    scratch = out / f"engine-{n}"
    scratch.mkdir(parents=True, exist_ok=True)
    c = time.process_time()
    docs = documents(ws)
    read_s = time.process_time() - c
    db, fts_s = build_fts5(docs, scratch / "fts5.sqlite3")
    index, tan_s = build_tantivy(docs, scratch / "tantivy")
    files = memory_bytes(ws)
    fts_b, tan_b = disk_bytes(scratch / "fts5.sqlite3"), disk_bytes(scratch / "tantivy")
    builds = [
        f"| {n:,} | {len(docs):,} | {files / 1e6:.1f} | {read_s:.2f} | {fts_s:.2f} | "
        f"{fts_b / 1e6:.1f} ({fts_b / files:.2f}x) | {tan_s:.2f} | {tan_b / 1e6:.1f} ({tan_b / files:.2f}x) |"
    ]
    print("  " + builds[0], flush=True)
    rows = []
    for shape, query, _ in _queries(manifest):
        f_calls, t_calls = fts5_calls(db, query), tantivy_calls(index, query)
        both = {("fts5", k): v for k, v in f_calls.items()} | {("tantivy", k): v for k, v in t_calls.items()}
        med = cpu_medians({f"{e} {k}": v for (e, k), v in both.items()}, runs)
        cells, overlap = [], []
        for engine in ("fts5", "tantivy"):
            for variant in VARIANTS:
                key = f"{engine} {variant}"
                cells.append(f"{med[key]:.3f}" if key in med else "-")
        for variant in VARIANTS:
            if variant in f_calls:
                a, b = set(f_calls[variant]()), set(t_calls[variant]())
                overlap.append(f"{len(a & b)}/{max(len(a), len(b))}")
            else:
                overlap.append("-")
        rows.append(
            f"| {n:,} | {shape} | `{query}` | " + " | ".join(cells) + " | " + " / ".join(overlap) + " |"
        )
        print("  " + rows[-1], flush=True)
    db.close()
    ladder = ladder_split(ws, manifest, out / f"home-serve-{n}" / "new", runs)
    return [*builds, "", *rows, "", *ladder]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--runs", type=int, default=51)
    ap.add_argument(
        "--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "box-memory-recall-bench"
    )
    args = ap.parse_args()
    import tantivy

    print(
        f"Machine: {os.cpu_count()} cores; Python {sys.version.split()[0]}; SQLite "
        f"{sqlite3.sqlite_version}; tantivy {getattr(tantivy, '__version__', '?')}; load average at start "
        f"{os.getloadavg()[0]:.2f}.",
        flush=True,
    )
    builds = [
        "| memories | documents | memory files MB | read + parse cpu s | FTS5 build cpu s | FTS5 MB "
        "(/ files) | tantivy build cpu s | tantivy MB (/ files) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    shapes = [
        "| memories | query shape | query | FTS5 body OR ms | FTS5 OR ms | FTS5 AND ms | FTS5 weighted ms "
        "| tantivy body OR ms | tantivy OR ms | tantivy AND ms | tantivy weighted ms "
        "| top-10 overlap body OR / OR / AND / weighted |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    ladder = [
        "| memories | query shape | statements | box_memory recall cpu ms/call | its SQL replayed ms "
        "| the rest (Python) ms | SQL share |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        print(f"{n} memories", flush=True)
        got = bench_size(n, args.out, args.runs)
        cut, cut2 = got.index(""), len(got) - 1 - got[::-1].index("")
        builds += got[:cut]
        shapes += got[cut + 1 : cut2]
        ladder += got[cut2 + 1 :]
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(["", *builds, "", *shapes, "", *ladder]))


if __name__ == "__main__":
    main()
