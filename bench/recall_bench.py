"""`box-memory recall` end to end, cold process, side by side with ripgrep over the same files.

Usage: python bench/recall_bench.py [--sizes 1000,10000,100000] [--runs 11] [--out DIR]

For each size, a deterministic corpus (bench/corpus.py) is generated once under DIR (reused on the
next run). Every timed recall is a fresh `python -m box_memory recall QUERY -w WS --json` process,
timed from the parent: interpreter start, imports, workspace open, the recall cache's freshness
check, the query, the JSON output. The OS file cache is warm (each command runs untimed first) and
so is the recall cache (built by the first, untimed, recall). ripgrep lists the memory files that
contain any of the same words (`rg -l -i -F --glob '*.md' -e WORD...`): a scan with no ranking,
the floor a grep-based recall could reach. Reported: wall-clock medians (p90 in brackets) and the
median CPU time (user + system of the child, all its threads) in milliseconds; CPU time is the
steadier number on a shared machine. All commands of one size run interleaved, round by round,
with `box-memory --version` among them: "vs --version" is recall's cost over the bare CLI start.

Also measured once per size: the recall cache's cold build (cache deleted), and the first recall
right after a `write` (the incremental refresh). The corpus gets those few writes; delete DIR for
a pristine one.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import generate  # noqa: E402


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what users run: cached bytecode
    env.pop("BOX_MEMORY_WORKSPACE", None)
    env["BOX_MEMORY_HOME"] = str(home)
    env["PYTHONPATH"] = str(ROOT)
    return env


def _time(
    cmds: dict[str, list[str]], env: dict[str, str], runs: int
) -> dict[str, tuple[list[float], list[float]]]:
    """Wall and CPU (user + system, all threads) ms of fresh processes, the commands interleaved
    round by round so that every one of them sees the same machine load."""
    for cmd in cmds.values():
        subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm the OS cache, untimed
    out: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in cmds}
    for _ in range(runs):
        for key, cmd in cmds.items():
            t = time.perf_counter()
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(proc.pid, 0)
            out[key][0].append((time.perf_counter() - t) * 1000)
            out[key][1].append((usage.ru_utime + usage.ru_stime) * 1000)
            err = proc.stderr.read() if proc.stderr else b""
            code = os.waitstatus_to_exitcode(status)
            if code not in (0, 1):  # rg exits 1 when nothing matches
                raise SystemExit(f"{cmd} failed ({code}): {err.decode()[-500:]}")
    return out


def _fmt(ms: list[float]) -> str:
    p90 = sorted(ms)[max(0, int(len(ms) * 0.9) - 1)]
    return f"{statistics.median(ms):.0f} ({p90:.0f})"


def _cell(times: tuple[list[float], list[float]]) -> str:
    """`wall p50 (p90) | cpu p50`."""
    wall, cpu = times
    return f"{_fmt(wall)} | {statistics.median(cpu):.0f}"


def _queries(m: dict) -> list[tuple[str, str, list[str]]]:
    """(shape, recall query, the words ripgrep scans for)."""
    title_words = m["probe_title"].lower().split()
    return [
        ("memory id", m["probe_id"], [m["probe_id"]]),
        ("wikilink", f"[[{m['probe_title']}]]", [m["probe_title"]]),
        ("slug", m["probe_slug"], [m["probe_slug"]]),
        ("structured", "kind:decision tag:auth", ["kind: decision", "auth"]),
        ("title words", " ".join(title_words[:2]), title_words[:2]),
        ("question", "what did we decide about kafka retry", ["kafka", "retry"]),
        ("four topics", "rollout canary retry backoff", ["rollout", "canary", "retry", "backoff"]),
        ("rare body word", m["probe_body_word"], [m["probe_body_word"]]),
    ]


def _recall_cmd(ws: Path, query: str) -> list[str]:
    return [sys.executable, "-m", "box_memory", "recall", query, "-w", str(ws), "--json"]


def bench_size(n: int, out: Path, runs: int, rg: str | None) -> list[str]:
    ws = out / f"ws-{n}"
    if not (ws / "manifest.json").exists():
        if ws.exists():
            shutil.rmtree(ws)
        t = time.perf_counter()
        generate(n, ws)
        print(f"  corpus of {n}: {time.perf_counter() - t:.1f} s", flush=True)
    manifest = orjson.loads((ws / "manifest.json").read_bytes())
    home = out / f"home-{n}"
    env = _env(home)
    # The recall cache's cold build: no cache at all.
    shutil.rmtree(home / "cache", ignore_errors=True)
    t = time.perf_counter()
    subprocess.run(_recall_cmd(ws, "warm up"), env=env, capture_output=True, check=True)
    build_s = time.perf_counter() - t
    cmds = {"version": [sys.executable, "-m", "box_memory", "--version"]}
    queries = _queries(manifest)
    for shape, query, words in queries:
        cmds["recall " + shape] = _recall_cmd(ws, query)
        if rg:
            cmds["rg " + shape] = [rg, "-l", "-i", "-F", "--glob", "*.md"]
            for w in words:
                cmds["rg " + shape] += ["-e", w]
            cmds["rg " + shape].append(str(ws))
    times = _time(cmds, env, runs)
    floor = statistics.median(times["version"][0])
    rows = [f"| {n:,} | `box-memory --version` (floor) | | {_cell(times['version'])} | | - | - |"]
    for shape, query, _words in queries:
        t = times["recall " + shape]
        rg_cell = _cell(times["rg " + shape]) if rg else "- | -"
        over = statistics.median(t[0]) - floor
        rows.append(f"| {n:,} | {shape} | `{query}` | {_cell(t)} | {over:+.0f} | {rg_cell} |")
    print("  " + "\n  ".join(rows), flush=True)
    # The first recall after a write: one folder re-read, one memory file re-read.
    after = []
    for i in range(3):
        subprocess.run(
            [sys.executable, "-m", "box_memory", "write", f"Bench note {i} about the zanzibar queue.",
             "--title", f"Bench recall write {time.time_ns()}", "-w", str(ws), "--quiet"],
            env=env, check=True,
        )  # fmt: skip
        t = time.perf_counter()
        subprocess.run(_recall_cmd(ws, "zanzibar"), env=env, capture_output=True, check=True)
        after.append((time.perf_counter() - t) * 1000)
    extra = (
        f"| {n:,} | cold cache build | (cache deleted) | {build_s * 1000:.0f} | | | - | - |\n"
        f"| {n:,} | first recall after a write | `zanzibar` | {_fmt(after)} | | | - | - |"
    )
    print("  " + extra.replace("\n", "\n  "), flush=True)
    return [*rows, extra]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument(
        "--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "box-memory-recall-bench"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    compileall.compile_dir(str(ROOT / "box_memory"), quiet=1)  # what an installed package has
    rg = shutil.which("rg")
    env = _env(args.out / "home-floor")
    floor = _time({"py": [sys.executable, "-c", "pass"]}, env, args.runs)["py"]
    floor_py = _cell(floor).replace(" | ", " ms, cpu ")
    print(f"python -c pass: {floor_py} ms", flush=True)
    if not rg:
        print("ripgrep (rg) not found: its column is left empty (apt-get install -y ripgrep)")
    rg_version = "no ripgrep"
    if rg:
        rg_version = subprocess.run([rg, "--version"], capture_output=True, text=True, check=False).stdout
        rg_version = " ".join(rg_version.split()[:2])
    lines = [
        f"Machine: {os.cpu_count()} cores; Python {sys.version.split()[0]}; {rg_version}; "
        f"load average at start {os.getloadavg()[0]:.2f}.",
        f"Interpreter floor: `python -c pass` {floor_py} ms.",
        "",
        "| memories | query shape | query | recall ms p50 (p90) | cpu | vs --version "
        "| rg ms p50 (p90) | rg cpu |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        print(f"{n} memories", flush=True)
        lines += bench_size(n, args.out, args.runs, rg)
    lines.append(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
