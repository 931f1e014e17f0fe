"""The import contract (pyproject `tool.importlinter`, run by `.ci/run` as `lint-imports`) holds,
and breaks on each kind of import it forbids: the checks are run on a copy of the package with
one bad import added, the way a change would add it (inside a function, where cycles hid)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = [str(LINT), "--no-cache", "--no-logo"]
    return subprocess.run(argv, check=False, cwd=cwd, capture_output=True, text=True, timeout=120)


def _copy(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    shutil.copytree(ROOT / "box_memory", work / "box_memory", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "scripts", work / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", work / "pyproject.toml")
    return work


def test_the_package_keeps_the_contract() -> None:
    res = _lint(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "13 kept, 0 broken" in res.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # index <- regenerate already; regenerate <- index closes a cycle.
        ("workspace/index.py", "from box_memory.maintenance.regenerate import rebuild", "No import cycle"),
        ("write/memories.py", "from box_memory.cli.output import Outcome", "Only the entry points"),
        ("serve/server.py", "from box_memory.cli.common import opts", "Only the entry points"),
        ("recall/service.py", "from box_memory.store.local import LocalStore", "Only the store package"),
        ("store/cloud/provision.py", "from box_memory.workspace.resolve import Workspace", "Each room"),
        # the Box client sits below the store and below every service
        ("box/client.py", "from box_memory.store.base import Store", "Each room"),
        ("box/client.py", "from box_memory.recall.service import recall", "Each room"),
        # mcp-check's service sits above the store
        ("store/cloud/store.py", "from box_memory.maintenance.mcp_check import mcp_check", "Each room"),
        ("format/model.py", "from box_memory.workspace.resolve import Workspace", "Each room"),
        ("locks.py", "from box_memory.box.client import BoxMCPClient", "Each room"),
        # the cloud store's parts: a lower one never uses a higher one
        ("store/cloud/folders.py", "from box_memory.store.cloud.writing import Writing", "Cloud store parts"),
        ("store/cloud/state.py", "from box_memory.store.cloud.store import CloudStore", "Cloud store parts"),
        # only state.py opens the Box session; reading goes through it
        ("store/cloud/reading.py", "from box_memory.box.client import BoxMCPClient", "Only the cloud"),
        ("store/cloud/provision.py", "from box_memory.box.auth import TokenSource", "Only the cloud"),
        # the client's layers, and its inner parts kept inside box/
        ("box/retry.py", "from box_memory.box.session import Session", "Box client parts"),
        ("box/base.py", "from box_memory.box.client import BoxMCPClient", "Box client parts"),
        ("maintenance/mcp_check.py", "from box_memory.box.session import Session", "Outside box/"),
        ("store/cloud/state.py", "from box_memory.box.catalogue import read_catalogue", "Outside box/"),
        ("box/credentials.py", "from box_memory.box.oauth import login", "Box sign-in builds upward"),
        ("box/oauth.py", "from box_memory.box.auth import TokenSource", "Box sign-in builds upward"),
        # the write room: memories and companions never use each other; the commit uses neither
        ("write/memories.py", "from box_memory.write.companions import CompanionPlacement", "Write parts"),
        ("write/commit.py", "from box_memory.write.memories import MemoryPlacement", "Write parts"),
        ("write/prepare.py", "from box_memory.write.commit import commit", "Write parts"),
        # the import readers: one format never uses another's reader, none uses the run
        (
            "transfer/sources/mem0.py",
            "from box_memory.transfer.sources.claude_code import walk",
            "Import readers",
        ),
        (
            "transfer/sources/common.py",
            "from box_memory.transfer.importer import run_import",
            "Import readers",
        ),
        ("store/local.py", "from box_memory.emulator import Emulator", "Nothing imports the Box emulator"),
        ("emulator/tools.py", "from box_memory.format.model import now_iso", "The Box emulator imports"),
    ],
)
def test_each_forbidden_import_breaks_it(tmp_path: Path, module: str, line: str, broken: str) -> None:
    work = _copy(tmp_path)
    target = work / "box_memory" / module
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n\ndef _added() -> None:\n    {line}  # noqa\n",
        encoding="utf-8",
    )
    res = _lint(work)
    assert res.returncode != 0
    lines = res.stdout.splitlines()
    verdict = next(v for v in lines if v.startswith(broken) and ("KEPT" in v or "BROKEN" in v))
    assert "BROKEN" in verdict, res.stdout
