"""A kept-open cache (`serve`) with a watch on every folder that can change an answer: a call with
no event since a refresh that found nothing to do does no stat at all (`cache.steady`), and every
kind of change made behind its back is still seen by the very next call.

The changes come from outside the cache: memory files and indexes written directly (another
program, a sync client), a team made by another command, a month folder that did not exist.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from box_memory.recall import cache as recall_cache
from box_memory.recall.cache_db import RACY_NS
from box_memory.recall.watch import FolderWatch
from tests.conftest import Cli
from tests.recall.helpers import put, reindex


def recall(cli: Cli, root: Path, query: str) -> tuple[list[str], dict[str, Any]]:
    env = cli.json("recall", query, "--no-brain", "-w", str(root))
    return [h["title"] for h in env["data"]["hits"]], env["data"]["cache"]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[None]:
    if FolderWatch.start(str(tmp_path)) is None:
        pytest.skip("no inotify here: every call checks the folders (the other tests cover that)")
    recall_cache.keep_open()
    yield
    recall_cache.close_held()


def settle(cli: Cli, root: Path) -> None:
    """Calls until the cache is steady: the files just written are past their racy window."""
    time.sleep(RACY_NS / 1e9)
    for _ in range(3):
        _, cache = recall(cli, root, "anything")
        if cache["steady"]:
            return
    raise AssertionError(f"never steady: {cache}")


@pytest.fixture
def root(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "Deploy plan", "The deploy uses a canary.", n=1, updated="2026-01-02T10:00:00.000Z")
    reindex(root)
    return root


def test_a_call_with_nothing_changed_does_no_stat(held: None, root: Path, cli: Cli) -> None:
    settle(cli, root)
    found, cache = recall(cli, root, "canary")
    assert found == ["Deploy plan"]
    assert cache["steady"] is True and cache["stat_folders"] == 0 and cache["reread_folders"] == 0


def test_a_memory_written_behind_its_back_is_found_next_call(held: None, root: Path, cli: Cli) -> None:
    settle(cli, root)
    put(root, "Backup policy", "Nightly backups to the walrus vault.", n=2)
    reindex(root)
    found, cache = recall(cli, root, "walrus")
    assert found == ["Backup policy"] and cache["steady"] is False


def test_an_edit_in_place_is_found_next_call(held: None, root: Path, cli: Cli) -> None:
    settle(cli, root)
    path = next((root / "memories").glob("note__deploy-plan.md"))
    st, dst = path.stat(), path.parent.stat()
    text = path.read_text(encoding="utf-8")
    with path.open("r+", encoding="utf-8") as f:  # same inode, folder untouched
        f.write(text.replace("canary", "zebras"))
        f.truncate()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(path.parent, ns=(dst.st_atime_ns, dst.st_mtime_ns))
    found, _ = recall(cli, root, "zebras")
    assert found == ["Deploy plan"]


def test_a_team_made_by_another_command_is_searched_next_call(held: None, root: Path, cli: Cli) -> None:
    settle(cli, root)
    cli.json("team", "create", "ops", "-w", str(root))
    put(root, "Pager rota", "The narwhal rota starts Monday.", n=3, folder="teams/ops/memories")
    reindex(root)
    found, _ = recall(cli, root, "narwhal")
    assert found == ["Pager rota"]


def test_a_month_folder_that_did_not_exist_is_searched_next_call(
    held: None, tmp_path: Path, cli: Cli
) -> None:
    root = tmp_path / "monthly"
    cli.json("init", "--path", str(root), "--memory-layout", "monthly")
    cli.json("write", "The okapi job runs hourly.", "--title", "Okapi job", "-w", str(root))
    settle(cli, root)
    put(root, "Old quarter", "The ibex migration finished.", n=4, folder="memories/2024-03")
    reindex(root)
    found, _ = recall(cli, root, "ibex")
    assert found == ["Old quarter"]


def test_a_folder_removed_and_made_again_is_watched_again(held: None, root: Path, cli: Cli) -> None:
    settle(cli, root)
    memories = root / "memories"
    moved = root.parent / "moved-away"
    memories.rename(moved)
    found, _ = recall(cli, root, "canary")
    assert found == []
    moved.rename(memories)
    found, _ = recall(cli, root, "canary")
    assert found == ["Deploy plan"]
    settle(cli, root)
    put(root, "Queue limits", "The kestrel queue holds ten thousand.", n=5)
    reindex(root)
    found, _ = recall(cli, root, "kestrel")
    assert found == ["Queue limits"]


def test_a_team_folder_made_again_while_steady_is_searched_next_call(
    held: None, root: Path, cli: Cli
) -> None:
    """The folder is missing while the cache is steady: only the watch on the folder it would be
    made in (`teams/ops/`) can say it is back."""
    cli.json("team", "create", "ops", "-w", str(root))
    put(root, "Pager rota", "The narwhal rota starts Monday.", n=3, folder="teams/ops/memories")
    reindex(root)
    settle(cli, root)
    memories = root / "teams" / "ops" / "memories"
    moved = root.parent / "ops-away"
    memories.rename(moved)
    assert recall(cli, root, "narwhal")[0] == []
    settle(cli, root)  # steady with the folder missing
    moved.rename(memories)
    found, cache = recall(cli, root, "narwhal")
    assert found == ["Pager rota"] and cache["steady"] is False
