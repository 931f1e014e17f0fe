"""A local recall, in a cold process, stays off the network stack and the heavy libraries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Runs the real CLI, then reports which top-level packages were imported (at exit, after SystemExit).
WRAPPER = """
import atexit, json, sys
target = sys.argv[1]
def report():
    with open(target, "w") as f:
        json.dump(sorted({m.split(".")[0] for m in sys.modules}), f)
atexit.register(report)
sys.argv = ["box-memory", *sys.argv[2:]]
from box_memory.cli.app import main
main()
"""


NETWORK = {"mcp", "httpx", "httpcore", "httpx2", "httpcore2", "anyio"}


def _modules(tmp_path: Path, *args: str) -> set[str]:
    out = tmp_path / "modules.json"
    res = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(out), *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return set(json.loads(out.read_text()))


def test_recall_imports_neither_mcp_nor_httpx(ws: Path, cli, tmp_path: Path) -> None:
    cli.json("write", "We decided to cache tokens.", "--title", "Token cache", "-w", str(ws))
    cold = _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")  # builds the cache
    warm = _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")
    human = _modules(tmp_path, "recall", "tokens", "-w", str(ws))  # not a terminal: no rich
    for mods in (cold, warm, human):
        assert not mods & {*NETWORK, "pydantic", "rich"}, mods
    # A warm call answers from the cache: no YAML parser either.
    assert "yaml" not in warm
    assert "sqlite3" in warm


def test_write_on_a_local_workspace_stays_off_the_network_stack(ws: Path, tmp_path: Path) -> None:
    mods = _modules(tmp_path, "write", "Tokens expire hourly.", "--title", "Expiry", "-w", str(ws), "--json")
    assert not mods & NETWORK, mods
