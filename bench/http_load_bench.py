"""`box-memory serve` over streamable HTTP under load: concurrent clients mixing recall and write.

Usage: python bench/http_load_bench.py [--size 10000] [--clients 4] [--seconds 60] [--write-share 0.1]
                                       [--out DIR] [--python PY] [--baseline-python PY]

A copy of the corpus of `bench/recall_bench.py` (`DIR/ws-N`, copied to a scratch folder per server so
the writes land nowhere else) is served by `PY -m box_memory serve --transport streamable-http` on
127.0.0.1. Each client is its own process with its own `mcp.Client` session; for `--seconds` it
calls, back to back, `recall` (a random query shape of recall_bench.py) or, with probability
`--write-share`, `write` (a new memory with a unique title). Reported: calls and recalls per
second, recall and write latency p50/p99 and the p99 over all calls (ms, as each client sees it;
with 10% writes the p99 over all calls lies in the write tail), failed calls, and the CPU
time per call of the server process and of the client processes together (where the time goes on a
2-core machine). Afterwards
every acknowledged write is checked: its file is on disk, its id is in its folder's `_index.json`,
and a fresh CLI `recall <id> --json` finds it. With `--baseline-python`, the same load runs against
that interpreter's server too, the two runs alternating (baseline first). The request loops are
bounded in time and only ever talk to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.recall_bench import _queries  # noqa: E402
from bench.serve_bench import _cpu_ms, _env, _pct, add_build_args, builds, corpus  # noqa: E402


def _client(url: str, queries: list[str], seconds: float, write_share: float, seed: int, out: Any) -> None:
    import anyio
    from mcp import Client

    rng = random.Random(seed)
    recalls: list[float] = []
    writes: list[float] = []
    acked: list[tuple[str, str]] = []
    failed: list[str] = []

    async def main() -> None:
        async with Client(url) as client:
            deadline = time.monotonic() + seconds
            i = 0
            while time.monotonic() < deadline:
                i += 1
                if rng.random() < write_share:
                    args = {
                        "content": f"Load note {seed}-{i}: the zanzibar queue drains at {i} per second.",
                        "title": f"Load write {seed} {i} {time.time_ns()}",
                    }
                    t = time.perf_counter()
                    res = await client.call_tool("write", args)
                    writes.append((time.perf_counter() - t) * 1000)
                    if res.is_error:
                        failed.append(str(res.content[0].text))  # type: ignore[union-attr]
                    else:
                        data = res.structured_content["data"]  # type: ignore[index]
                        acked.append((data["id"], data["file"]))
                else:
                    t = time.perf_counter()
                    res = await client.call_tool("recall", {"query": rng.choice(queries)})
                    recalls.append((time.perf_counter() - t) * 1000)
                    if res.is_error:
                        failed.append(str(res.content[0].text))  # type: ignore[union-attr]

    anyio.run(main)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru.ru_utime + ru.ru_stime) * 1000
    out.put({"recalls": recalls, "writes": writes, "acked": acked, "failed": failed, "cpu": cpu})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes]) -> None:
    import httpx2

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited with {proc.returncode}")
        try:
            httpx2.post(url, json={}, timeout=2.0)
            return
        except httpx2.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"serve did not answer on {url}")


def run_one(
    name: str, py: str, src: Path, manifest: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix=f"bm-load-{name}-"))
    ws = scratch / "ws"
    shutil.copytree(src, ws)
    env = _env(scratch / "home")
    queries = [q for _, q, _ in _queries(manifest)]
    subprocess.run(
        [py, "-m", "box_memory", "recall", "warm up", "-w", str(ws), "--json"],
        env=env, cwd=scratch, check=True, capture_output=True,
    )  # fmt: skip
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = ["serve", "--transport", "streamable-http", "--port", str(port), "-w", str(ws)]
    proc = subprocess.Popen(
        [py, "-m", "box_memory", *argv],
        env=env, cwd=scratch, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        _wait(url, proc)
        server_cpu = _cpu_ms(proc.pid)
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        t = time.perf_counter()
        procs = [
            ctx.Process(target=_client, args=(url, queries, args.seconds, args.write_share, 1000 * k + 1, q))
            for k in range(args.clients)
        ]
        for p in procs:
            p.start()
        results = [q.get(timeout=args.seconds + 120) for _ in procs]
        for p in procs:
            p.join()
        wall = time.perf_counter() - t
        server_cpu = _cpu_ms(proc.pid) - server_cpu
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    recalls = [x for r in results for x in r["recalls"]]
    writes = [x for r in results for x in r["writes"]]
    acked = [a for r in results for a in r["acked"]]
    failed = [f for r in results for f in r["failed"]]
    # Every acknowledged write: the file, the index entry, and a fresh CLI recall by id.
    lost: list[str] = []
    index_ids: dict[str, set[str]] = {}
    for mid, path in acked:
        folder = path.rsplit("/", 1)[0]
        if folder not in index_ids:
            data = orjson.loads((ws / folder / "_index.json").read_bytes())
            index_ids[folder] = {str(e.get("id")) for e in data["entries"]}
        if not (ws / path).is_file() or mid not in index_ids[folder]:
            lost.append(mid)
    sample = acked if len(acked) <= 50 else random.Random(0).sample(acked, 50)
    for mid, _ in sample:
        res = subprocess.run(
            [py, "-m", "box_memory", "recall", mid, "-w", str(ws), "--json"],
            env=env, cwd=scratch, capture_output=True, check=False,
        )  # fmt: skip
        hits = orjson.loads(res.stdout)["data"]["hits"]
        if [h["id"] for h in hits] != [mid]:
            lost.append(mid)
    shutil.rmtree(scratch, ignore_errors=True)
    return {
        "name": name,
        "wall": wall,
        "recalls": recalls,
        "writes": writes,
        "acked": len(acked),
        "failed": failed,
        "lost": sorted(set(lost)),
        "checked_by_cli": len(sample),
        "server_cpu": server_cpu,
        "client_cpu": sum(r["cpu"] for r in results),
        "load": os.getloadavg()[0],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--write-share", type=float, default=0.1)
    add_build_args(ap)
    args = ap.parse_args()
    pythons = builds(args)
    src, manifest = corpus(args.size, args.out)
    print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
    lines = [
        "| server | calls/s | recalls/s | recall p50 | recall p99 | writes | write p50 | write p99 "
        "| all p99 | failed | lost (of acknowledged) | server cpu ms/call | clients cpu ms/call "
        "| load after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, py in pythons.items():
        r = run_one(name, py, src, manifest, args)
        rec, wr = r["recalls"], r["writes"]
        calls = len(rec) + len(wr)
        lines.append(
            f"| {name} | {(len(rec) + len(wr)) / r['wall']:.0f} | {len(rec) / r['wall']:.0f} "
            f"| {statistics.median(rec):.1f} | {_pct(rec, 0.99):.1f} | {len(wr)} "
            f"| {statistics.median(wr) if wr else 0:.0f} | {_pct(wr, 0.99) if wr else 0:.0f} "
            f"| {_pct(rec + wr, 0.99):.1f} | {len(r['failed'])} "
            f"| {len(r['lost'])} of {r['acked']} ({r['checked_by_cli']} by CLI recall) "
            f"| {r['server_cpu'] / calls:.1f} | {r['client_cpu'] / calls:.1f} | {r['load']:.1f} |"
        )
        print(lines[-1], flush=True)
        for f in r["failed"][:5]:
            print("  failed:", f[:200])
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
