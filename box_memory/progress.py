"""Progress on long tasks: rich bars on stderr, on a terminal only, once the command has run ~1 s.

Library code reports progress through `task(...)` whatever the caller; nothing is drawn unless the
CLI allowed it for this command (`allow`): stderr is a terminal and neither `--json` nor `--quiet`
was given. `serve` never allows it. The delay counts from the command's start, not the task's, so
a command of many short steps (a rebuild, folder by folder) shows each step once it has run ~1 s in
all. While no task reports, `command(...)` keeps one line going (a spinner, the command's name and
its time), so no command is silent for long. All of it is one live display, cleared when it ends.
rich is imported only when something is drawn, so a quick command pays nothing.
`BOX_MEMORY_PROGRESS_AFTER_S` changes the delay (tests set 0).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from box_memory import settings

T = TypeVar("T")

_allowed = False
_since = time.monotonic()  # when the command allowed progress (the delay counts from here)
_lock = threading.RLock()
_board: Any = None  # the one rich Progress shared by every row, started with its first row
_rows = 0
_heartbeat: Any = None  # the command's own row: (task id) while shown
_timer: threading.Timer | None = None
_label = ""


def allow(on: bool) -> None:
    global _allowed, _since
    with _lock:
        _allowed = on
        _since = time.monotonic()
        if not on:
            _stop_heartbeat()


def _delay() -> float:
    return settings.progress_after_s()


def _due() -> bool:
    return time.monotonic() - _since >= _delay()


def _add_row(description: str, **fields: Any) -> Any:
    """A row on the board (started with its first row); the caller holds the lock."""
    global _board, _rows
    if _board is None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        class Count(MofNCompleteColumn):
            def render(self, task: Any) -> Any:  # nothing to count on the command's own row
                return "" if task.total is None else super().render(task)

        _board = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            Count(),
            TextColumn("{task.fields[unit]}"),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        _board.start()
    _rows += 1
    return _board.add_task(description, **fields)


def _remove_row(row: Any) -> None:
    global _board, _rows
    if _board is None:
        return
    with contextlib.suppress(Exception):
        _board.remove_task(row)
    _rows -= 1
    if _rows <= 0:
        with contextlib.suppress(Exception):
            _board.stop()
        _board, _rows = None, 0


def _show_heartbeat() -> None:
    """The command's row: shown while no task has a row of its own."""
    global _heartbeat
    with _lock:
        if _allowed and _heartbeat is None and _label:
            _heartbeat = _add_row(_label, total=None, unit="", start=True)
            with contextlib.suppress(Exception):  # its clock shows the command's time, not the row's
                _board._tasks[_heartbeat].start_time = _board.get_time() - (time.monotonic() - _since)
            _heartbeat_visible(_rows == 1)


def _heartbeat_visible(on: bool) -> None:
    if _heartbeat is not None and _board is not None:
        _board.update(_heartbeat, visible=on)


def _stop_heartbeat() -> None:
    global _heartbeat, _timer, _label
    if _timer is not None:
        _timer.cancel()
        _timer = None
    if _heartbeat is not None:
        _remove_row(_heartbeat)
        _heartbeat = None
    _label = ""


@contextlib.contextmanager
def command(label: str) -> Iterator[None]:
    """Keep one line going for the command (`label`, a spinner, its time) once it has run past
    the delay, whenever no task shows a bar of its own. Cleared when the block ends."""
    global _timer, _label
    with _lock:
        if _allowed:
            _label = label
            _timer = threading.Timer(max(0.0, _delay() - (time.monotonic() - _since)), _show_heartbeat)
            _timer.daemon = True
            _timer.start()
    try:
        yield
    finally:
        with _lock:
            _stop_heartbeat()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Nothing drawn while the user is asked something (a prompt must not be overdrawn)."""
    global _allowed
    with _lock:
        was = _allowed
        _allowed = False
        _stop_heartbeat()
    try:
        yield
    finally:
        with _lock:
            _allowed = was


class Task:
    """One long task: `advance(n)` as work gets done; its bar appears once the command has run
    past the delay."""

    def __init__(self, what: str, total: float | None, unit: str) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.done = 0.0
        self._id: Any = None
        self._drawn = 0.0

    def advance(self, n: float = 1) -> None:
        self.done += n
        if not _allowed:
            return
        now = time.monotonic()
        if self._id is None:
            if not _due():
                return
            self._start()
        if now - self._drawn >= 0.1 or (self.total is not None and self.done >= self.total):
            with _lock:
                if _board is not None and self._id is not None:
                    _board.update(self._id, completed=self.done)
            self._drawn = now

    def _start(self) -> None:
        with _lock:
            self._id = _add_row(self.what, total=self.total, completed=self.done, unit=self.unit)
            _heartbeat_visible(False)

    def close(self) -> None:
        with _lock:
            if self._id is not None:
                if _board is not None:  # its last count is drawn before the row goes
                    with contextlib.suppress(Exception):
                        _board.update(self._id, completed=self.done)
                        _board.refresh()
                _remove_row(self._id)
                self._id = None
                _heartbeat_visible(_rows == 1)


@contextlib.contextmanager
def task(what: str, total: float | None = None, unit: str = "") -> Iterator[Task]:
    t = Task(what, total, unit)
    try:
        yield t
    finally:
        t.close()


def each(items: Sequence[T], what: str, unit: str = "") -> Iterator[T]:
    """`items` one by one, counted on a bar (closed when the loop ends, however it ends)."""
    with task(what, len(items), unit) as t:
        for item in items:
            yield item
            t.advance()
