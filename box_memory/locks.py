"""File locks: the one implementation behind every lock box-memory takes on a file system.

Two ways to hold a lock file, because the places that need one differ:

- `kernel=True`: flock on POSIX, msvcrt's byte-range lock on Windows. The operating system drops
  the lock when its holder exits, so a crashed holder never blocks anyone and the lock is never
  stale. It only works between processes of one machine (the token store, brain-sync runs).
- `kernel=False`: the lock file's existence is the lock (an O_EXCL create), so it also works
  through a synced folder (Box Drive) and on file systems without flock. The file holds a JSON
  body with a random `token`; a holder that has not renewed (`renewed_at` in the body, else the
  file's mtime) for `stale_after` seconds is presumed dead and its file is taken over. A body
  with `released_at` is a lock its holder released but could not delete (the cloud backend): free.

`acquire()` waits up to `wait` seconds and answers whether the lock is held; callers raise their
own error (each names what is busy). Only the standard library, model and safeio are imported.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from box_memory.format.model import now_iso, parse_time
from box_memory.format.safeio import read_regular

if TYPE_CHECKING:
    import threading

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

# Whether this platform has kernel locks at all (flock or msvcrt).
KERNEL_LOCKS = fcntl is not None or os.name == "nt"


def _kernel_try(fd: int) -> bool:
    if fcntl is None:  # pragma: no cover - Windows
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


def _kernel_unlock(fd: int) -> None:
    if fcntl is None:  # pragma: no cover - Windows
        import msvcrt

        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)


def _put_back(src: Path, dst: Path, mode: int) -> None:
    """Recreate `dst` with `src`'s bytes unless something holds the name: a hard link, or an
    exclusive create where the file system has none (exFAT, some network and Box Drive volumes)."""
    try:
        os.link(src, dst)
    except OSError as e:
        if e.errno not in (
            errno.EPERM,
            errno.ENOTSUP,
            errno.EOPNOTSUPP,
            errno.EMLINK,
            errno.EXDEV,
            errno.ENOSYS,
        ):
            raise
        data = read_regular(src, "lock")
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def holder_body(writer: str, skill: str) -> dict[str, Any]:
    """Who holds a workspace lock (format spec section 7), as every writer records it."""
    import socket

    now = now_iso()
    return {
        "writer": writer,
        "skill": skill,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": now,
        "renewed_at": now,
    }


def _loads(raw: bytes) -> dict[str, Any] | None:
    """The lock file's JSON object; {} for other JSON, None when it is not JSON at all."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else {}


class FileLock:
    """A lock on the file `path`; see the module docstring for the two kinds.

    `body` (kernel=False only) is what the lock file says about its holder; a `token` is added.
    With `renew_every`, a daemon thread rewrites the body with a fresh `renewed_at` that often
    (through a temp file named `tmp_prefix...`, renamed over the lock) until `release()`.
    """

    def __init__(
        self,
        path: Path,
        *,
        kernel: bool,
        wait: float = 0.0,
        stale_after: float = float("inf"),
        body: dict[str, Any] | None = None,
        renew_every: float | None = None,
        mode: int = 0o600,
        tmp_prefix: str = ".bm-tmp-",
    ) -> None:
        self.path = path
        self.kernel = kernel
        self.wait = wait
        self.stale_after = stale_after
        self.renew_every = renew_every
        self.mode = mode
        self.tmp_prefix = tmp_prefix
        self.token = os.urandom(8).hex()
        self.body: dict[str, Any] = {**(body or {}), "token": self.token}
        self.seen = b""  # what the lock file held when it was last found taken
        self._fd: int | None = None
        self._held = False
        # threading is imported only once a lock file is held: read-only commands never load it.
        self._stop: threading.Event | None = None
        self._renewer: threading.Thread | None = None

    # --- acquire / release ------------------------------------------------------------------

    def acquire(self) -> bool:
        """Take the lock, waiting up to `wait` seconds; False when someone else still has it."""
        deadline = time.monotonic() + self.wait
        if self.kernel:
            self._held = self._acquire_kernel(deadline)
        else:
            self._held = self._acquire_exclusive(deadline)
            if self._held and self.renew_every is not None:
                import threading

                self._stop = threading.Event()
                self._renewer = threading.Thread(target=self._renew_loop, args=(self._stop,), daemon=True)
                self._renewer.start()
        return self._held

    def release(self) -> None:
        """Give the lock up (only ours: a lock taken over from us is left to its new holder)."""
        held, self._held = self._held, False
        if self.kernel:
            fd, self._fd = self._fd, None
            if fd is not None:
                if held:
                    _kernel_unlock(fd)
                os.close(fd)
            return
        if not held:
            return
        if self._stop is not None:
            self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=2)
        try:
            body = _loads(read_regular(self.path, "lock"))
        except FileNotFoundError:
            return
        except OSError:
            body = None
        if body is None or body.get("token") == self.token:
            # Ours, or unreadable/garbled (ours as far as anyone can tell): remove it.
            with contextlib.suppress(OSError):
                self.path.unlink()

    @property
    def held(self) -> bool:
        return self._held

    def holder(self) -> dict[str, Any]:
        """The body of the lock file as last seen while someone else held it ({} when unknown)."""
        return _loads(self.seen) or {}

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    # --- kernel locks -----------------------------------------------------------------------

    def _acquire_kernel(self, deadline: float) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, self.mode)
        while not _kernel_try(fd):
            if time.monotonic() >= deadline:
                os.close(fd)
                return False
            time.sleep(0.02)
        self._fd = fd
        with contextlib.suppress(OSError):  # who holds it, for a person looking at the file
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return True

    # --- lock files -------------------------------------------------------------------------

    def _acquire_exclusive(self, deadline: float) -> bool:
        delay = 0.005
        while True:
            if self._try_create():
                return True
            age, raw = self._age()
            if age is not None and age >= self.stale_after:
                self._take_over(raw)
                continue
            if age is not None:
                self.seen = raw
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.2)

    def _try_create(self) -> bool:
        """Create the lock file holding our body; False when it exists. A missing folder raises
        FileNotFoundError (the caller says which folder that is)."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, self.mode)
        except FileExistsError:
            return False
        try:
            os.write(fd, orjson.dumps(self.body))
            os.fsync(fd)
        finally:
            os.close(fd)
        return True

    def _age(self) -> tuple[float | None, bytes]:
        """Seconds since the holder last renewed (None if the lock vanished), and its bytes."""
        try:
            raw = read_regular(self.path, "lock")
            st = self.path.stat()
        except FileNotFoundError:
            return None, b""
        body = _loads(raw) or {}
        if body.get("released_at"):
            return float("inf"), raw
        t = parse_time(body.get("renewed_at"))
        # A half-written or foreign lock still ages by its mtime, so it can never wedge anyone.
        last = max(t.timestamp() if t else 0.0, st.st_mtime)
        return time.time() - last, raw

    def _take_over(self, seen: bytes) -> None:
        """Rename the stale lock aside (only one contender's rename wins), then create afresh."""
        aside = self.path.with_name(f"{self.path.name}.stale-{os.urandom(6).hex()}")
        try:
            self.path.rename(aside)
        except FileNotFoundError:
            return
        try:
            if read_regular(aside, "lock") != seen:
                # We moved a lock someone renewed or re-created meanwhile: put it back if we can.
                with contextlib.suppress(OSError):
                    _put_back(aside, self.path, self.mode)
        finally:
            aside.unlink(missing_ok=True)

    def _renew_loop(self, stop: threading.Event) -> None:
        assert self.renew_every is not None
        while not stop.wait(self.renew_every):
            self.body["renewed_at"] = now_iso()
            try:
                if (_loads(read_regular(self.path, "lock")) or {}).get("token") != self.token:
                    return  # taken over: not ours to renew any more
                tmp = self.path.with_name(f"{self.tmp_prefix}{os.urandom(4).hex()}-lock")
                tmp.write_bytes(orjson.dumps(self.body))
                tmp.replace(self.path)
            except OSError:
                return
