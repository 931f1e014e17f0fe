"""A workspace copied without modification times (cp -r, git clone, unzip, a fresh Box Drive sync)
is healthy: staleness is decided by content, mtimes are only a first filter."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest


def _later(root: Path, seconds: float) -> None:
    """Every memory file looks written `seconds` after its index (as a slow copy or sync makes)."""
    t = time.time() + seconds
    for p in root.rglob("*.md"):
        os.utime(p, (t, t))


@pytest.mark.skipif(shutil.which("cp") is None, reason="needs cp")
def test_copied_workspace_is_not_stale_but_an_edit_still_is(cli, ws: Path, tmp_path: Path) -> None:
    cli.json("team", "create", "ops", "-w", str(ws))
    for i in range(3):
        cli.json("write", f"Body {i}.", "--title", f"Note {i}", "--tag", "x", "-w", str(ws))
    cli.json("write", "Ops body.", "--title", "Ops note", "--team", "ops", "-w", str(ws))
    (ws / "files" / "a.bin").write_bytes(b"\x00binary")
    cli.json("companion", "files/a.bin", "-w", str(ws))
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(ws), str(copy)], check=True)
    _later(copy, 60)

    rec = cli.json("recall", "note", "-w", str(copy))
    assert rec["data"]["count"] >= 3
    assert not [w for w in rec["warnings"] if "stale" in w], rec["warnings"]
    st = cli.json("status", "-w", str(copy))
    assert st["data"]["index_health"]["drifted"] == [] and st["data"]["index_health"]["ok"] is True
    assert cli.json("index-rebuild", "--check", "-w", str(copy))["exit_code"] == 0

    # A real out-of-band edit still warns (same size, different title: content decides).
    # Saved the way editors and Box Drive save: a new file renamed over the old one.
    victim = copy / "memories" / "note__note-1.md"
    tmp = victim.with_suffix(".tmp")
    tmp.write_text(victim.read_text().replace("title: Note 1", "title: Nota 1"))
    tmp.replace(victim)
    _later(copy, 120)
    rec = cli.json("recall", "note", "-w", str(copy))
    assert any("may be stale" in w and "memories/" in w for w in rec["warnings"]), rec["warnings"]
    st = cli.json("status", "-w", str(copy))
    assert st["data"]["index_health"]["ok"] is False
