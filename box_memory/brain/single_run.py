"""One run per source at a time, across processes (cron may start a run while one is going).

A kernel lock (locks.FileLock: flock, or msvcrt on Windows), which the OS releases when the
holder dies, so a crashed run never blocks the next one. The lock is never waited for: a busy
source makes the run `skipped`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from box_memory import locks


def lock_path(source_id: int) -> Path:
    from box_memory.paths import user_dirs

    return user_dirs().state / "brain" / f"source-{source_id}.lock"


@contextlib.contextmanager
def source_lock(source_id: int) -> Iterator[bool]:
    """Yields True when this process holds the source's lock, False when another run has it."""
    path = lock_path(source_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with locks.FileLock(path, kernel=True) as held:
        yield held
