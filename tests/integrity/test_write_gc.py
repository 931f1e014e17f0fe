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
