"""What one `box-memory write` costs as the workspace grows: CPU, bytes written, bytes uploaded.

Usage: python bench/write_bytes_bench.py [--sizes 1000,10000,100000] [--runs 3] [--large-runs 1]
           [--cloud-sizes 1000,10000] [--out DIR] [--python PY] [--baseline-python PY]

Each size N is one workspace with N memories in `memories/` (bench/write_bench.py's corpus; files
written directly and indexed in one go, as an `index-rebuild` would). Each round, for each build
(baseline first), a fresh `python -m box_memory write ... --quiet` process writes one new memory:

- "flat, rollup fresh": the default layout, the rollup refreshed moments ago (no build rewrites it);
- "flat, rollup 2 min old": the rollup last refreshed 2 minutes ago (a team writing every few
  minutes): a build that refreshes a large rollup at most every minute rewrites it here;
- "monthly" (new build only): the same workspace switched to `settings.memory_layout: "monthly"`,
  nothing moved (the N memories stay in `memories/`, new ones go to `memories/YYYY-MM/`).

`--interleave`: the local sizes are measured round by round (one write of every size and build,
then the next round), so the sizes are compared under the same load; it also prints each size's
CPU over the first size's, round by round. `--own-copies`: each build writes into its own copy of
the corpus, after one untimed write of its own there, so each timed write finds the index its own
build wrote last (one machine writing in a row); without it the builds alternate on one workspace.

Reported per write: the child's CPU (user + system, median), the bytes of the files it created or
replaced in the workspace (local), and on the cloud backend (the Box MCP emulator over HTTP on
127.0.0.1, the workspace seeded the same way in its folder) the bytes it uploaded
(`upload_file` + `upload_file_version` payloads) and its tool calls. Sizes of 100,000 and more run
`--large-runs` rounds; `--cases` picks some of the three cases. Cloud writes run with
BOX_MEMORY_DEADLINE_S=0: at 100,000 a flat write passes the 180 s command deadline against the
emulator (it lists 100,000 items and uploads a 77 MB index), and the bench reports what it costs
rather than where the deadline stops it. Run from a folder outside any
checkout so each interpreter imports its own installed box_memory. Corpora are kept in --out
(delete it to regenerate).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serve_bench import _env, builds  # noqa: E402
from bench.write_bench import memory_file  # noqa: E402
from box_memory.format import frontmatter  # noqa: E402
from box_memory.format.model import Memory, index_entry  # noqa: E402
from box_memory.workspace.index import FolderIndex, dump_index  # noqa: E402

TOKEN = "bench-token"  # the emulator's fixture token
CASES = ["flat, rollup fresh", "flat, rollup 2 min old", "monthly"]


def seed(ws: Path, n: int) -> None:
    """N memory files in `ws/memories/` (which exists: made by init) and their index, rollup."""
    folder = ws / "memories"
    entries = []
    for i in range(n):
        name, text = memory_file(i)
        raw = text.encode("utf-8")
        (folder / name).write_bytes(raw)
        meta, body = frontmatter.parse(text, name)
        mem = Memory(meta, body, f"memories/{name}")
        entries.append(index_entry(mem, filename=name, file_id=None, size_bytes=len(raw)))
    idx = FolderIndex("memories", {"version": 1, "folder_id": None, "entries": entries})
    idx.finalize("unknown")
    (folder / "_index.json").write_bytes(idx.to_bytes())
    roll = dict(idx.data, folder_path="", entries=[{**e, "folder_path": "memories/"} for e in entries])
    roll["child_indexes"] = [{"folder_path": "memories/", "folder_id": None, "index_file_id": None}]
    (ws / "_index.json").write_bytes(dump_index(roll))


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    out: dict[str, tuple[int, int, int]] = {}
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for de in it:
                if de.is_dir(follow_symlinks=False):
                    stack.append(Path(de.path))
                else:
                    st = de.stat(follow_symlinks=False)
                    out[de.path] = (st.st_size, st.st_mtime_ns, st.st_ino)
    return out


def written(before: dict[str, tuple[int, int, int]], after: dict[str, tuple[int, int, int]]) -> int:
    """Bytes of the files created or replaced (each is written whole)."""
    return sum(v[0] for k, v in after.items() if before.get(k) != v)


FAILED: dict[tuple[int, str, str, str], str] = {}  # (size, backend, case, build): its error line


def run(cmd: list[str], env: dict[str, str], cwd: Path) -> float | str:
    """CPU seconds (user + system) of the child, or its error's first line when it failed (a
    build that cannot write at this size: reported as such, never timed)."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return (err.strip().splitlines() or ["failed"])[0][:160]
    return usage.ru_utime + usage.ru_stime


def set_layout(ws: Path, layout: str | None) -> None:
    cfg_path = ws / "_box-memory.json"
    cfg = json.loads(cfg_path.read_bytes())
    if layout is None:
        cfg.get("settings", {}).pop("memory_layout", None)
    else:
        cfg.setdefault("settings", {})["memory_layout"] = layout
    cfg_path.write_text(json.dumps(cfg, indent=2))


def age_rollup(ws: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(ws / "_index.json", (t, t))


def env_for(home: Path, **extra: str) -> dict[str, str]:
    return {**_env(home), **extra}


def write_cmd(py: str, spec: str, label: str) -> list[str]:
    title = f"Bench bytes {label} {time.time_ns()}"
    return [py, "-m", "box_memory", "write", f"{title}: we decided the queue.", "--title", title,
            "-w", spec, "--quiet"]  # fmt: skip


Row = dict[str, list[float]]


def rounds(
    ws: Path, pythons: dict[str, str], runs: int, copies: dict[str, Path] | None = None
) -> Iterator[tuple[str, str, str]]:
    """(case, build, interpreter) round after round, the workspace set up for the case first
    (the monthly layout is the new build's alone); the flat layout is put back at the end.
    `copies`: the workspace each build writes into, when not `ws`."""
    for _ in range(runs):
        for case in CASES:
            for name, py in pythons.items():
                if case == "monthly" and name != "new":
                    continue
                target = (copies or {}).get(name, ws)
                set_layout(target, "monthly" if case == "monthly" else None)
                age_rollup(target, 120 if case == "flat, rollup 2 min old" else 0)
                yield case, name, py
    for target in {ws, *(copies or {}).values()}:
        set_layout(target, None)


def own_copies(ws: Path, pythons: dict[str, str], out: Path) -> dict[str, Path]:
    """With --own-copies: each build writes into its own copy of the corpus (consecutive writes of
    one build, as one machine makes them), after one untimed write of its own there."""
    copies = {}
    for name, py in pythons.items():
        mine = ws.with_name(f"{ws.name}-{name}")
        if mine.exists():
            shutil.rmtree(mine)
        shutil.copytree(ws, mine, symlinks=True)
        set_layout(mine, None)
        run(write_cmd(py, str(mine), name), env_for(out / f"home-{name}"), out)
        copies[name] = mine
    return copies


def local_rounds(
    ws: Path, n: int, pythons: dict[str, str], runs: int, out: Path, *, copies: dict[str, Path]
) -> dict[tuple[str, str], Row]:
    res: dict[tuple[str, str], Row] = {}
    for case, name, py in rounds(ws, pythons, runs, copies):
        target = copies.get(name, ws)
        before = snapshot(target)
        cpu = run(write_cmd(py, str(target), name), env_for(out / f"home-{name}"), out)
        if isinstance(cpu, str):
            FAILED[(n, "local", case, name)] = cpu
            continue
        row = res.setdefault((case, name), {"cpu": [], "bytes": []})
        row["cpu"].append(cpu)
        row["bytes"].append(written(before, snapshot(target)))
    return res


@contextmanager
def cloud_workspace(out: Path, n: int, py: str) -> Iterator[tuple[Any, str, Path]]:
    from box_memory.emulator.testing import running_emulator

    box = out / f"box-{n}"
    fresh = not box.exists()
    box.mkdir(parents=True, exist_ok=True)
    with running_emulator(box, token=TOKEN) as emu:
        env = env_for(out / "home-cloud-init", BOX_MCP_URL=emu.url, BOX_ACCESS_TOKEN=TOKEN)
        proc = subprocess.run(
            [py, "-m", "box_memory", "init", "bench", "--parent", "0", "--json"],
            env=env, cwd=out, capture_output=True, text=True, check=True,
        )  # fmt: skip
        spec = json.loads(proc.stdout)["data"]["workspace"]
        ws = box / "bench"
        if fresh:
            seed(ws, n)
        yield emu, spec, ws


def uploaded(emu: Any) -> tuple[int, int]:
    """(bytes uploaded, tool calls) since the last reset."""
    calls = emu.calls
    up = sum(
        len(str(c.arguments.get("file_content") or "").encode("utf-8"))
        for c in calls
        if c.name in ("upload_file", "upload_file_version")
    )
    return up, len(calls)


def cloud_rounds(out: Path, n: int, pythons: dict[str, str], runs: int) -> dict[tuple[str, str], Row]:
    res: dict[tuple[str, str], Row] = {}
    with cloud_workspace(out, n, pythons["new"]) as (emu, spec, ws):
        for case, name, py in rounds(ws, pythons, runs):
            env = env_for(
                out / f"home-cloud-{name}", BOX_MCP_URL=emu.url, BOX_ACCESS_TOKEN=TOKEN,
                BOX_MEMORY_DEADLINE_S="0",
            )  # fmt: skip
            emu.reset_calls()
            cpu = run(write_cmd(py, spec, name), env, out)
            if isinstance(cpu, str):
                FAILED[(n, "cloud", case, name)] = cpu
                continue
            up, calls = uploaded(emu)
            row = res.setdefault((case, name), {"cpu": [], "up": [], "calls": []})
            row["cpu"].append(cpu)
            row["up"].append(up)
            row["calls"].append(calls)
    return res


def _mb(x: float) -> str:
    return f"{x / 1e6:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--cloud-sizes", default="1000,10000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--large-runs", type=int, default=1, help="rounds at 100,000 memories and more")
    ap.add_argument("--out", type=Path, default=Path("/tmp/write-bytes-bench"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--baseline-python", default=None)
    ap.add_argument("--cases", default="|".join(CASES), help="separated by |: " + " | ".join(CASES))
    ap.add_argument(
        "--own-copies",
        action="store_true",
        help="local: each build writes into its own copy of the corpus, after an untimed write of its own "
        "(without it the builds alternate on one workspace: each write finds an index the other wrote)",
    )
    ap.add_argument(
        "--interleave",
        action="store_true",
        help="local: one round of every size, then the next (the sizes compared under the same load), "
        "with each size's CPU over the first size's, round by round",
    )
    args = ap.parse_args()
    CASES[:] = [c.strip() for c in args.cases.split("|") if c.strip() in CASES]
    pythons = builds(args)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
    lines = [
        "| memories in memories/ | backend | case | build | write cpu s (median) | MB written locally"
        " | MB uploaded | tool calls | runs |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|",
    ]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results: dict[int, dict[tuple[str, str], Row]] = {}
    prepared: dict[int, tuple[Path, dict[str, Path]]] = {}
    for n in sizes:
        runs = args.large_runs if n >= 100_000 else args.runs
        ws = args.out / f"ws-{n}"
        if not ws.exists():
            subprocess.run(
                [pythons["new"], "-m", "box_memory", "init", "--path", str(ws), "--json"],
                env=env_for(args.out / "home-init"), cwd=args.out, capture_output=True, check=True,
            )  # fmt: skip
            seed(ws, n)
        size = (ws / "memories" / "_index.json").stat().st_size
        print(f"{n:,} memories: memories/_index.json {size / 1e6:.1f} MB, rollup "
              f"{(ws / '_index.json').stat().st_size / 1e6:.1f} MB", flush=True)  # fmt: skip
        prepared[n] = (ws, own_copies(ws, pythons, args.out) if args.own_copies else {})
        if not args.interleave:
            results[n] = local_rounds(ws, n, pythons, runs, args.out, copies=prepared[n][1])
    for r in range(max(args.runs, args.large_runs) if args.interleave else 0):
        for n in sizes:  # one round of every size, then the next: each size under the same load
            if r < (args.large_runs if n >= 100_000 else args.runs):
                for key, row in local_rounds(
                    *prepared[n][:1], n, pythons, 1, args.out, copies=prepared[n][1]
                ).items():
                    into = results.setdefault(n, {}).setdefault(key, {"cpu": [], "bytes": []})
                    into["cpu"] += row["cpu"]
                    into["bytes"] += row["bytes"]
    for n in sizes:
        for (case, name), row in results.get(n, {}).items():
            lines.append(
                f"| {n:,} | local | {case} | {name} | {statistics.median(row['cpu']):.2f} | "
                f"{_mb(statistics.median(row['bytes']))} | - | - | {len(row['cpu'])} |"
            )
    print("\n".join(lines), flush=True)
    if args.interleave and len(sizes) > 1:
        small = results.get(sizes[0], {})
        for n in sizes[1:]:
            for (case, name), row in results.get(n, {}).items():
                base = small.get((case, name), {"cpu": []})["cpu"]
                ratios = [a / b for a, b in zip(row["cpu"], base, strict=False) if b]
                if ratios:
                    each = ", ".join(f"{x:.2f}" for x in ratios)
                    print(f"{n:,} over {sizes[0]:,} ({case}, {name}): median of the per-round ratios "
                          f"{statistics.median(ratios):.2f}x ({each})")  # fmt: skip
    for n in (int(s) for s in args.cloud_sizes.split(",") if s):
        runs = args.large_runs if n >= 100_000 else args.runs
        for (case, name), row in cloud_rounds(args.out, n, pythons, runs).items():
            lines.append(
                f"| {n:,} | cloud (emulator) | {case} | {name} | {statistics.median(row['cpu']):.2f} | - | "
                f"{_mb(statistics.median(row['up']))} | {statistics.median(row['calls']):.0f} | "
                f"{len(row['cpu'])} |"
            )
        print("\n".join(lines[-5:]), flush=True)
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))
    for (size, backend, case, name), err in FAILED.items():
        print(f"FAILED at {size:,} memories ({backend}, {case}, {name}): {err}")


if __name__ == "__main__":
    main()
