"""A write into a large folder freezes the parsed index out of the cycle collector's walks for the
commit only: a long-lived process (serve) gets every object back for collection afterwards."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from box_memory.write import commit


def test_a_commit_freezes_a_large_index_and_unfreezes_at_its_end(
    cli: Any, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    monkeypatch.setattr(commit, "FREEZE_ABOVE", 0)  # "large" is any index with an entry
    seen: list[int] = []
    real_freeze = gc.freeze

    def freeze() -> None:
        real_freeze()
        seen.append(gc.get_freeze_count())

    monkeypatch.setattr(gc, "freeze", freeze)
    assert gc.get_freeze_count() == 0
    cli.json("write", "second", "--title", "Second", "-w", str(ws))
    assert seen and seen[0] > 0  # the index was frozen while the commit ran
    assert gc.get_freeze_count() == 0  # and given back after it


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(commit, "FREEZE_ABOVE", 0)  # "large" is any index with an entry


def test_a_server_started_frozen_gives_back_what_its_writes_froze(ws: Path, cli: Any, large: None) -> None:
    """`box-memory serve` starts in the CLI's `main`, which freezes what its imports loaded: a
    write must still unfreeze at its end (else every cycle made between writes is kept for good),
    and must not ask how much is frozen on every write (a walk of the whole frozen heap)."""
    from box_memory.serve.server import MemoryServer

    cli.json("write", "first", "--title", "First", "-w", str(ws))
    server = MemoryServer(workspace=str(ws))
    gc.freeze()  # as `main` does before the command runs
    try:
        assert gc.get_freeze_count() > 0
        for n in range(3):
            out, is_error = server.call("write", {"content": f"note {n}", "title": f"Server {n}"})
            assert not is_error, out
            assert gc.get_freeze_count() == 0  # given back, the start's with it
    finally:
        gc.unfreeze()
        commit.keep_folders(None)


def test_commits_side_by_side_unfreeze_when_the_last_ends(
    large: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[int] = []
    real_count = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: asked.append(1) or real_count())
    first, second = (
        commit.Transaction.__new__(commit.Transaction),
        commit.Transaction.__new__(commit.Transaction),
    )
    assert gc.get_freeze_count() == 0
    asked.clear()
    with commit._unfreeze_after(first):
        commit._freeze()
        first.froze = True
        with commit._unfreeze_after(second):
            commit._freeze()
            second.froze = True
        assert real_count() > 0  # the first is still running: nothing given back yet
    assert real_count() == 0
    assert len(asked) == 1  # asked once, by the first to freeze


def test_a_process_that_froze_its_own_keeps_them_frozen(large: None) -> None:
    tx = commit.Transaction.__new__(commit.Transaction)
    gc.freeze()  # someone else's (not a server): `gc.unfreeze` cannot tell whose is whose
    try:
        with commit._unfreeze_after(tx):
            commit._freeze()
            tx.froze = True
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
