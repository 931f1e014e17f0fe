"""Cloud CLI commands as fresh processes against the local Box MCP emulator, one or two builds.

Usage: python bench/cli_cloud_bench.py [--runs 9] [--memories 20] [--out DIR]
                                       [--python PY] [--baseline-python PY]

The emulator (`python -m box_memory.emulator`, real MCP over streamable HTTP on 127.0.0.1, no
added latency) runs in its own process for the whole bench. Each build gets its own
BOX_MEMORY_HOME and its own workspace in the emulator's folder, seeded with `--memories` memories
by that build's CLI, then warmed by one untimed run of each command (tool catalogue cache,
listings, recall cache). Round by round, every build runs `--version`, `status`, `recall` and
`write`, interleaved, so both builds see the same machine. Every timed command is a fresh
`PY -m box_memory ...` process; wall from the parent, CPU as the child's user + system
(`os.wait4`). Last, one `PY -X importtime -m box_memory status` per build: the import time of
what a cloud command loads, the slowest top-level imports, and whether the `mcp` SDK was among
them. Bytecode is written (PYTHONDONTWRITEBYTECODE is dropped) and warmed before timing.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.after_write_bench import _run  # noqa: E402
from bench.serve_bench import _env, _pct, builds  # noqa: E402

TOKEN = "bench-token"  # the emulator's fixture token
COMMANDS = ("--version", "status", "recall", "write")
COMPILE_ALL = (
    "import box_memory, compileall, os; compileall.compile_dir(os.path.dirname(box_memory.__file__), quiet=1)"
)


def start_emulator(folder: Path) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "box_memory.emulator", "--root", str(folder), "--port", "0"]
    proc = subprocess.Popen([*argv, "--token", TOKEN], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.search(r"listening on (http\S+)", line)
    if not found:
        proc.kill()
        raise SystemExit(f"the emulator did not start: {line!r}")
    return proc, found.group(1)


def argv(py: str, command: str, spec: str, i: int) -> list[str]:
    base = [py, "-m", "box_memory"]
    if command == "--version":
        return [*base, "--version"]
    if command == "status":
        return [*base, "status", "-w", spec, "--json"]
    if command == "recall":
        return [*base, "recall", "queue retry", "-w", spec, "--json"]
    return [
        *base, "write", f"Bench note {i}: the queue retries with back-off.",
        "--title", f"Bench cloud note {time.time_ns()}", "-w", spec, "--quiet",
    ]  # fmt: skip


def seed(py: str, env: dict[str, str], name: str, memories: int, cwd: Path) -> str:
    init = subprocess.run(
        [py, "-m", "box_memory", "init", name, "--parent", "0", "--json"],
        env=env, cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    spec = re.search(r'"workspace":\s*"([^"]+)"', init.stdout)
    assert spec, init.stdout
    for i in range(memories):
        _run(argv(py, "write", spec.group(1), i), env, cwd)
    return spec.group(1)


def import_profile(py: str, env: dict[str, str], spec: str, cwd: Path) -> tuple[float, bool, list[str]]:
    """Total import ms of a `status` process, whether `mcp` was imported, the slowest top levels."""
    proc = subprocess.run(
        [py, "-X", "importtime", "-m", "box_memory", "status", "-w", spec, "--json"],
        env=env, cwd=cwd, capture_output=True, text=True, check=True,
    )  # fmt: skip
    top: list[tuple[int, str]] = []
    mcp = False
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)", line)
        if not m:
            continue
        cumulative, indent, module = int(m.group(1)), len(m.group(2)), m.group(3)
        mcp = mcp or module == "mcp" or module.startswith(("mcp.", "mcp_types"))
        if indent == 0:
            top.append((cumulative, module))
    total = sum(us for us, _ in top) / 1000
    slowest = [f"{mod} {us / 1000:.0f}" for us, mod in sorted(top, reverse=True)[:6]]
    return total, mcp, slowest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--memories", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None, help="work folder (default: a temporary one)")
    ap.add_argument("--python", default=sys.executable, help="interpreter of the build to measure")
    ap.add_argument("--baseline-python", default=None, help="a second interpreter, e.g. an older build")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="box-memory-cli-cloud-"))
    pythons = builds(args)
    for py in pythons.values():  # bytecode of each build, so no run pays for compiling
        subprocess.run([py, "-c", COMPILE_ALL], check=False, env=_env(out / "warm"), cwd="/")
        subprocess.run([py, "-c", "import box_memory.cli.app"], check=True, env=_env(out / "warm"), cwd="/")
    (out / "box").mkdir(parents=True, exist_ok=True)
    emu, url = start_emulator(out / "box")
    try:
        envs = {}
        for name in pythons:
            env = _env(out / f"home-{name}")
            env.update(BOX_MCP_URL=url, BOX_ACCESS_TOKEN=TOKEN, BOX_MEMORY_LOCK_SETTLE_S="0")
            envs[name] = env
        specs = {
            name: seed(py, envs[name], f"bench-{name}", args.memories, out) for name, py in pythons.items()
        }
        for name, py in pythons.items():  # untimed: catalogue cache, listings, recall cache
            for command in COMMANDS:
                _run(argv(py, command, specs[name], 0), envs[name], out)
        print(f"Machine: {os.cpu_count()} cores; load average at start {os.getloadavg()[0]:.2f}.", flush=True)
        got: dict[str, dict[str, list[tuple[float, float]]]] = {n: {c: [] for c in COMMANDS} for n in pythons}
        for i in range(args.runs):
            for command in COMMANDS:
                for name, py in pythons.items():
                    got[name][command].append(_run(argv(py, command, specs[name], i), envs[name], out))
        profiles = {n: import_profile(py, envs[n], specs[n], out) for n, py in pythons.items()}
    finally:
        emu.terminate()
        emu.wait(timeout=10)
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}.")
    print("| command | build | wall p50 (p90) ms | cpu p50 ms |")
    print("|---|---|---:|---:|")
    for command in COMMANDS:
        for name in pythons:
            walls = [w for w, _ in got[name][command]]
            cpu = statistics.median(c for _, c in got[name][command])
            wall = f"{statistics.median(walls):.0f} ({_pct(walls, 0.9):.0f})"
            print(f"| {command} | {name} | {wall} | {cpu:.0f} |")
    for name, (total, mcp, slowest) in profiles.items():
        print(
            f"{name}: imports of `status` {total:.0f} ms, mcp imported: {mcp}; slowest: {', '.join(slowest)}"
        )


if __name__ == "__main__":
    main()
