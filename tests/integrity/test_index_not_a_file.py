"""Something that is not a regular file where `_index.json` should be (a link to itself, a folder,
a FIFO) is a warning for every reader, and `index-rebuild` repairs it by moving it aside to the
archive, never by deleting it."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and symbolic links")


def _put(path: Path, how: str) -> None:
    path.unlink()
    if how == "loop":
        path.symlink_to(path.name)
    elif how == "dir":
        path.mkdir()
        (path / "mine.txt").write_text("a user's file\n")
    else:
        os.mkfifo(path)


def _is(path: Path, how: str) -> bool:
    mode = path.lstat().st_mode
    if how == "loop":
        return stat.S_ISLNK(mode) and os.readlink(path) == "_index.json"
    if how == "dir":
        return stat.S_ISDIR(mode) and (path / "mine.txt").read_text() == "a user's file\n"
    return stat.S_ISFIFO(mode)


@pytest.fixture
def one(cli, ws: Path) -> Path:
    cli.json("write", "The release train leaves on Fridays.", "--title", "Release train", "-w", str(ws))
    return ws


def _aside(ws: Path, folder: str) -> list[Path]:
    base = ws / "_archive" / "index-conflicts" / folder if folder else ws / "_archive" / "index-conflicts"
    return sorted(p for p in base.glob("*-_index.json")) if base.exists() else []


@pytest.mark.parametrize("how", ["loop", "dir", "fifo"])
def test_a_folder_index_that_is_not_a_file_warns_then_is_moved_aside(cli, one: Path, how: str) -> None:
    ws, index = one, one / "memories" / "_index.json"
    _put(index, how)
    for cmd in (("recall", "release"), ("status",)):
        env = cli.json(*cmd, "-w", str(ws))  # exit 0: a warning, not an abort
        assert any("memories/_index.json" in w and "index-rebuild" in w for w in env["warnings"]), env
    write = cli.json("write", "Another", "--title", "Another", "-w", str(ws), code=1)
    assert "memories/_index.json" in write["errors"][0]["message"]
    assert "index-rebuild" in write["errors"][0]["message"]
    assert cli.json("index-rebuild", "--check", "-w", str(ws), code=6)["data"]["drift"] is True
    assert _is(index, how)  # nothing changed by a reader or a refused write

    env = cli.json("index-rebuild", "-w", str(ws))
    (moved,) = _aside(ws, "memories")
    assert _is(moved, how)  # the user's thing, kept whole
    assert any("moved aside" in w and str(moved.relative_to(ws)) in w for w in env["warnings"]), env
    assert index.is_file() and not index.is_symlink()
    hits = cli.json("recall", "release", "-w", str(ws))["data"]["hits"]
    assert [h["title"] for h in hits] == ["Release train"]
    assert cli.json("status", "-w", str(ws))["data"]["index_health"]["ok"] is True


@pytest.mark.parametrize("how", ["loop", "dir", "fifo"])
def test_a_rollup_that_is_not_a_file_is_never_replaced_by_a_write(cli, one: Path, how: str) -> None:
    ws, rollup = one, one / "_index.json"
    _put(rollup, how)
    assert cli.json("recall", "release", "-w", str(ws))["data"]["count"] == 1
    cli.json("write", "Another", "--title", "Another", "-w", str(ws))  # committed; the rollup lags
    assert _is(rollup, how)
    cli.json("index-rebuild", "-w", str(ws))
    (moved,) = _aside(ws, "")
    assert _is(moved, how)
    assert rollup.is_file() and not rollup.is_symlink()
