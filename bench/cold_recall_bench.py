"""Cold recall on a Box workspace: tool calls and wall time of the first recall on a fresh machine.

Usage: python bench/cold_recall_bench.py [--sizes 10000,100000] [--latency-ms 50]
           [--before /tmp/coldbox-old/bin/python] [--before-timeout-s 200] [--out /tmp/coldbox-bench]
           [--profile DIR]

A Box MCP emulator (real MCP over HTTP on 127.0.0.1) serves a folder; each tool call waits
`--latency-ms` first. A workspace is made with `init` through the emulator, then seeded directly
on disk (the emulator's backing folder is a local folder): the memory files of a deterministic
corpus (bench/corpus.py, default scope only) are copied in, and each folder index is rebuilt with
the project's own code (`save_index` with every entry's Box file id, then `refresh_rollup`), as
`index-rebuild` would write it - without 100,000 uploads. Seeding runs with no command deadline
(`BOX_MEMORY_DEADLINE_S=0`); the recalls measured run with the default one. Below 50,000
memories the corpus is all in `memories/`; from 50,000 on it is spread over four team folders as
well (40% in `memories/`), because 100,000 memories in one folder make a 77 MB `_index.json`, over
the 50 MB Box returns as text (`get_file_content`), which no reader of the plugin layout can read
(`status` suggests the monthly layout long before that).

Then, for each query shape (id, [[wikilink]], slug, title, tag, kind/tag filter, a word found only
in bodies), one `python -m box_memory recall ... --json` process with an EMPTY user cache (no
recall cache, text cache, listings or tool catalogue): tool calls (`tools/call`), calls by tool,
wall time, and the recall process's own CPU (the rest of the wall is the calls' latency and the
emulator's work: serving the indexes, and a search that reads every file, where Box has an index).
`--before` runs the same with another interpreter (a non-editable install of an earlier main), for
the id query only (a cold build's cost does not depend on the shape; a main from before the
indexes answered a cold recall read every memory file), stopped after `--before-timeout-s`. The
emulator is this tree's either way: run an earlier tree's copy of this bench for its emulator too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOKEN = "bench-token"  # the emulator's fixture token
RECALL = ["-m", "box_memory", "recall", "--json"]


def seed(emu: Any, box: Path, n: int, scratch: Path) -> tuple[str, dict[str, Any]]:
    """A cloud workspace of `n` memories; returns (its spec, the corpus manifest)."""
    from typer.testing import CliRunner

    from bench.corpus import TEAM_NAMES, generate
    from box_memory.cli.app import app
    from box_memory.errors import BoxMemoryError
    from box_memory.store.cloud import close_all
    from box_memory.workspace.index import FolderIndex, parse_index, refresh_rollup, save_index
    from box_memory.workspace.resolve import open_workspace

    teams = TEAM_NAMES[:4] if n >= 50_000 else []
    args = ["init", f"bench-{n}", "--parent", "0", "--json"] + [x for t in teams for x in ("--team", t)]
    init = CliRunner().invoke(app, args)
    spec = json.loads(init.stdout)["data"]["workspace"]
    corpus = scratch / f"corpus-{n}"
    manifest = generate(n, corpus, teams=len(teams))
    ws_dir = box / f"bench-{n}"
    ws = open_workspace(spec)
    for folder in ws.index_folders():
        src = corpus / folder / "_index.json"
        if not src.exists():
            continue
        data = parse_index(src.read_bytes(), str(src))
        for e in data["entries"]:
            dst = ws_dir / e["local_path"]
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(corpus / e["local_path"], dst)
        # One scan of the folder assigns every file its Box id (id_for_path scans per call).
        listed = emu.fs.children(emu.fs.get(emu.fs.id_for_path(f"bench-{n}/{folder}")))
        ids = {item.name: item.id for item in listed}
        for e in data["entries"]:
            e["file_id"] = ids[e["local_path"].rsplit("/", 1)[-1]]
        old = ws.store.read_bytes(f"{folder}/_index.json")
        idx = FolderIndex(folder, {**json.loads(old), "entries": data["entries"]})
        idx.mark_dirty()
        save_index(ws, idx)
    try:
        refresh_rollup(ws)
    except BoxMemoryError as e:  # 100,000 memories: a 90 MB rollup, more than one upload takes
        print(f"rollup not refreshed ({e}); recall does not read it", flush=True)
    close_all()
    return spec, manifest


def queries(manifest: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [
        ("id", [manifest["probe_id"]]),
        ("[[wikilink]]", [f"[[{manifest['probe_title']}]]"]),
        ("slug", [manifest["probe_slug"]]),
        ("title", [manifest["probe_title"]]),
        ("tag", [_tag(manifest)]),
        ("kind/tag filter", ["--kind", "decision", "--tag", _tag(manifest)]),
        ("body-only word", [manifest["probe_body_word"]]),
    ]


def _tag(manifest: dict[str, Any]) -> str:
    return str(manifest.get("probe_tag") or "auth")


def cold_recall(
    emu: Any, python: str, spec: str, home: Path, args: list[str], timeout: float, profile: str = ""
) -> dict[str, Any]:
    shutil.rmtree(home / "cache", ignore_errors=True)  # a fresh machine: no cache of any kind
    emu.reset_calls()
    env = {**os.environ, "BOX_MEMORY_HOME": str(home)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [python, *(["-m", "cProfile", "-o", profile] if profile else []), *RECALL, *args, "-w", spec],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            cwd="/",
        )
        done = proc.returncode == 0
        data = json.loads(proc.stdout) if done else {}
    except subprocess.TimeoutExpired:
        done, data = False, {}
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    names = Counter(c.name for c in emu.calls)
    hits = [h["title"] for h in (data.get("data") or {}).get("hits", [])]
    return {
        "wall": wall,
        "cpu": cpu,
        "calls": sum(names.values()),
        "names": dict(names),
        "done": done,
        "hits": hits,
        "warnings": data.get("warnings", []),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--before", default="", help="the interpreter of a non-editable install of main")
    ap.add_argument("--before-timeout-s", type=float, default=200)
    ap.add_argument("--out", type=Path, default=Path("/tmp/coldbox-bench"))
    ap.add_argument("--profile", type=Path, help="write a cProfile of each recall (after) into this folder")
    a = ap.parse_args()
    if a.profile:
        a.profile.mkdir(parents=True, exist_ok=True)
    if a.out.exists():
        shutil.rmtree(a.out)
    home = a.out / "home"
    os.environ.update(
        {"BOX_MEMORY_HOME": str(home), "BOX_ACCESS_TOKEN": TOKEN, "BOX_MEMORY_LOCK_SETTLE_S": "0.1"}
    )
    from box_memory.emulator.testing import running_emulator

    rows: list[tuple[int, str, str, dict[str, Any]]] = []
    with running_emulator(a.out / "box", token=TOKEN) as emu:
        os.environ["BOX_MCP_URL"] = emu.url
        for n in [int(s) for s in a.sizes.split(",") if s]:
            t = time.perf_counter()
            os.environ["BOX_MEMORY_DEADLINE_S"] = "0"  # seeding only: 100,000 files copied in
            spec, manifest = seed(emu, a.out / "box", n, a.out / "scratch")
            del os.environ["BOX_MEMORY_DEADLINE_S"]
            print(f"seeded {n} memories in {time.perf_counter() - t:.0f} s ({spec})", flush=True)
            emu.configure(latency_ms=a.latency_ms)
            if a.before:
                r = cold_recall(emu, a.before, spec, home, [manifest["probe_id"]], a.before_timeout_s)
                rows.append((n, "id (the --before build)", "before", r))
                print(_line(rows[-1]), flush=True)
            for label, args in queries(manifest):
                prof = (
                    str(a.profile / f"{n}-{''.join(c for c in label if c.isalnum())}.prof")
                    if a.profile
                    else ""
                )
                r = cold_recall(emu, sys.executable, spec, home, args, 600, prof)
                rows.append((n, label, "after", r))
                print(_line(rows[-1]), flush=True)
            emu.configure(latency_ms=0)
    print()
    print(
        f"| memories | query | tree | tool calls | wall s (at {a.latency_ms:g} ms a call) "
        "| recall's own CPU s | calls by tool |"
    )
    print("|---:|---|---|---:|---:|---:|---|")
    for n, label, tree, r in rows:
        wall = f"{r['wall']:.1f}" + ("" if r["done"] else " (stopped)")
        by = ", ".join(f"{k} {v}" for k, v in sorted(r["names"].items()))
        print(f"| {n:,} | {label} | {tree} | {r['calls']} | {wall} | {r['cpu']:.1f} | {by} |")


def _line(row: tuple[int, str, str, dict[str, Any]]) -> str:
    n, label, tree, r = row
    state = "" if r["done"] else " NOT DONE"
    return (
        f"{n:>7} {tree:6} {label:28} calls {r['calls']:>6}  {r['wall']:7.2f} s{state}  "
        f"hits {r['hits'][:2]}  warnings {[w[:70] for w in r['warnings']]}"
    )


if __name__ == "__main__":
    main()
