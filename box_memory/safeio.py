"""Bounded reads of regular files: the one way box-memory reads a workspace or brain-source file.

A workspace is a shared folder: anything a collaborator (or a `git clone`, or an unzip) puts there
is read by every command. So a file is opened without blocking (`O_NONBLOCK`: a FIFO cannot stall
the open), the opened descriptor is checked with `fstat` (only a regular file is read: never a
FIFO, socket, device or folder), and no more than the cap for its kind is read, so `/dev/zero` or
a 20 GB file cannot exhaust memory. The caps are documented in README.md ("Workspace format").
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

from box_memory import settings
from box_memory.errors import InvalidFile

KIB = 1024
MIB = 1024 * KIB

# Per kind of file, the most bytes box-memory reads. Writes are validated against the same caps,
# so nothing is committed that cannot be read back.
LIMITS: dict[str, int] = {
    "config": 1 * MIB,  # _box-memory.json, and the user config.json
    "index": 64 * MIB,  # _index.json (folder index or rollup), conflict copies of it
    "memory": 2 * MIB,  # a memory or companion markdown file (frontmatter + body)
    "frontmatter": 64 * KIB,  # the YAML frontmatter block inside a memory
    "lock": 64 * KIB,  # _box-memory.lock
    "file": 2 * MIB,  # any other small workspace file read whole (README.md)
    "document": 50 * MIB,  # a brain-sync local source document read whole for its text
    "source": 8 * MIB,  # one file of an `import` source (a note, a CLAUDE.md, a mem0 export)
}

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnreadableFile(InvalidFile):
    """A file that is not a regular file, or is larger than the cap for its kind. Nothing is read."""

    code = "unreadable_file"


class ReadFailed(UnreadableFile):
    """A file that could not be read after bounded retries: held open by another program (a
    Windows sharing violation) or not yet downloaded by Box Drive (macOS File Provider). Callers
    that read many files report it per file and change nothing because of it."""

    code = "read_failed"


# Errors worth retrying: the file is there but someone else has it, or it is not local yet.
BUSY_ERRNOS = {errno.EACCES, errno.EPERM, errno.EAGAIN, errno.EBUSY, errno.ETIMEDOUT, errno.EDEADLK}
RETRY_DELAYS_S = (0.05, 0.1, 0.2, 0.4, 0.8)  # bounded back-off: 6 tries over about 1.5 s


# Test hook: `BOX_MEMORY_FAIL_READ` / `BOX_MEMORY_FAIL_REPLACE` (settings.injected_faults), read once
# per process so that each injected failure is counted down.
_FAULTS = {op: settings.injected_faults(op) for op in ("read", "replace")}


def injected_failure(op: str, path: str | Path) -> None:
    """Raise the PermissionError a test asked for (see settings.injected_faults); free when unset."""
    faults = _FAULTS[op]
    if not faults:
        return
    p = str(path).replace("\\", "/")
    for name, left in faults.items():
        if left > 0 and (p == name or p.endswith("/" + name)):
            faults[name] = left - 1
            raise PermissionError(errno.EACCES, f"injected {op} failure", p)


def kind_for(name: str) -> str:
    """The kind of a workspace file from its name (the last path component)."""
    base = name.rsplit("/", 1)[-1]
    if base == "_box-memory.json":
        return "config"
    if base == "_box-memory.lock":
        return "lock"
    if base.startswith("_index") and base.endswith(".json"):
        return "index"
    if base.endswith(".md"):
        return "memory"
    return "file"


def describe_mode(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def not_regular(label: str, mode: int) -> UnreadableFile:
    return UnreadableFile(f"{label} is {describe_mode(mode)}; box-memory reads only regular files")


def too_large(label: str, kind: str, size: int | None = None) -> UnreadableFile:
    cap = LIMITS[kind]
    shown = f" ({size} bytes)" if size is not None else ""
    return UnreadableFile(f"{label} is larger than the {human(cap)} limit for {kind} files{shown}")


def human(n: int) -> str:
    if n % MIB == 0:
        return f"{n // MIB} MiB"
    if n % KIB == 0:
        return f"{n // KIB} KiB"
    return f"{n} bytes"


def check_size(label: str, kind: str, size: int | None) -> None:
    """Refuse a file whose known size exceeds the cap (for stores that report sizes up front)."""
    if size is not None and size > LIMITS[kind]:
        raise too_large(label, kind, size)


def open_regular(path: str | Path, label: str | None = None, *, follow: bool = True) -> tuple[int, int]:
    """Open `path` read-only without blocking; returns (fd, size) for a regular file, else raises.

    FileNotFoundError and other OSErrors of the open itself propagate (callers map "missing" their
    own way); a folder, FIFO, device or socket raises UnreadableFile naming `label`. With
    `follow=False` a symbolic link is refused too (O_NOFOLLOW). The descriptor is left blocking.
    """
    where = label or str(path)
    flags = os.O_RDONLY | _NONBLOCK | _BINARY | _CLOEXEC | (0 if follow else _NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise UnreadableFile(f"{where} is a folder; box-memory reads only regular files") from None
    except OSError as e:
        if not follow and e.errno == errno.ELOOP:
            raise UnreadableFile(f"{where} is a symbolic link; box-memory does not follow it here") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_regular(where, st.st_mode)
        if _NONBLOCK and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_regular(path: str | Path, kind: str, label: str | None = None, *, follow: bool = True) -> bytes:
    """The whole content of a regular file of at most LIMITS[kind] bytes, or UnreadableFile.

    A read refused as busy (BUSY_ERRNOS) is retried with bounded back-off, then raises ReadFailed.
    """
    where = label or str(path)
    for delay in (*RETRY_DELAYS_S, None):
        try:
            injected_failure("read", path)
            return _read_once(path, kind, where, follow)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise
        except OSError as e:
            if e.errno not in BUSY_ERRNOS:
                raise
            if e.errno in (errno.EACCES, errno.EPERM) and not os.access(path, os.R_OK):
                # The permission bits refuse this user (a team boundary): waiting cannot help.
                raise ReadFailed(f"{where} could not be read ({e.strerror})") from None
            if delay is None:
                raise ReadFailed(
                    f"{where} could not be read after {len(RETRY_DELAYS_S) + 1} tries ({e.strerror}): "
                    "another program may hold it open, or Box Drive has not downloaded it yet"
                ) from None
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _read_once(path: str | Path, kind: str, where: str, follow: bool) -> bytes:
    cap = LIMITS[kind]
    fd, size = open_regular(path, where, follow=follow)
    try:
        if size > cap:
            raise too_large(where, kind, size)
        chunks: list[bytes] = []
        total = 0
        while True:
            # Read one byte past the cap: a file that grew after the fstat is caught here.
            chunk = os.read(fd, min(cap + 1 - total, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise too_large(where, kind)
        return b"".join(chunks)
    finally:
        os.close(fd)
