"""A folder the recall cache reads whole (a cold build, a new folder) keeps the digest of its files'
stats from the listing it was read from, taken before any file was read, instead of stat'ing every
file again at the end of the build (at 100,000 memories that second look was ~0.9 s of a ~14 s
build). What the digest must still catch: a file changed after that listing, and a file changed in
place in a folder whose other memories the cache already held.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from box_memory.recall.cache_db import RACY_NS
from box_memory.recall.cache_refresh import _memory_name, folder_stats, stats_digest
from box_memory.store.local import LocalStore
from tests.conftest import Cli
from tests.recall.test_edits_in_place import edit, hits, memory, stale, two_memories


@pytest.fixture
def root(tmp_path: Path, cli: Cli) -> Path:
    root = two_memories(tmp_path, cli)
    time.sleep(RACY_NS / 1e9)  # past the racy window: files this new are compared one by one
    return root


def test_a_listing_gives_the_digest_a_look_at_the_folder_gives(tmp_path: Path) -> None:
    folder = tmp_path / "ws" / "memories"
    folder.mkdir(parents=True)
    for name in ("a.md", "b.md", "README.md", ".hidden.md", "notes.txt", ".bm-tmp-x.md"):
        (folder / name).write_text(name, encoding="utf-8")
    (folder / "dir.md").mkdir()
    (folder / "to-a.md").symlink_to(folder / "a.md")
    (folder / "broken.md").symlink_to(folder / "missing.md")
    (folder / "loop.md").symlink_to(folder / "loop.md")
    (folder / "caf\u0065\u0301.md").write_text("nfd", encoding="utf-8")  # listed under its NFC name
    _, stats = LocalStore(tmp_path / "ws").list_dir_stats("memories")
    got = stats_digest(st for name, st in stats.items() if _memory_name(name))
    look = folder_stats(str(folder))
    assert look is not None and got == look[0]
    os.utime(folder / "b.md", ns=(1, 1))
    assert got != folder_stats(str(folder))[0]  # type: ignore[index]


def test_a_cold_build_does_not_stat_the_files_it_just_read_again(root: Path, cli: Cli) -> None:
    found, _, data = hits(cli, root, "deploy")
    assert found == ["Deploy plan"]
    assert data["cache"]["rebuilt"] and data["cache"]["reread_files"] == 2
    assert data["cache"]["stat_folders"] == 0, data["cache"]  # no second look at a folder it just read
    found, _, data = hits(cli, root, "backups")
    assert found == ["Backup policy"]
    assert data["cache"]["stat_folders"] >= 1 and data["cache"]["rechecked_files"] == 0  # compared, same


def test_an_edit_in_place_after_the_build_is_found_by_the_next_recall(root: Path, cli: Cli) -> None:
    assert hits(cli, root, "deploy")[0] == ["Deploy plan"]
    edit(memory(root, "deploy-plan"), "a canary.", "a canary! wombatzine")  # mtime kept
    found, warnings, data = hits(cli, root, "wombatzine")
    assert found == ["Deploy plan"]
    assert data["cache"]["reread_files"] == 1, data["cache"]  # that file only
    assert stale(warnings)


def test_an_edit_keeping_size_and_times_is_found_when_the_folder_is_read_again(root: Path, cli: Cli) -> None:
    """The edit changes the folder's ctime, so the folder is read again; the memory's listing
    (size, mtime) is as before, so it is kept without a read, and only its stat (ctime) shows the
    edit: the folder's new digest must not be taken as its files' compared state."""
    assert hits(cli, root, "deploy")[0] == ["Deploy plan"]
    edit(memory(root, "deploy-plan"), "a canary.", "a canarz.")  # same size, times put back
    found, _, data = hits(cli, root, "canarz")
    assert found == ["Deploy plan"], data["cache"]
    assert hits(cli, root, "canary")[0] == []
