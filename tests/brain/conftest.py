"""Fixtures for brain-sync: a real emulator over HTTP on 127.0.0.1, the real CLI, a real SQLite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from box_memory.emulator.testing import Emulator, running_emulator


@pytest.fixture
def box(tmp_path: Path) -> Path:
    root = tmp_path / "box"
    root.mkdir()
    return root


@pytest.fixture
def emu(box: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """The emulator serving `box`, with BOX_MCP_URL / BOX_ACCESS_TOKEN pointing at it."""
    with running_emulator(box, retry_after_s=0) as running:
        monkeypatch.setenv("BOX_MCP_URL", running.url)
        monkeypatch.setenv("BOX_ACCESS_TOKEN", running.token)
        yield running


@pytest.fixture(autouse=True)
def _default_workspace(_isolated_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Box Brain source belongs to a workspace: each test gets a default one (`init` makes the
    workspace it creates the user's default), so a sync without --workspace binds to it.
    tests/brain/test_source_workspace.py overrides this to run with none."""
    from box_memory.maintenance.init import InitRequest, init

    root = tmp_path_factory.mktemp("default-ws")
    init(InitRequest(name="brain-tests", path=root))
    return root
