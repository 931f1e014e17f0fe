"""Test fixtures around the emulator, importable by any test suite.

    from box_memory.emulator.testing import running_emulator, emulator  # noqa: F401 (fixture)

    with running_emulator(tmp_path / "box", paging="offset") as emu:
        ...  # emu.url, emu.token, emu.calls, emu.configure(error_rate=0.5), emu.stop(), emu.start()

The server runs uvicorn in a background thread on 127.0.0.1 (a free port). `stop()` then
`start()` brings it back on the same port with the same state, for "server dies mid-run" tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from box_memory.emulator.app import DISABLED_TEXT, Emulator
from box_memory.emulator.calls import ToolCall

__all__ = ["DISABLED_TEXT", "Emulator", "ToolCall", "emulator", "running_emulator"]


@contextmanager
def running_emulator(
    root: Path,
    *,
    token: str = "test-token",  # noqa: S107 - a fixture token, not a secret
    state: Path | None = None,
    paging: str = "marker",
    shape: str = "structured",
    ids: str = "string",
    latency_ms: float = 0,
    error_rate: float = 0.0,
    error_kinds: Iterable[str] = ("429", "500"),
    drop_rate: float = 0.0,
    search_lag_s: float = 0,
    disabled_tools: Iterable[str] = (),
    hidden_tools: Iterable[str] = (),
    seed: int = 0,
    **more: Any,
) -> Iterator[Emulator]:
    """Serve `root` as Box folder "0" for the duration of the block.

    `more` takes the other switches of `Emulator.configure` (listing, era, sessions,
    retry_after_s, fault_all, download_ttl_s) and `tokens=[...]`, `call_log=PATH`.
    """
    tokens = more.pop("tokens", None) or [token]
    call_log = more.pop("call_log", None)
    Path(root).mkdir(parents=True, exist_ok=True)
    emu = Emulator(
        root,
        tokens=tokens,
        state=state,
        seed=seed,
        call_log=call_log,
        paging=paging,
        shape=shape,
        ids=ids,
        latency_ms=latency_ms,
        error_rate=error_rate,
        error_kinds=tuple(error_kinds),
        drop_rate=drop_rate,
        search_lag_s=search_lag_s,
        disabled_tools=frozenset(disabled_tools),
        hidden_tools=frozenset(hidden_tools),
        **more,
    )
    try:
        emu.start()
        yield emu
    finally:
        emu.close()


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Emulator]:
    """A running emulator over an empty `tmp_path / "box"` (token "test-token", default switches)."""
    with running_emulator(tmp_path / "box") as emu:
        yield emu
