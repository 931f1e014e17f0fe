"""Bounded reads of regular files: the one way box-memory reads a workspace or brain-source file.

A workspace is a shared folder: anything a collaborator (or a `git clone`, or an unzip) puts there
is read by every command. So a file is opened without blocking (`O_NONBLOCK`: a FIFO cannot stall
the open), the opened descriptor is checked with `fstat` (only a regular file is read: never a
FIFO, socket, device or folder), and no more than the cap for its kind is read, so `/dev/zero` or
a 20 GB file cannot exhaust memory. The caps are documented in README.md ("Workspace format").
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from box_memory import settings
from box_memory.errors import InvalidFile, Unreadable
from box_memory.format.model import CONFIG_NAME, LOCK_NAME

KIB = 1024
MIB = 1024 * KIB

# Per kind of file, the most bytes box-memory reads. Writes are validated against the same caps,
# so nothing is committed that cannot be read back.
LIMITS: dict[str, int] = {
    "config": 1 * MIB,  # _box-memory.json, and the user config.json
    # _index.json (folder index or rollup), conflict copies of it. The default layout's largest,
    # the rollup of 100,000 memories, is ~82 MB; parsing costs ~5.3x the bytes in memory (a
    # 30.7 MB index: 162 MB), so this cap bounds a read at ~700 MB. `status` suggests the monthly
    # memory layout long before a folder index gets near it (maintenance/status.py).
    "index": 128 * MIB,
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


class ReadTimedOut(ReadFailed):
    """A read that did not finish in time: Box Drive (or the file system under it) did not deliver
    the file, typically an online-only file it is still downloading, or cannot download while
    offline. The read is left behind in its worker thread; nothing waits for it again."""

    code = "read_timeout"
    exit_code = 4  # the backend (Box Drive) did not deliver: cli.md's "backend unavailable"


class SymlinkRefused(UnreadableFile):
    """`follow=False` met a symbolic link (the caller may check where it leads and read that)."""

    code = "symlink_refused"


class OutsideWorkspace(Unreadable):
    """A path that is, or lies under, a symbolic link leading outside the workspace: never read
    or written through. Like a folder this user may not read it is skipped and reported, never
    taken for a missing or deleted file; the message names the link and where it leads."""

    code = "outside_workspace"

    def __init__(self, message: str, *, link: str | None = None) -> None:
        super().__init__(message)
        self.link = link  # the workspace path of the link that leads out, when known


# Errors worth retrying: the file is there but someone else has it, or it is not local yet.
BUSY_ERRNOS = {errno.EACCES, errno.EPERM, errno.EAGAIN, errno.EBUSY, errno.ETIMEDOUT, errno.EDEADLK}
RETRY_DELAYS_S = (0.05, 0.1, 0.2, 0.4, 0.8)  # bounded back-off: 6 tries over about 1.5 s


# Test hook: `BOX_MEMORY_FAIL_READ` / `BOX_MEMORY_FAIL_REPLACE` (settings.injected_faults), read once
# per process so that each injected failure is counted down.
_FAULTS = {op: settings.injected_faults(op) for op in ("read", "replace")}
_HANGS = settings.injected_hangs()  # test hook BOX_MEMORY_HANG_READ


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


def injected_hang(path: str | Path) -> None:
    """Stall the read a test asked to hang (see _HANGS); free when unset."""
    if not _HANGS:
        return
    p = str(path).replace("\\", "/")
    for name, secs in _HANGS.items():
        if p == name or p.endswith("/" + name):
            time.sleep(secs)


def kind_for(name: str) -> str:
    """The kind of a workspace file from its name (the last path component)."""
    base = name.rsplit("/", 1)[-1]
    if base == CONFIG_NAME:
        return "config"
    if base == LOCK_NAME:
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
            raise SymlinkRefused(f"{where} is a symbolic link; box-memory does not follow it here") from None
        if e.errno == errno.ELOOP:  # a link to itself, or a chain too long to ever reach a file
            raise UnreadableFile(
                f"{where} is a symbolic link that never reaches a file (a loop); "
                "box-memory reads only regular files"
            ) from None
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


def check_regular(path: str | Path, label: str | None = None, *, private: bool = False) -> bool:
    """Whether `path` exists, refusing (UnreadableFile) anything there but a regular file: for
    files opened by other means than `read_regular` (a SQLite store or cache), so a FIFO or a
    device is named in one line instead of hanging or failing deep inside SQLite. `private`:
    also make it owner-only, through the descriptor (a symbolic link to a device or to another
    user's file is never chmod-ed). Other OSErrors of the open propagate."""
    try:
        fd, _ = open_regular(path, label)
    except FileNotFoundError:
        return False
    try:
        if private and hasattr(os, "fchmod") and os.fstat(fd).st_mode & 0o077:
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return True


def make_private(path: str | Path) -> None:
    """Owner-only (0600) for a regular file box-memory keeps for the user; anything else, or any
    error, is left alone (a symbolic link to /dev/zero must not change /dev/zero)."""
    with contextlib.suppress(OSError, UnreadableFile):
        check_regular(path, private=True)


def read_regular(
    path: str | Path,
    kind: str,
    label: str | None = None,
    *,
    follow: bool = True,
    wait: float | None = None,
) -> bytes:
    """The whole content of a regular file of at most LIMITS[kind] bytes, or UnreadableFile.

    A read refused as busy (BUSY_ERRNOS) is retried with bounded back-off, then raises ReadFailed.
    A read of a file Box Drive may have to download first (see `_watched`) runs in a worker
    thread and is given up after `read_timeout()` seconds with ReadTimedOut. `wait`: a read that
    is only nice to have (an excerpt) - tried once, and given up after at most `wait` seconds.
    """
    where = label or str(path)
    watch = _watched(path)
    for delay in (*RETRY_DELAYS_S, None) if wait is None else (None,):
        try:
            injected_failure("read", path)
            if not watch:
                try:
                    return _read_once(path, kind, where, follow, inline=True)
                except _NotLocal:
                    watch = True  # a placeholder outside the known Box Drive folders
            return _timed(_read_once, (path, kind, where, follow), where, wait)
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


def _read_once(path: str | Path, kind: str, where: str, follow: bool, *, inline: bool = False) -> bytes:
    cap = LIMITS[kind]
    injected_hang(path)
    fd, size = open_regular(path, where, follow=follow)
    try:
        if inline and _NOT_LOCAL_FLAGS and _not_local(os.fstat(fd)):
            raise _NotLocal
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


# ---- Reads that may hang -------------------------------------------------------------------
# Box Drive serves an online-only file on demand: the first read waits while it downloads, which
# can take long, or forever when the network is gone (macOS File Provider "dataless" files,
# https://developer.apple.com/documentation/fileprovider; Windows cloud placeholders,
# https://learn.microsoft.com/windows/win32/cfapi/cloud-files-api-portal). A blocked read cannot
# be interrupted, so such a read runs in a daemon worker thread and the caller waits at most
# `read_timeout()` seconds; a read that does not finish is left to its thread (it exits with
# the process) and the caller gets ReadTimedOut. Reads of files that cannot be placeholders stay
# in the calling thread: handing a read to a worker costs 15-50 us, against ~120 us per file for
# a whole cold recall-cache build (bench/RESULTS.md, "Box Drive: read timeout").

# Once reads are stuck (timed out, still not returned), later reads wait less: with 1-3 stuck at
# most 5 s, with 4-63 stuck 0.5 s (ample for a file that is on this machine), and with 64 stuck
# none is started. So a command ends in bounded time however many files hang: at most
# 30 + 3 x 5 + 60 x 0.5 = 75 s of waiting with the defaults.
STUCK_WAITS = ((4, 0.5), (1, 5.0))
MAX_STUCK = 64

# st_flags SF_DATALESS (macOS <sys/stat.h>: "file is dataless object"); Windows attributes
# FILE_ATTRIBUTE_OFFLINE, RECALL_ON_OPEN and RECALL_ON_DATA_ACCESS (winnt.h).
_SF_DATALESS = 0x40000000
_WIN_NOT_LOCAL = 0x00001000 | 0x00040000 | 0x00400000
_NOT_LOCAL_FLAGS = sys.platform == "darwin" or os.name == "nt"


class _NotLocal(Exception):
    """Raised inside an inline read that turns out to be of a placeholder: redo it timed."""


def _not_local(st: os.stat_result) -> bool:
    """Whether the file system says the file's content is not on this machine yet."""
    flags = getattr(st, "st_flags", 0) or 0
    attrs = getattr(st, "st_file_attributes", 0) or 0
    return bool(flags & _SF_DATALESS or attrs & _WIN_NOT_LOCAL)


def not_downloaded(path: str | Path) -> bool:
    """Whether `path` is a Box Drive placeholder whose content is not on this machine (a read
    would download it). False where the file system has no such flags (Linux) or on any error."""
    if not _NOT_LOCAL_FLAGS:
        return False
    try:
        return _not_local(os.stat(path))  # noqa: PTH116 - str or Path alike
    except OSError:
        return False


def not_local_stat(st: os.stat_result) -> bool:
    """`not_downloaded` for a stat already taken (the recall cache stats every file it reads)."""
    return _NOT_LOCAL_FLAGS and _not_local(st)


_DIR_FD = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd


def read_names(folder: str, names: list[str], kind: str) -> dict[str, tuple[os.stat_result, bytes | None]]:
    """Many small files of one local folder at once, for a cold build that reads thousands: the
    folder is opened once and each name is looked up in it (stat, open, fstat, one read, close),
    with none of `read_regular`'s per-path work. Only the plain case is answered, per name its
    stat taken before the read and its bytes, or None for a Box Drive placeholder (its stat
    says so; never read). Everything else - a name not there as spelled, a link, anything but a
    regular file, a file over the cap or one that changed while it was read, a refused open, a
    folder inside Box Drive (its reads are timed) or a test's injected fault - is left out, for
    the caller to read through `read_regular`, which says what is wrong with it."""
    first = f"{folder}/{names[0]}" if names else folder
    if not _DIR_FD or any(_FAULTS.values()) or _HANGS or not names or _watched(first):
        return {}
    cap = LIMITS[kind]
    flags = os.O_RDONLY | _NONBLOCK | _NOFOLLOW | _CLOEXEC
    try:
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError:
        return {}
    out: dict[str, tuple[os.stat_result, bytes | None]] = {}
    try:
        for name in names:
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode) or st.st_size > cap:
                    continue
                if not_local_stat(st):
                    out[name] = (st, None)
                    continue
                fd = os.open(name, flags, dir_fd=dfd)
            except OSError:
                continue
            try:
                now = os.fstat(fd)
                if (now.st_ino, now.st_dev) != (st.st_ino, st.st_dev) or not stat.S_ISREG(now.st_mode):
                    continue
                data = os.read(fd, now.st_size + 1)
                if len(data) > now.st_size:  # grew since the fstat: read_regular reads it whole
                    continue
            except OSError:
                continue
            finally:
                os.close(fd)
            out[name] = (st, data)
    finally:
        os.close(dfd)
    return out


def read_timeout() -> float:
    """`BOX_MEMORY_READ_TIMEOUT_S` (settings.read_timeout_s: default 30; 0 turns the timeout off)."""
    return settings.read_timeout_s()


_in_box_drive: dict[str, bool] = {}


def _watched(path: str | Path) -> bool:
    """Whether a read of `path` is timed: the file is inside a Box Drive folder (whatever Box
    Drive's version: the older kernel-extension drive shows no placeholder flags). Answered once
    per folder."""
    folder = os.path.dirname(path)  # noqa: PTH120 - strings: this runs for every read
    hit = _in_box_drive.get(folder)
    if hit is None and not os.path.isabs(folder):  # noqa: PTH117
        folder = os.path.abspath(folder)  # noqa: PTH100
        hit = _in_box_drive.get(folder)
    if hit is None:
        from box_memory.paths import box_drive_root_of

        try:
            hit = box_drive_root_of(Path(folder)) is not None
        except OSError:
            hit = False
        _in_box_drive[folder] = hit
    return hit and read_timeout() > 0


class _Job:
    __slots__ = ("args", "done", "error", "fn", "left", "result")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        import _thread

        self.fn, self.args = fn, args
        self.done = _thread.allocate_lock()
        self.done.acquire()
        self.result: Any = None
        self.error: BaseException | None = None
        self.left = False  # the caller stopped waiting


class _Readers:
    """Daemon worker threads, kept between reads; one more is started when none is idle (a
    stuck read keeps its thread)."""

    def __init__(self) -> None:
        import queue
        import threading

        self.pid = os.getpid()  # a forked child has none of these threads: it starts its own
        self.mutex = threading.Lock()
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.idle = 0
        self.stuck = 0

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job.result = job.fn(*job.args)
            except BaseException as e:  # handed to the caller
                job.error = e
            job.done.release()
            with self.mutex:
                if job.left:
                    self.stuck -= 1
                self.idle += 1

    def run(self, fn: Callable[..., Any], args: tuple[Any, ...], where: str, timeout: float) -> Any:
        import threading

        with self.mutex:
            if self.stuck >= MAX_STUCK:
                raise ReadTimedOut(
                    f"{where} was not read: {self.stuck} earlier reads are still waiting for Box "
                    "Drive, which may be offline or still downloading"
                )
            wait = next((min(timeout, w) for n, w in STUCK_WAITS if self.stuck >= n), timeout)
            if self.idle:
                self.idle -= 1
                start = False
            else:
                start = True
        job = _Job(fn, args)
        if start:
            threading.Thread(target=self._work, name="box-memory-read", daemon=True).start()
        self.jobs.put(job)
        if not job.done.acquire(timeout=wait):
            with self.mutex:
                if not job.done.acquire(blocking=False):
                    job.left = True
                    self.stuck += 1
            if job.left:
                raise ReadTimedOut(
                    f"{where} was not read within {wait:g}s: Box Drive may still be downloading it "
                    "(an online-only file) or be offline"
                )
        if job.error is not None:
            raise job.error
        return job.result


_readers: _Readers | None = None


def guarded(path: str | Path, where: str, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` (an open or a read of `path`), timed like `read_regular`'s reads when `path` is
    in Box Drive: for callers that read a file step by step (companions hash binaries in chunks)."""
    if not _watched(path):
        return fn(*args)
    return _timed(fn, args, where)


def _timed(fn: Callable[..., Any], args: tuple[Any, ...], where: str, wait: float | None = None) -> Any:
    global _readers
    timeout = read_timeout()
    if timeout <= 0:
        return fn(*args)
    if wait is not None:
        timeout = min(timeout, wait)
    if _readers is None or _readers.pid != os.getpid():
        _readers = _Readers()
    return _readers.run(fn, args, where, timeout)
