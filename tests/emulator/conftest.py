"""Fixtures for the emulator's own tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from box_memory.emulator import Emulator
from box_memory.emulator.testing import emulator, running_emulator  # noqa: F401 - re-exported fixture
from tests.emulator.helpers import populate


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "box"
    root.mkdir()
    populate(root)
    return root


@pytest.fixture
def emu(root: Path) -> Iterator[Emulator]:
    with running_emulator(root) as running:
        yield running
