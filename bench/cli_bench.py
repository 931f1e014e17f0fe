"""CLI recall over the bare CLI start, per query shape, for one or two builds side by side.

Usage: python bench/cli_bench.py [--sizes 10000,100000] [--runs 15] [--out DIR]
                                 [--python PY] [--baseline-python PY]

Every timed command is a fresh `PY -m box_memory ...` process (interpreter start, imports, the
command), run from the corpus folder so each interpreter imports its own installed box_memory. Per
size, the corpus of `bench/recall_bench.py` (DIR/ws-N) is reused or generated; each build has its
own BOX_MEMORY_HOME (so its own recall cache, built by an untimed first recall). Round by round,
every build runs `--version` and each query shape of recall_bench.py, interleaved, so both builds
see the same machine. Reported per build and shape: wall p50 (p90) and the child's CPU p50 (user +
system from `os.wait4`), p50 minus the same build's `--version` p50, and p50 minus the floor: the
same interpreter's `python -c "import typer"` (the framework's own start, which no Typer command
goes under; timed in the same rounds), that one also as means (the child's CPU is counted in
clock ticks: the mean of many runs resolves below a tick, the median does not). Before timing,
each shape's answer (`data` of the JSON envelope, less the cache's own counters and times) must
be the same for both builds.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.after_write_bench import _run  # noqa: E402
from bench.recall_bench import _queries  # noqa: E402
from bench.serve_bench import _env, _pct, corpus, sized_main  # noqa: E402


def bench_size(n: int, out: Path, pythons: dict[str, str], runs: int) -> list[str]:
    ws, manifest = corpus(n, out)
    envs = {name: _env(out / f"home-cli-{n}" / name) for name in pythons}
    shapes = [(FLOOR, FLOOR), ("--version", None)]
    shapes += [(shape, query) for shape, query, _ in _queries(manifest)]

    def cmd(py: str, query: str | None) -> list[str]:
        if query == FLOOR:
            return [py, "-c", "import typer"]
        if query is None:
            return [py, "-m", "box_memory", "--version"]
        return [py, "-m", "box_memory", "recall", query, "-w", str(ws), "--json"]

    for name, py in pythons.items():  # untimed: builds the cache, warms the OS file cache
        for _, query in shapes:
            _run(cmd(py, query), envs[name], ws)
    same_answers(pythons, envs, ws, [(s, q) for s, q in shapes if q not in (None, FLOOR)], cmd)
    got: dict[str, dict[str, list[tuple[float, float]]]] = {p: {s: [] for s, _ in shapes} for p in pythons}
    for _ in range(runs):
        for shape, query in shapes:
            for name, py in pythons.items():
                got[name][shape].append(_run(cmd(py, query), envs[name], ws))
    rows = []
    for name in pythons:
        base_wall = statistics.median(w for w, _ in got[name]["--version"])
        base_cpu = statistics.median(c for _, c in got[name]["--version"])
        floor_cpu = statistics.median(c for _, c in got[name][FLOOR])
        floor_mean = statistics.fmean(c for _, c in got[name][FLOOR])
        for shape, _ in shapes:
            walls = [w for w, _ in got[name][shape]]
            cpu = statistics.median(c for _, c in got[name][shape])
            mean = statistics.fmean(c for _, c in got[name][shape])
            wall = statistics.median(walls)
            rows.append(
                f"| {n:,} | {name} | {shape} | {wall:.0f} ({_pct(walls, 0.9):.0f}) | {cpu:.0f} "
                f"| {wall - base_wall:+.0f} | {cpu - base_cpu:+.0f} | {cpu - floor_cpu:+.0f} "
                f"| {mean - floor_mean:+.1f} |"
            )
    return rows


FLOOR = "import typer"


def same_answers(
    pythons: dict[str, str],
    envs: dict[str, dict[str, str]],
    ws: Path,
    shapes: list[tuple[str, str | None]],
    cmd: Callable[[str, str | None], list[str]],
) -> None:
    """Every build answers each shape alike: the envelope's `data`, less the cache's counters and
    times (one build may find its cache in another state), compared between the builds."""
    for shape, query in shapes:
        answers = {}
        for name, py in pythons.items():
            out = subprocess.run(cmd(py, query), env=envs[name], cwd=ws, capture_output=True, check=True)
            data = orjson.loads(out.stdout)["data"]
            data.pop("cache", None)
            answers[name] = data
        if len({orjson.dumps(a, option=orjson.OPT_SORT_KEYS) for a in answers.values()}) != 1:
            raise SystemExit(f"the builds answer {shape} ({query!r}) differently")
    print(f"Same answers from every build for the {len(shapes)} query shapes.", flush=True)


def main() -> None:
    sized_main(
        __doc__,
        15,
        [
            "| memories | build | command | wall p50 (p90) ms | cpu p50 ms | wall vs --version "
            "| cpu vs --version | cpu vs import typer | cpu mean vs import typer |",
            "|---:|---|---|---:|---:|---:|---:|---:|---:|",
        ],
        bench_size,
    )


if __name__ == "__main__":
    main()
