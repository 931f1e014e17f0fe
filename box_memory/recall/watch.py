"""Which memory folders changed since the last look: Linux inotify, for a long-lived process.

`serve` keeps its recall caches open; instead of a stat of every memory file on every call (the
CLI's check, `cache_refresh.folder_stats`), it asks a `FolderWatch` which folders had any event
since the last call, and about which files: only those are stat'ed (a write into a folder of
40,000 memories is followed by a stat of the files it wrote, not of 40,000). The kernel queues
an inotify event inside the write that causes it, so a change made before a call began is always
in the queue when the call reads it: one non-blocking `read` per call, nothing else when nothing
changed.

Only where that holds: Linux, and folders on a local filesystem (a network or FUSE mount does not
see changes made elsewhere). Anywhere else `FolderWatch.start` returns None and the caller stats
the files. A queue overflow, a folder removed or moved, or any read error marks everything as
changed. The standard library only (ctypes): no dependency, and nothing imported by the CLI.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
import sys

IN_MODIFY = 0x2
IN_ATTRIB = 0x4
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
MASK = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
    | IN_DELETE_SELF | IN_MOVE_SELF
)  # fmt: skip
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len (then len bytes of name)
# Filesystems whose changes are all made through this kernel, so all seen by inotify.
LOCAL_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "zfs", "f2fs", "overlay", "jfs", "reiserfs", "bcachefs"}
)


def _fs_type(path: str) -> str | None:
    """The filesystem type of the mount holding `path` (/proc/self/mountinfo), or None."""
    try:
        real = os.path.realpath(path)
        best, kind = "", None
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:  # noqa: PTH123
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                if len(fields) < 5 or not right:
                    continue
                mount = fields[4].replace("\\040", " ")
                inside = real == mount or real.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best):
                    best, kind = mount, right.split()[0]
        return kind
    except OSError:
        return None


class FolderWatch:
    """inotify watches on a set of folders; `changed()` drains the queue."""

    def __init__(self, fd: int, libc: ctypes.CDLL) -> None:
        self.fd = fd
        self._libc = libc
        self._wd: dict[int, str] = {}
        self._of: dict[str, int] = {}
        self._all = False  # everything must be taken as changed (overflow, a lost watch)

    @classmethod
    def start(cls, root: str) -> FolderWatch | None:
        """A watch for folders under `root`, or None where it cannot be trusted or made."""
        if not sys.platform.startswith("linux") or _fs_type(root) not in LOCAL_FS:
            return None
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        return cls(fd, libc)

    def watch(self, path: str) -> bool:
        """Start watching the folder `path` (absolute); False when it cannot be watched."""
        if path in self._of:
            return True
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), MASK)
        if wd < 0:
            return False
        self._wd[wd] = path
        self._of[path] = wd
        return True

    def watching(self, path: str) -> bool:
        return path in self._of

    def changed(self) -> dict[str, set[str] | None] | None:
        """The watched folders with an event since the last call, each with the names of the files
        the events were about (None: the folder itself changed, take all of its files as changed);
        None: take every folder as changed."""
        out: dict[str, set[str] | None] = {}
        while True:
            try:
                buf = os.read(self.fd, 64 * 1024)
            except BlockingIOError:
                break
            except OSError:
                self._all = True
                break
            if not buf:
                break
            pos = 0
            while pos + _EVENT.size <= len(buf):
                wd, mask, _cookie, size = _EVENT.unpack_from(buf, pos)
                pos += _EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    self._all = True
                    continue
                path = self._wd.get(wd)
                if path is None:
                    continue
                name = buf[pos - size : pos].rstrip(b"\0") if size else b""
                if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                    out[path] = None
                elif (names := out.setdefault(path, set())) is not None and name:
                    # An event without a name is about the folder itself (its times or mode):
                    # no file in it changed, and the folder's own stat is compared on every call.
                    names.add(os.fsdecode(name))
                if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF):
                    self._wd.pop(wd, None)  # watched again by the next `watch`
                    self._of.pop(path, None)
        if self._all:
            self._all = False
            return None
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)
