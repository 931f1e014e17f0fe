"""The floor under `serve` recall over stdio: the MCP SDK's round trip for a tool that does no work.

Usage: python bench/serve_floor_bench.py [--runs 400] [--out DIR]

A minimal stdio server on the same SDK (`mcp.server.Server`, one tool named `recall` with the same
output schema as box-memory's) answers every call with a fixed result, and the official
`mcp.Client` times `call_tool` round trips, as bench/serve_bench.py does for the real server. The
fixed results are real box-memory recall results over the 10k corpus of bench/recall_bench.py
(DIR/ws-10000): a memory id (one hit) and a four-word free-text query (ten hits), so the payload
the SDK validates and serializes on both sides is the real one. Also run: the answer handed to a
worker thread first (as box-memory's server does, so a call can be timed out), and the real
`box-memory serve` on the same corpus for the same two queries. What is left between the floor
and the real server is the server's own work (bench/serve_bench.py --in-process).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.serve_bench import _cpu_ms, _env, _pct, corpus  # noqa: E402

FLOOR_SERVER = """
import os, sys, anyio, orjson
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from box_memory.serve.tools import RESULT_SCHEMA

payload = orjson.loads(open(sys.argv[1], "rb").read())
text = orjson.dumps(payload).decode()
threaded = sys.argv[2] == "thread"
tool = types.Tool(name="recall", description="fixed answer", output_schema=RESULT_SCHEMA,
                  input_schema={"type": "object", "properties": {"query": {"type": "string"}}})

async def on_list_tools(ctx, params):
    return types.ListToolsResult(tools=[tool])

async def on_call_tool(ctx, params):
    data = await anyio.to_thread.run_sync(lambda: payload) if threaded else payload
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=data, is_error=False)

server = Server("floor", on_list_tools=on_list_tools, on_call_tool=on_call_tool)

async def main():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""


async def _time(
    argv: list[str], env: dict[str, str], cwd: Path, query: str, runs: int
) -> tuple[list[float], float]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(cwd))
    async with Client(params) as client:
        for _ in range(5):  # warm: the cache, the catalogue, the client's schema validator
            await client.call_tool("recall", {"query": query})
        pid = _child_pid()
        cpu0 = _cpu_ms(pid)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            res = await client.call_tool("recall", {"query": query})
            times.append((time.perf_counter() - t) * 1000)
            assert not res.is_error, res.content
        return times, (_cpu_ms(pid) - cpu0) / runs


def _child_pid() -> int:
    """The one child process of this bench (the floor server)."""
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                return int(d.name)
    raise SystemExit("floor server not found")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument(
        "--out", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "box-memory-recall-bench"
    )
    args = ap.parse_args()
    ws, manifest = corpus(10000, args.out)
    home = args.out / "home-floor-10000"
    env = _env(home)
    os.environ["BOX_MEMORY_HOME"] = str(home)
    from box_memory.serve.server import MemoryServer

    server = MemoryServer(str(ws))
    queries = {"memory id": manifest["probe_id"], "four topics": "rollout canary retry backoff"}
    rows = [
        "| query | answer bytes | server | p50 (p90) ms | server cpu ms/call |",
        "|---|---:|---|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "floor_server.py"
        script.write_text(FLOOR_SERVER)
        print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
        for shape, query in queries.items():
            payload, _ = server.call("recall", {"query": query})
            answer = Path(tmp) / f"{shape.replace(' ', '-')}.json"
            answer.write_bytes(orjson.dumps(payload))
            variants: dict[str, list[str]] = {
                "SDK floor, fixed answer": [sys.executable, str(script), str(answer), "inline"],
                "SDK floor, answer from a worker thread": [
                    sys.executable,
                    str(script),
                    str(answer),
                    "thread",
                ],
                "box-memory serve": [sys.executable, "-m", "box_memory", "serve", "-w", str(ws)],
            }
            for name, argv in variants.items():
                times, cpu = asyncio.run(_time(argv, env, ws, query, args.runs))
                rows.append(
                    f"| {shape} | {len(answer.read_bytes()):,} | {name} | {statistics.median(times):.2f} "
                    f"({_pct(times, 0.9):.2f}) | {cpu:.2f} |"
                )
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
