"""What a CLI command costs beyond the framework, measured inside the process, for one or two
builds side by side: a finer view than `cli_bench.py`'s CPU figures (counted in clock ticks).

Usage: python bench/cli_import_bench.py [--sizes 1000] [--runs 15] [--out DIR]
                                        [--python PY] [--baseline-python PY]

Round by round, each build runs `--version` and `recall` for each query shape of recall_bench.py
on the corpus DIR/ws-N (cache built first, untimed), twice: once as `python -c` that imports
typer, reads `time.process_time()`, and runs the entry point `main()` with the command's argv
(the CPU the command adds over `import typer`, to the microsecond, reported at exit), and once
under `python -X importtime -m box_memory` beside `python -X importtime -c "import typer"`. Per
command: that CPU (median and mean over the rounds), the number of modules imported that the
floor does not import, the sum of their self times (median), and the three largest of them.
importtime's own bookkeeping inflates each module's figure a little: compare builds.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.recall_bench import _queries  # noqa: E402
from bench.serve_bench import _env, corpus, sized_main  # noqa: E402

_LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")
_OVER_TYPER = """
import atexit, sys, time
import typer
start = time.process_time()
atexit.register(lambda: sys.stderr.write(f"cpu-over-typer {time.process_time() - start}\\n"))
sys.argv = ["box-memory", *sys.argv[1:]]
from box_memory.cli.app import main
main()
"""


def over_typer(py: str, args: list[str], env: dict[str, str], cwd: Path) -> float:
    """CPU ms of one process from the end of `import typer` to its exit."""
    err = subprocess.run(
        [py, "-c", _OVER_TYPER, *args], env=env, cwd=cwd, capture_output=True, text=True, check=True
    ).stderr
    return float(err.rsplit("cpu-over-typer ", 1)[1]) * 1000


def importtime(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, int]:
    """{module: self microseconds} of one process."""
    err = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=True).stderr
    return {m.group(2): int(m.group(1)) for m in map(_LINE.match, err.splitlines()) if m}


def bench_size(n: int, out: Path, pythons: dict[str, str], runs: int) -> list[str]:
    ws, manifest = corpus(n, out)
    envs = {name: _env(out / f"home-cli-{n}" / name) for name in pythons}
    shapes = [("--version", ["--version"])]
    shapes += [(s, ["recall", q, "-w", str(ws), "--json"]) for s, q, _ in _queries(manifest)]
    for name, py in pythons.items():  # untimed: builds each build's cache
        for _, args in shapes:
            subprocess.run(
                [py, "-m", "box_memory", *args], env=envs[name], cwd=ws, capture_output=True, check=True
            )
    got: dict[str, dict[str, list[dict[str, int]]]] = {p: {s: [] for s, _ in shapes} for p in pythons}
    cpu: dict[str, dict[str, list[float]]] = {p: {s: [] for s, _ in shapes} for p in pythons}
    for _ in range(runs):
        for name, py in pythons.items():
            for shape, args in shapes:
                cpu[name][shape].append(over_typer(py, args, envs[name], ws))
            floor = importtime([py, "-X", "importtime", "-c", "import typer"], envs[name], ws)
            for shape, args in shapes:
                mods = importtime([py, "-X", "importtime", "-m", "box_memory", *args], envs[name], ws)
                got[name][shape].append({m: us for m, us in mods.items() if m not in floor})
    rows = []
    for name in pythons:
        for shape, _ in shapes:
            taken = got[name][shape]
            total = statistics.median(sum(r.values()) for r in taken) / 1000
            count = statistics.median(len(r) for r in taken)
            names = {m for r in taken for m in r}
            each = {m: statistics.median(r.get(m, 0) for r in taken) for m in names}
            top = ", ".join(
                f"{m} {us / 1000:.1f}" for m, us in sorted(each.items(), key=lambda kv: -kv[1])[:3]
            )
            c = cpu[name][shape]
            rows.append(
                f"| {n:,} | {name} | {shape} | {statistics.median(c):.1f} | {statistics.fmean(c):.1f} "
                f"| {count:.0f} | {total:.1f} | {top} |"
            )
    return rows


def main() -> None:
    sized_main(
        __doc__,
        15,
        [
            "| memories | build | command | cpu over import typer p50 ms | mean | modules beyond "
            "`import typer` | their self time ms | largest (ms) |",
            "|---:|---|---|---:|---:|---:|---:|---|",
        ],
        bench_size,
    )


if __name__ == "__main__":
    main()
