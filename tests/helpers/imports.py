"""Which packages a real CLI run imports: the local paths must stay off the network stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# The packages that make up the network stack (mcp and the HTTP client under it).
NETWORK = frozenset({"mcp", "httpx", "httpcore", "httpx2", "httpcore2", "anyio"})

# Runs the real CLI, then reports which modules were imported (at exit, after SystemExit).
WRAPPER = """
import atexit, json, sys
target = sys.argv[1]
def report():
    with open(target, "w") as f:
        json.dump(sorted(sys.modules), f)
atexit.register(report)
sys.argv = ["box-memory", *sys.argv[2:]]
from box_memory.cli.app import main
main()
"""


def imported_by(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`box-memory ARGS` in a child process, which must exit 0 -> (the run, the top-level packages
    it had imported by exit)."""
    res, modules = modules_imported_by(tmp_path, *args)
    return res, {m.split(".")[0] for m in modules}


def modules_imported_by(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`box-memory ARGS` in a child process, which must exit 0 -> (the run, every module it had
    imported by exit, by its full name)."""
    out = tmp_path / "modules.json"
    res = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return res, set(json.loads(out.read_text()))
