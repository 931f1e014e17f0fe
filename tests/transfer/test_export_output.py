"""`export -o PATH` never destroys anything: an existing path is refused unless `--force`, and then
only a regular file is replaced; nothing is ever written inside a workspace; the file appears
whole or not at all."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import snapshot


def _memory(cli, ws: Path) -> Path:
    cli.json("write", "Keep the release notes short.", "--title", "Keep", "--kind", "decision", "-w", str(ws))
    return ws / "memories" / "decision__keep.md"


def _refused(cli, ws: Path, out: Path | str, *extra: str) -> str:
    env = cli.json("export", "-o", str(out), "-w", str(ws), *extra, code=2)
    assert env["errors"][0]["code"] == "invalid_input"
    return str(env["errors"][0]["message"])


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("target", ["memories/decision__keep.md", "memories/_index.json", "_index.json"])
def test_a_file_of_the_workspace_is_never_overwritten(cli, ws: Path, target: str, force: bool) -> None:
    _memory(cli, ws)
    before = snapshot(ws)
    msg = _refused(cli, ws, ws / target, *(["--force"] if force else []))
    assert target.rsplit("/", 1)[-1] in msg
    assert snapshot(ws) == before


def test_a_new_file_inside_a_workspace_is_refused(cli, ws: Path, tmp_path: Path) -> None:
    _memory(cli, ws)
    before = snapshot(ws)
    msg = _refused(cli, ws, ws / "memories" / "backup.jsonl")
    assert "inside the box-memory workspace" in msg
    # Through a symbolic link to a workspace folder, too.
    (tmp_path / "via").symlink_to(ws / "memories")
    assert "inside the box-memory workspace" in _refused(cli, ws, tmp_path / "via" / "backup.jsonl")
    assert snapshot(ws) == before


def test_an_existing_file_needs_force(cli, ws: Path, tmp_path: Path) -> None:
    _memory(cli, ws)
    out = tmp_path / "notes.txt"
    out.write_text("my notes\n")
    assert "already exists; pass --force" in _refused(cli, ws, out)
    assert out.read_text() == "my notes\n"
    env = cli.json("export", "-o", str(out), "--force", "-w", str(ws))
    assert env["data"]["count"] == 1
    assert json.loads(out.read_text().splitlines()[0])["path"] == "memories/decision__keep.md"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temp left


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links and FIFOs")
def test_only_a_regular_file_is_ever_replaced(cli, ws: Path, tmp_path: Path) -> None:
    _memory(cli, ws)
    target = tmp_path / "target.txt"
    target.write_text("keep me\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, what in ((link, "symbolic link"), (fifo, "FIFO")):
        for extra in ((), ("--force",)):
            assert what in _refused(cli, ws, path, *extra)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "keep me\n"
    assert fifo.is_fifo()
