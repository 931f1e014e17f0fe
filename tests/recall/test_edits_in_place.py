"""A memory file changed in place by another program (an editor, a sync client) is searched as it
is now by the next recall, and the recall says the folder's index is stale until index-rebuild.

The edits keep the folder's modification time (nothing is added to or removed from it), and some
keep the file's size and set its modification time back too: only the file's ctime shows them.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from box_memory.recall import cache as recall_cache
from box_memory.recall.cache_db import RACY_NS
from tests.conftest import Cli
from tests.recall.helpers import put, reindex


def edit(path: Path, old: str, new: str, *, keep_times: bool = True) -> None:
    """Rewrite `path` in place (same inode), then put its and its folder's mtimes back."""
    st, dst = path.stat(), path.parent.stat()
    text = path.read_text(encoding="utf-8")
    assert old in text
    with path.open("r+", encoding="utf-8") as f:  # in place: no new inode, no directory change
        f.write(text.replace(old, new))
        f.truncate()
    if keep_times:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(path.parent, ns=(dst.st_atime_ns, dst.st_mtime_ns))
    assert path.parent.stat().st_mtime_ns == dst.st_mtime_ns


def hits(cli: Cli, root: Path, query: str) -> tuple[list[str], list[str], dict[str, Any]]:
    env = cli.json("recall", query, "--no-brain", "-w", str(root))
    return [h["title"] for h in env["data"]["hits"]], env["warnings"], env["data"]


def stale(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "may be stale" in w]


def two_memories(tmp_path: Path, cli: Cli) -> Path:
    """A workspace of two memories, "Deploy plan" (a canary) and "Backup policy" (backups)."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "Deploy plan", "The deploy uses a canary.", n=1, updated="2026-01-02T10:00:00.000Z")
    put(root, "Backup policy", "Nightly backups to cold storage.", n=2, updated="2026-01-03T10:00:00.000Z")
    reindex(root)
    return root


@pytest.fixture
def root(tmp_path: Path, cli: Cli) -> Path:
    return two_memories(tmp_path, cli)


@pytest.fixture(params=["cli", "serve"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """`serve` keeps each workspace's recall cache open between calls (`keep_open`)."""
    if request.param == "serve":
        recall_cache.keep_open()
    yield request.param
    recall_cache.close_held()


def memory(root: Path, slug: str) -> Path:
    return root / "memories" / f"note__{slug}.md"


def test_an_appended_word_is_found_and_the_index_called_stale_until_rebuilt(
    root: Path, cli: Cli, mode: str
) -> None:
    assert hits(cli, root, "deploy")[0] == ["Deploy plan"]  # the cache is built and current
    edit(memory(root, "deploy-plan"), "a canary.", "a canary. quokkafire", keep_times=False)
    found, warnings, _ = hits(cli, root, "quokkafire")
    assert found == ["Deploy plan"]
    assert len(stale(warnings)) == 1 and "memories/" in stale(warnings)[0]
    assert stale(hits(cli, root, "backups")[1])  # every recall says so, not only the first
    cli.json("index-rebuild", "-w", str(root))
    found, warnings, _ = hits(cli, root, "quokkafire")
    assert found == ["Deploy plan"] and not stale(warnings)


def test_an_edit_keeping_size_and_mtime_is_seen_and_so_is_the_next_one(
    root: Path, cli: Cli, mode: str
) -> None:
    assert hits(cli, root, "canary")[0] == ["Deploy plan"]
    path = memory(root, "deploy-plan")
    size = path.stat().st_size
    edit(path, "canary", "zebras")  # same length: same size, mtime set back
    assert path.stat().st_size == size
    assert hits(cli, root, "zebras")[0] == ["Deploy plan"]
    assert hits(cli, root, "canary")[0] == []
    edit(path, "zebras", "okapis")  # a later edit of a file already seen as changed
    assert hits(cli, root, "okapis")[0] == ["Deploy plan"]
    assert hits(cli, root, "zebras")[0] == []


def test_a_frontmatter_edit_is_searched_as_the_file_now_is(root: Path, cli: Cli, mode: str) -> None:
    assert hits(cli, root, "Backup policy")[0] == ["Backup policy"]
    edit(memory(root, "backup-policy"), "title: Backup policy", "title: Restore policy")
    found, warnings, _ = hits(cli, root, "restore")
    assert found == ["Restore policy"]
    assert stale(warnings)  # the index still says "Backup policy"
    cli.json("index-rebuild", "-w", str(root))
    found, warnings, _ = hits(cli, root, "restore")
    assert found == ["Restore policy"] and not stale(warnings)


def test_a_copied_workspace_sees_later_edits_too(root: Path, tmp_path: Path, cli: Cli, mode: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)  # as `cp -r`: new inodes and times
    assert hits(cli, copy, "canary")[0] == ["Deploy plan"]  # its first recall builds its cache
    edit(memory(copy, "deploy-plan"), "a canary.", "a canary, then quokkafire.")
    found, warnings, _ = hits(cli, copy, "quokkafire")
    assert found == ["Deploy plan"] and stale(warnings)
    assert hits(cli, root, "quokkafire")[0] == []  # the original is untouched


def test_a_touch_without_a_change_reads_the_file_once_and_warns_nothing(root: Path, cli: Cli) -> None:
    hits(cli, root, "canary")
    path = memory(root, "deploy-plan")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5_000_000_000))
    _, warnings, data = hits(cli, root, "canary")
    assert not stale(warnings)
    # Read again and found the same (the other file too: written just now, its stat was racy).
    assert data["cache"]["rechecked_files"] >= 1 and data["cache"]["reread_files"] == 0


def test_serve_stats_no_file_while_nothing_changed_and_sees_the_next_edit(root: Path, cli: Cli) -> None:
    """A kept-open cache on a local filesystem watches its folders (inotify): a call with no event
    since the last one stats no memory file; an edit is still seen by the very next call."""
    from box_memory.recall.watch import FolderWatch

    if FolderWatch.start(str(root)) is None:
        pytest.skip("no inotify here: every call stats the files (the other tests cover that)")
    recall_cache.keep_open()
    try:
        hits(cli, root, "canary")
        time.sleep(RACY_NS / 1e9)  # past the racy window of the files just written
        hits(cli, root, "canary")
        _, _, data = hits(cli, root, "canary")
        assert data["cache"]["kept_open"] is True and data["cache"]["stat_folders"] == 0
        edit(memory(root, "deploy-plan"), "canary", "zebras")
        found, _, data = hits(cli, root, "zebras")
        assert found == ["Deploy plan"] and data["cache"]["stat_folders"] == 1
    finally:
        recall_cache.close_held()
