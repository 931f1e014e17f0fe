"""One run per source at a time, across processes (cron may start a run while one is going).

flock where available (the kernel releases it when the holder dies, so a crashed run never
blocks the next one); elsewhere msvcrt's byte-range lock, which Windows also drops on exit.
The lock is never waited for: a busy source makes the run `skipped`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def lock_path(source_id: int) -> Path:
    from box_memory.paths import user_dirs

    return user_dirs().state / "brain" / f"source-{source_id}.lock"


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        import msvcrt

        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def source_lock(source_id: int) -> Iterator[bool]:
    """Yields True when this process holds the source's lock, False when another run has it."""
    path = lock_path(source_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        held = _try_lock(fd)
        if held:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield held
        finally:
            if held:
                _unlock(fd)
    finally:
        os.close(fd)
