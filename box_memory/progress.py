"""Progress on long tasks: a rich bar on stderr, on a terminal only, shown once a task has run ~1 s.

Library code reports progress through `task(...)` whatever the caller; nothing is drawn unless the
CLI allowed it for this command (`allow`): stderr is a terminal and neither `--json` nor `--quiet`
was given. `serve` never allows it. rich is imported only when a bar is actually drawn, so a quick
command pays nothing. `BOX_MEMORY_PROGRESS_AFTER_S` changes the delay (tests set 0).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from box_memory import settings

T = TypeVar("T")

_allowed = False


def allow(on: bool) -> None:
    global _allowed
    _allowed = on


def allowed_for(json: bool, quiet: bool) -> bool:
    """What the CLI passes to `allow`: a terminal on stderr, and neither --json nor --quiet."""
    return not json and not quiet and bool(getattr(sys.stderr, "isatty", lambda: False)())


def _delay() -> float:
    return settings.progress_after_s()


class Task:
    """One long task: `advance(n)` as work gets done; the bar appears once `delay` has passed."""

    def __init__(self, what: str, total: float | None, unit: str) -> None:
        self.what = what
        self.total = total
        self.unit = unit
        self.done = 0.0
        self.started = time.monotonic()
        self.delay = _delay()
        self._bar: Any = None
        self._id: Any = None
        self._drawn = 0.0

    def advance(self, n: float = 1) -> None:
        self.done += n
        if not _allowed:
            return
        now = time.monotonic()
        if self._bar is None:
            if now - self.started < self.delay:
                return
            self._start()
        if now - self._drawn >= 0.1 or (self.total is not None and self.done >= self.total):
            self._bar.update(self._id, completed=self.done)
            self._drawn = now

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(self.unit),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._bar.start()
        self._id = self._bar.add_task(self.what, total=self.total, completed=self.done)

    def close(self) -> None:
        if self._bar is not None:
            with contextlib.suppress(Exception):
                self._bar.stop()
            self._bar = None


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
