"""`box-memory serve` recall latency over stdio, with the official MCP client, warm.

Usage: python bench/serve_bench.py [--sizes 10000,100000] [--runs 51] [--out DIR]
                                   [--python PY] [--baseline-python PY]

For each size, the corpus of `bench/recall_bench.py` (bench/corpus.py, seed 7) under DIR is reused
or generated. One `box-memory serve --transport stdio -w WS` process is spawned per interpreter
(`--python`, and `--baseline-python` when given: e.g. a venv holding an older build); each gets its
own `mcp.Client` session. After one untimed recall per query shape (the recall cache is warm), the
bench alternates call by call between the servers and the query shapes of recall_bench.py, so every
server sees the same machine load. Timed: one `client.call_tool("recall", ...)` round trip as the
client sees it (JSON-RPC framing over the pipes, the server's work, the client's validation of the
result against the tool's output schema). Also checked per shape: the hits' ids equal those of the
CLI's `recall --json`.

Reported per server and shape: p50 and p90 in milliseconds, and the server process's CPU time per
call (user + system from /proc, summed over the runs and divided by their number: clock ticks are
10 ms, so only the mean is meaningful), the steadier figure on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.corpus import generate  # noqa: E402
from bench.recall_bench import _queries  # noqa: E402


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("BOX_MEMORY_WORKSPACE", "PYTHONPATH")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["BOX_MEMORY_HOME"] = str(home)
    return env


def _pct(ms: list[float], q: float) -> float:
    return sorted(ms)[max(0, int(len(ms) * q + 0.5) - 1)]


def corpus(n: int, out: Path) -> tuple[Path, dict[str, Any]]:
    ws = out / f"ws-{n}"
    if not (ws / "manifest.json").exists():
        if ws.exists():
            shutil.rmtree(ws)
        generate(n, ws)
    return ws, orjson.loads((ws / "manifest.json").read_bytes())


async def bench_size(
    ws: Path, manifest: dict[str, Any], pythons: dict[str, str], home: Path, runs: int
) -> dict[str, dict[str, list[float]]]:
    from contextlib import AsyncExitStack

    from mcp import Client, StdioServerParameters

    shapes = [(shape, query) for shape, query, _ in _queries(manifest)]
    times: dict[str, dict[str, list[float]]] = {name: {s: [] for s, _ in shapes} for name in pythons}
    cpu: dict[str, dict[str, float]] = {name: dict.fromkeys(times[name], 0.0) for name in pythons}
    # One home (so one recall cache) per interpreter: builds of another cache schema never share one.
    envs = {name: _env(home / name) for name in pythons}
    cli_ids: dict[str, list[str]] = {}
    for shape, query in shapes:
        proc = subprocess.run(
            [pythons["new"], "-m", "box_memory", "recall", query, "-w", str(ws), "--json"],
            env=envs["new"], cwd=str(ws), capture_output=True, check=False,
        )  # fmt: skip
        cli_ids[shape] = [h["id"] for h in orjson.loads(proc.stdout)["data"]["hits"]]
    async with AsyncExitStack() as stack:
        clients = {}
        for name, py in pythons.items():
            params = StdioServerParameters(
                command=py, args=["-m", "box_memory", "serve", "-w", str(ws)], env=envs[name], cwd=str(ws)
            )
            clients[name] = await stack.enter_async_context(Client(params))
        for name, client in clients.items():  # warm: first call opens the workspace and cache
            for shape, query in shapes:
                res = await client.call_tool("recall", {"query": query})
                ids = [h["id"] for h in res.structured_content["data"]["hits"]]  # type: ignore[index]
                if ids != cli_ids[shape]:
                    raise SystemExit(
                        f"{name}: serve and CLI disagree on {shape!r}: {ids} != {cli_ids[shape]}"
                    )
        pids = _server_pids(pythons)
        for _ in range(runs):
            for shape, query in shapes:
                for name, client in clients.items():
                    c = _cpu_ms(pids[name])
                    t = time.perf_counter()
                    res = await client.call_tool("recall", {"query": query})
                    assert not res.is_error, res.content
                    times[name][shape].append((time.perf_counter() - t) * 1000)
                    cpu[name][shape] += _cpu_ms(pids[name]) - c
    return times, cpu


def _server_pids(pythons: dict[str, str]) -> dict[str, int]:
    """The serve processes this bench spawned (children of this process), by interpreter."""
    out: dict[str, int] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"serve" in argv:
            for name, py in pythons.items():
                if argv[0].decode() == py:
                    out[name] = int(d.name)
    return out


def _cpu_ms(pid: int) -> float:
    """User + system CPU time of a process so far (clock-tick resolution, 10 ms here)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def in_process(ws: Path, manifest: dict[str, Any], home: Path, runs: int) -> list[str]:
    """The server's own work per recall, no transport: `MemoryServer.call` in this process on its
    kept-open cache (the interpreter running this bench; its box_memory is what is measured)."""
    os.environ["BOX_MEMORY_HOME"] = str(home)
    from box_memory.serve.server import MemoryServer

    server = MemoryServer(str(ws))
    shapes = [(shape, query) for shape, query, _ in _queries(manifest)]
    for _, query in shapes:
        server.call("recall", {"query": query})
    wall: dict[str, list[float]] = {s: [] for s, _ in shapes}
    cpu = dict.fromkeys(wall, 0.0)
    refresh: dict[str, list[float]] = {s: [] for s, _ in shapes}
    for _ in range(runs):
        for shape, query in shapes:
            c, t = time.process_time(), time.perf_counter()
            result, _ = server.call("recall", {"query": query})
            wall[shape].append((time.perf_counter() - t) * 1000)
            cpu[shape] += (time.process_time() - c) * 1000
            refresh[shape].append(result["data"]["cache"]["refresh_ms"])
    n = manifest["n"]
    return [
        f"| {n:,} | {s} | {statistics.median(wall[s]):.2f} | {cpu[s] / runs:.2f} "
        f"| {statistics.median(refresh[s]):.2f} |"
        for s, _ in shapes
    ]


def add_build_args(ap: argparse.ArgumentParser) -> None:
    """--out, --python and --baseline-python, shared by the benches that compare two builds."""
    ap.add_argument(
        "--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "box-memory-recall-bench"
    )
    ap.add_argument("--python", default=sys.executable, help="interpreter whose box_memory serves")
    ap.add_argument("--baseline-python", default=None, help="a second interpreter, e.g. an older build")


def sized_build_args(doc: str, runs: int) -> tuple[argparse.Namespace, dict[str, str]]:
    """The command line of a bench that compares builds over corpus sizes (--sizes, --runs and
    `add_build_args`): the parsed arguments and `builds(...)`, with the output folder made and the
    machine's load printed."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--runs", type=int, default=runs)
    add_build_args(ap)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
    return args, builds(args)


def sized_main(
    doc: str, runs: int, header: list[str], bench_size: Callable[[int, Path, dict[str, str], int], list[str]]
) -> None:
    """A bench over corpus sizes and builds: `bench_size(n, out, pythons, runs)` gives each size's
    table rows under `header`; the table is printed after the load at the end."""
    args, pythons = sized_build_args(doc, runs)
    rows = list(header)
    for n in (int(s) for s in args.sizes.split(",")):
        rows += bench_size(n, args.out, pythons, args.runs)
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(rows))


def builds(args: argparse.Namespace) -> dict[str, str]:
    """{"baseline": py, "new": py} (baseline first, so runs alternate starting with it), or {"new": py}."""
    if args.baseline_python:
        return {"baseline": args.baseline_python, "new": args.python}
    return {"new": args.python}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--runs", type=int, default=51)
    add_build_args(ap)
    ap.add_argument(
        "--in-process", action="store_true", help="time MemoryServer.call in this process instead"
    )
    args = ap.parse_args()
    if args.in_process:
        rows = [
            "| memories | query shape | wall p50 ms | cpu ms/call | refresh p50 ms |",
            "|---:|---|---:|---:|---:|",
        ]
        for n in (int(s) for s in args.sizes.split(",")):
            ws, manifest = corpus(n, args.out)
            rows += in_process(ws, manifest, args.out / f"home-serve-{n}" / "new", args.runs)
        print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
        print("\n".join(rows))
        return
    pythons = builds(args)
    args.out.mkdir(parents=True, exist_ok=True)
    print(
        f"Machine: {os.cpu_count()} cores; Python {sys.version.split()[0]}; "
        f"load average at start {os.getloadavg()[0]:.2f}."
    )
    header = (
        "| memories | query shape | "
        + " | ".join(f"{n} p50 (p90) ms | {n} server cpu ms/call" for n in pythons)
        + " |"
    )
    lines = [header, "|---:|---|" + "---:|---:|" * len(pythons)]
    for n in (int(s) for s in args.sizes.split(",")):
        ws, manifest = corpus(n, args.out)
        home = args.out / f"home-serve-{n}"
        times, cpu = anyio.run(bench_size, ws, manifest, pythons, home, args.runs)
        shapes = list(next(iter(times.values())))
        for shape in shapes:
            cells = [
                f"{statistics.median(times[name][shape]):.2f} ({_pct(times[name][shape], 0.9):.2f})"
                f" | {cpu[name][shape] / args.runs:.1f}"
                for name in pythons
            ]
            lines.append(f"| {n:,} | {shape} | " + " | ".join(cells) + " |")
        print("\n".join(lines[-len(shapes) :]), flush=True)
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
