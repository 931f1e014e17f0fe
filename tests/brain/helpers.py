"""Helpers for the brain-sync tests: files, CLI runs, the library entry point, store peeks."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from box_memory.brain.db import BrainStore
from box_memory.brain.sync import RunResult, SyncOptions, SyncRequest, brain_sync
from box_memory.emulator.testing import Emulator
from box_memory.paths import user_dirs


def put(root: Path, rel: str, text: str = "hello\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def folder_id(emu: Emulator, rel: str) -> str:
    return emu.fs.id_for_path(rel)


def sync(cli: Any, *args: str, code: int = 0) -> dict[str, Any]:
    """`brain-sync ... --json` through the real CLI -> the one run's data."""
    env = cli.json("brain-sync", *args, code=code)
    assert len(env["data"]["runs"]) == 1, env
    run = env["data"]["runs"][0]
    run["_envelope"] = env
    return run


class Sleeps(list[float]):
    """Records back-off sleeps instead of sleeping (keeps fault tests fast)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def lib_sync(
    folder: str | None = None,
    *,
    path: Path | None = None,
    opts: SyncOptions | None = None,
    **settings: Any,
) -> RunResult:
    """The library entry point with instant back-off (no real sleeping on retries)."""
    opts = opts or SyncOptions()
    opts.client_kwargs.setdefault("sleep", Sleeps())
    opts.client_kwargs.setdefault("timeout", 5.0)
    report = brain_sync(SyncRequest(folder_id=folder, path=path, **settings), opts)
    assert len(report.runs) == 1
    return report.runs[0]


def store() -> BrainStore:
    return BrainStore(create=False)


def db() -> sqlite3.Connection:
    conn = sqlite3.connect(user_dirs().brain_db)
    conn.row_factory = sqlite3.Row
    return conn


def items(source_id: int = 1) -> dict[str, dict[str, Any]]:
    with db() as conn:
        rows = conn.execute("SELECT * FROM items WHERE source_id = ? ORDER BY box_id", (source_id,))
        return {r["box_id"]: dict(r) for r in rows}


def entries(source_id: int = 1) -> dict[str, str]:
    with db() as conn:
        rows = conn.execute(
            "SELECT i.box_id, e.text FROM entries e JOIN items i ON i.id = e.item_id WHERE e.source_id = ?",
            (source_id,),
        )
        return {r["box_id"]: r["text"] for r in rows}


def fts(word: str) -> list[str]:
    with db() as conn:
        rows = conn.execute(
            "SELECT i.box_id FROM entries_fts JOIN items i ON i.id = entries_fts.rowid "
            "WHERE entries_fts MATCH ?",
            (f'"{word}"',),
        )
        return [r[0] for r in rows]


def tool_calls(emu: Emulator, name: str | None = None) -> list[Any]:
    return [c for c in emu.calls if name is None or c.name == name]


class FakeClock:
    """A clock that only moves when slept on: pacing is visible as the sleeps it asks for."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds
