"""Local folder store (Box Drive or any folder): atomic replace and the shared write lock."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from itertools import filterfalse
from pathlib import Path
from typing import Any

import orjson

from box_memory import settings
from box_memory.errors import (
    BackendUnavailable,
    BoxMemoryError,
    FileBusy,
    InvalidInput,
    LockBusy,
    NotFound,
    Unreadable,
)
from box_memory.format.model import INDEX_NAME, LOCK_NAME, TMP_PREFIX, parse_time
from box_memory.format.names import check_path, fold, nfc, resolve_nfc
from box_memory.format.safeio import (
    RETRY_DELAYS_S,
    OutsideWorkspace,
    ReadFailed,
    ReadTimedOut,
    SymlinkRefused,
    UnreadableFile,
    describe_mode,
    guarded,
    injected_failure,
    injected_hang,
    kind_for,
    not_downloaded,
    open_regular,
    read_names,
    read_regular,
)
from box_memory.store.base import AlreadyExists, Entry, clean_path, join

# secrets, socket and threading are imported where the write path needs them: read-only
# commands (recall, get, status) never load them.

_NOFOLLOW = bool(getattr(os, "O_NOFOLLOW", 0))
EXCERPT_WAIT_S = 0.5  # a file on this machine is read in well under that (safeio.STUCK_WAITS)
# link() errors that mean "no hard links on this file system", not "cannot create".
_NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV, errno.ENOSYS}


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _claim_then_replace(tmp: Path, target: Path, path: str) -> None:
    """No-clobber create without a hard link: O_EXCL claims the name, the rename fills it."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        raise AlreadyExists(f"{path} already exists") from None
    try:
        for delay in (*RETRY_DELAYS_S, None):
            try:
                injected_failure("replace", target)
                tmp.replace(target)  # a virus scanner or Box Drive may be looking at the claim
                return
            except PermissionError as e:
                if delay is None:
                    raise FileBusy(
                        f"{path} could not be created after {len(RETRY_DELAYS_S) + 1} tries "
                        f"({e.strerror}): another program holds it open"
                    ) from None
                time.sleep(delay)
    except BaseException:
        with contextlib.suppress(OSError):
            if target.stat().st_size == 0:  # still our empty claim: never leave it behind
                target.unlink()
        raise


def _replaceable(target: Path, path: str) -> None:
    """A replace never destroys what is not a regular file box-memory wrote: a folder, FIFO,
    device or socket in place of `path`, or a link that leads to none (a loop), is refused with
    UnreadableFile (`index-rebuild` moves such a thing aside before it writes)."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        try:
            mode = target.stat().st_mode
        except OSError:
            raise UnreadableFile(
                f"{path} is a symbolic link that never reaches a file; box-memory replaces only "
                "regular files (`box-memory index-rebuild` moves it aside)"
            ) from None
    if not stat.S_ISREG(mode):
        raise UnreadableFile(
            f"{path} is {describe_mode(mode)}; box-memory replaces only regular files "
            "(`box-memory index-rebuild` moves it aside)"
        )


def lock_settings() -> tuple[float, float, float]:
    """(stale_after, wait, renew_every) seconds; env overrides exist so tests can be quick."""
    return settings.lock_timing()


class LocalStore:
    kind = "local"

    def __init__(self, root: Path) -> None:
        self.root = root
        self._sync_each = True  # False inside batch(): new files are made durable at checkpoint()
        # The last listing of each folder with the folder's mtime (taken before the listing, so
        # a change during it shows as a newer mtime): a write lists its folder, and the
        # case-folded collision check reuses that listing while the folder is unchanged.
        self._listed: dict[Path, tuple[int, list[str]]] = {}
        # Per folder: name keys (fold or nfc) over a cached listing, extended as the listing grows.
        self._keyed: dict[tuple[Path, str], tuple[list[str], int, dict[str, str | list[str]]]] = {}
        # Per workspace-relative folder: "" when its real path is inside the workspace, else why
        # not (the symbolic link that leads out). Forgotten by drop_listings().
        self._inside: dict[str, str] = {}
        self._real_root: str | None = None
        self._swept_at: float | None = None  # when this store last swept temp files (`lock`)

    def describe(self) -> str:
        return str(self.root)

    @property
    def local_root(self) -> Path:
        return self.root

    def _p(self, path: str) -> Path:
        """The on-disk path: an NFC name from an index or the user finds an NFD name on disk.
        Its folder must be inside the workspace (OutsideWorkspace when a symbolic link leads out)."""
        rel = clean_path(path)
        self._contain(rel.rpartition("/")[0])
        return resolve_nfc(self.root, rel)

    # ---- Symbolic links: nothing outside the workspace is read or written -----------------
    # A workspace is a shared folder: a `memories/` linked to another folder, or a memory file
    # linked to ~/.ssh/id_rsa, must not make box-memory write there or read that. Every path is
    # used only if its folder's real path is inside the workspace's real path (checked once per
    # folder), and every file is opened with O_NOFOLLOW: a link is followed only when it leads to
    # a place inside the workspace. The same rule as `companion`'s (companions.real_inside).

    def _root_real(self) -> str:
        if self._real_root is None:
            self._real_root = os.path.realpath(self.root)
        return self._real_root

    def _within(self, real: str) -> bool:
        root = self._root_real()
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def _contain(self, folder: str) -> None:
        """Raise OutsideWorkspace when workspace folder `folder` ("" the root) is, or is under, a
        symbolic link that leads outside the workspace."""
        if not folder:
            return
        why = self._reason(folder)
        if why:
            raise OutsideWorkspace(why, link=why.split(" is a symbolic link to ", 1)[0])

    def _reason(self, folder: str) -> str:
        """`_outside_reason`, answered once per folder."""
        why = self._inside.get(folder)
        if why is None:
            why = self._outside_reason(folder)
            self._inside[folder] = why
        return why

    def _outside_reason(self, rel: str) -> str:
        """ "" when `rel`'s real path is inside the workspace, else a sentence naming the link.

        A path none of whose parts below the root is a symbolic link is inside: an lstat per part
        below the root instead of a realpath (an lstat per part of the whole path, in Python), for
        each memory folder a recall looks at. POSIX only: Windows also redirects through
        junctions, which are not symbolic links, and only realpath follows those."""
        disk = resolve_nfc(self.root, rel)
        if os.name == "posix" and not _any_link(self.root, disk):
            return ""
        if self._within(os.path.realpath(disk)):
            return ""
        cur = self.root
        for part in disk.relative_to(self.root).parts:
            cur = cur / part
            if cur.is_symlink():
                real = os.path.realpath(cur)
                if not self._within(real):
                    return self._outside_message(cur, real)
        return f"{rel} resolves outside the workspace; box-memory does not follow it"

    def _outside_message(self, link: Path, real: str) -> str:
        rel = link.relative_to(self.root).as_posix()
        return (
            f"{rel} is a symbolic link to {real}, outside the workspace; "
            "box-memory does not read or write through it"
        )

    def _linked(self, path: str, disk: Path) -> Path:
        """Where the symbolic link `disk` leads, if that is inside the workspace."""
        real = os.path.realpath(disk)
        if not self._within(real):
            raise OutsideWorkspace(self._outside_message(disk, real), link=clean_path(path))
        return Path(real)

    def _read(self, path: str, disk: Path | None = None, **kw: Any) -> bytes:
        """A regular file's bytes through safeio, following a symbolic link only into the workspace
        (`disk`: `_p(path)`, when the caller has it already)."""
        if disk is None:
            disk = self._p(path)
        try:
            if not _NOFOLLOW and disk.is_symlink():  # no O_NOFOLLOW (Windows): ask first
                raise SymlinkRefused(path)
            return read_regular(disk, kind_for(path), path, follow=False, **kw)
        except SymlinkRefused:
            return read_regular(self._linked(path, disk), kind_for(path), path, **kw)

    def _new(self, path: str) -> Path:
        """A path box-memory is about to create: it must be a name Box Drive syncs (names.py)."""
        rel = clean_path(path)
        check_path(rel)
        self._contain(rel.rpartition("/")[0])
        head, _, last = rel.rpartition("/")
        parent = self.root / head if head else self.root
        target = parent / last
        if not last or os.path.lexists(target) or not parent.is_dir():
            return self._p(path)
        # The same lookup as resolve_nfc's for the last part (an NFD twin of an NFC name), over the
        # cached listing: a run of creates in one folder does not list and normalise it per file.
        try:
            matches = self._names_keyed(parent, "nfc", nfc(last))
        except OSError:
            return self._p(path)
        return parent / matches[0] if matches else target

    def _keyed_names(self, folder: Path, key: str) -> dict[str, str | list[str]]:
        """The folder's names grouped by `fold` or `nfc` (listing order kept): a name, or the list
        of names sharing a key. Built once per listing and extended as `create_bytes` appends its
        own files to that listing."""
        names = self._listing(folder)
        hit = self._keyed.get((folder, key))
        if hit is None or hit[0] is not names or hit[1] > len(names):
            hit = (names, 0, {})
        table = hit[2]
        new = names[hit[1] :]
        fn = fold if key == "fold" else nfc
        if not table and "".join(new).isascii():
            # The common case (a first build over plain names) at C speed, with no object per
            # name: a write into a 40,000-file folder spends milliseconds here.
            keys = list(map(str.lower, new)) if key == "fold" else new
            table = dict(zip(keys, new, strict=True))
            if len(table) != len(new):  # names equal but for case: group them one by one
                table = {}
                for k, n in zip(keys, new, strict=True):
                    _add_name(table, k, n)
        else:
            for n in new:
                _add_name(table, (n.lower() if key == "fold" else n) if n.isascii() else fn(n), n)
        self._keyed[(folder, key)] = (names, len(names), table)
        return table

    def _names_keyed(self, folder: Path, key: str, k: str) -> list[str]:
        """The names of `folder` whose `key` (fold or nfc) is `k`."""
        v = self._keyed_names(folder, key).get(k)
        return [] if v is None else [v] if isinstance(v, str) else v

    def _taken(self, target: Path) -> str | None:
        """The name in target's folder equal to target's name for Box, macOS and Windows (case
        and Unicode normalisation folded), when it is not the very same name."""
        name = target.name
        try:
            same = self._names_keyed(target.parent, "fold", fold(name))
        except OSError:
            return None
        return next((n for n in same if n != name), None)

    def _listing(self, folder: Path, *, reuse: bool = True) -> list[str]:
        """The folder's names; with `reuse`, the last listing if the folder has not changed since
        (only the collision check reuses: listings callers act on are always read afresh)."""
        mtime = folder.stat().st_mtime_ns
        hit = self._listed.get(folder)
        if reuse and hit is not None and hit[0] == mtime:
            return hit[1]
        names = os.listdir(folder)  # noqa: PTH208
        self._listed[folder] = (mtime, names)
        return names

    def listing_mark(self, path: str) -> tuple[Path, int, list[str]] | None:
        """The listing kept of folder `path` (`_listing`) with the folder's time now, for
        `listing_still`; None when none is kept or it lacks the folder's index (a first save)."""
        folder = self._p(path)
        hit = self._listed.get(folder)
        if hit is None or INDEX_NAME not in hit[1]:
            return None
        try:
            return folder, folder.stat().st_mtime_ns, hit[1]
        except OSError:
            return None

    def listing_still(self, mark: tuple[Path, int, list[str]] | None) -> None:
        """The caller knows nothing changed the folder's names since its listing but this
        process's own creates (already added to it) and replaces: the listing is current as of
        `mark`'s time, so the next name check does not list the folder again."""
        if mark is None:
            return
        folder, mtime, names = mark
        hit = self._listed.get(folder)
        if hit is not None and hit[1] is names:
            self._listed[folder] = (mtime, names)

    def check_root(self) -> None:
        if not self.root.is_dir():
            raise BackendUnavailable(f"workspace folder {self.root} is missing (is Box Drive running?)")

    def read_bytes(self, path: str) -> bytes:
        """A regular file's bytes, bounded by the cap for its kind (safeio: no FIFO, no device)."""
        try:
            return self._read(path)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"{path} not found in the workspace") from None
        except ReadTimedOut:
            raise
        except ReadFailed:
            # EACCES is retried as a busy file (a Windows sharing violation looks the same); when
            # the permission bits say this user may not read it, it is a team boundary instead.
            if not os.access(self._p(path), os.R_OK):
                raise Unreadable(f"{path} is not readable (permission denied)") from None
            raise

    def read_files(self, paths: list[str]) -> dict[str, tuple[os.stat_result, bytes | None]]:
        """Memory files read many at a time (a cold recall-cache build): per path its stat taken
        before the read and its bytes, None for a Box Drive placeholder (not read). A path left
        out is to be read one by one (`read_bytes`), which raises what is wrong with it: only the
        plain case is answered here (`safeio.read_names`), inside folders that lead nowhere out of
        the workspace."""
        by_folder: dict[str, dict[str, str]] = {}
        for path in paths:
            folder, _, name = clean_path(path).rpartition("/")
            by_folder.setdefault(folder, {})[name] = path
        out: dict[str, tuple[os.stat_result, bytes | None]] = {}
        for folder, named in by_folder.items():
            try:
                self._contain(folder)
            except OutsideWorkspace:
                continue
            disk = str(self.root / folder) if folder else str(self.root)
            for name, got in read_names(disk, list(named), "memory").items():
                out[named[name]] = got
        return out

    def read_if_local(self, path: str) -> bytes | None:
        """A Box Drive placeholder (content not downloaded) is not read, and a read that does not
        finish within EXCERPT_WAIT_S (the older Box Drive shows no placeholder flags) is given
        up: None, like any failure."""
        try:
            disk = self._p(path)
            if not_downloaded(disk):
                return None
            return self._read(path, disk, wait=EXCERPT_WAIT_S)
        except (BoxMemoryError, OSError):
            return None

    def read_chunks(self, path: str, chunk_size: int = 1024 * 1024) -> Iterator[bytes | memoryview]:
        """The file's bytes chunk by chunk (companions hash large binaries). Symlinks are
        resolved and must stay inside the workspace; only a regular file is read (a FIFO or a
        device in place of a binary is refused, never waited on or read as 0 bytes)."""
        real_root = self.root.resolve()
        real = Path(os.path.realpath(resolve_nfc(real_root, clean_path(path))))
        if real != real_root and real_root not in real.parents:
            raise InvalidInput(f"{path} resolves outside the workspace ({real}); refusing to follow it")
        return self._chunks(real, chunk_size, path)

    @staticmethod
    def _chunks(real: Path, chunk_size: int, label: str) -> Iterator[bytes | memoryview]:
        # A binary in Box Drive may be online-only: the open and each chunk are timed (safeio).
        def opened() -> tuple[int, int]:
            injected_hang(real)  # test hook BOX_MEMORY_HANG_READ
            return open_regular(real, label, follow=False)

        fd, _ = guarded(real, label, opened)
        with os.fdopen(fd, "rb", buffering=0) as f:
            buf = bytearray(chunk_size)
            view = memoryview(buf)
            while n := guarded(real, label, f.readinto, buf):
                yield view[:n]  # a view of the one buffer: consumed before the next read

    def prefetch(self, paths: Iterable[str]) -> int:
        """Nothing to fetch ahead: files are read straight from the disk."""
        return 0

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Many new files in a row (import): `create_bytes` skips its two fsyncs per file and
        `checkpoint()` (one `sync`) makes everything created so far durable. The caller
        checkpoints before saving any index that lists those files, so an index never points at
        a file a crash could lose; replacements (`write_bytes`) keep their own fsyncs."""
        self._sync_each = False
        try:
            yield
        finally:
            self._sync_each = True
            os.sync()

    def checkpoint(self) -> None:
        if not self._sync_each:
            os.sync()

    def _write_temp(self, target: Path, data: bytes, *, sync: bool = True) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f"{TMP_PREFIX}{os.urandom(6).hex()}-{target.name}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if sync:
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        return tmp

    def write_bytes(self, path: str, data: bytes) -> str | None:
        """Atomic replace: temp file in the same folder, fsync, rename over the target.

        On Windows a file that Box Drive, an editor or an antivirus holds open cannot be replaced
        (a sharing violation, PermissionError): the rename is retried with bounded back-off, and
        if it still fails the temp file is removed, the target keeps its old bytes, and FileBusy
        is raised (the caller's `with lock()` releases the lock on the way out).
        """
        target = self._new(path)
        _replaceable(target, path)
        tmp = self._write_temp(target, data)
        try:
            for delay in (*RETRY_DELAYS_S, None):
                try:
                    injected_failure("replace", target)
                    tmp.replace(target)
                    break
                except PermissionError as e:
                    if delay is None:
                        raise FileBusy(
                            f"{path} could not be replaced after {len(RETRY_DELAYS_S) + 1} tries "
                            f"({e.strerror}): another program holds it open; it was left unchanged"
                        ) from None
                    time.sleep(delay)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _fsync_dir(target.parent)
        return None

    def create_bytes(self, path: str, data: bytes) -> str | None:
        """Create-or-fail with the full content visible at once (link the finished temp file).

        A name that differs only in case or Unicode normalisation is the same file on Box, macOS
        and Windows, so it counts as existing here too. Where hard links are not supported (exFAT,
        FAT, some network and File Provider volumes), the name is claimed with an exclusive create
        (which fails if anything holds it, even a file that appeared a moment ago) and the
        finished temp file is renamed over that empty claim.
        """
        target = self._new(path)
        if (other := self._taken(target)) is not None:
            raise AlreadyExists(f"{path} already exists (as {other})")
        seen = self._listed.get(target.parent)
        tmp = self._write_temp(target, data, sync=self._sync_each)
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise AlreadyExists(f"{path} already exists") from None
        except OSError as e:
            if e.errno not in _NO_LINK:
                raise
            _claim_then_replace(tmp, target, path)
        finally:
            tmp.unlink(missing_ok=True)
        if seen is not None and self._listed.get(target.parent) is seen:
            # Keep the listing current with our own new file, so a run of creates in one folder
            # (a batch import) does not list the folder again for every file.
            seen[1].append(target.name)
            with contextlib.suppress(OSError):
                self._listed[target.parent] = (target.parent.stat().st_mtime_ns, seen[1])
        if self._sync_each:
            _fsync_dir(target.parent)
        return None

    def exists(self, path: str) -> bool:
        try:
            return self._p(path).exists()
        except PermissionError:
            raise Unreadable(f"{path} is not readable (permission denied)") from None

    def signature(self, path: str) -> str | None:
        """One `os.stat` (inode, size, mtime and ctime in ns: an atomic replace always gets a new
        inode, even within one clock tick)."""
        root = self.root
        try:
            # os.stat on a joined string: one syscall, no Path objects on the warm path.
            st = os.stat(os.path.join(root, path) if path else root)  # noqa: PTH116, PTH118
        except (FileNotFoundError, NotADirectoryError):
            return None
        except PermissionError:
            return "denied"  # a team boundary: re-checked on every call, read once it opens
        except OSError:  # a link that loops: the link's own signature (it changes when replaced)
            try:
                st = os.lstat(os.path.join(root, path))  # noqa: PTH118
            except OSError:
                return None
            return f"link:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"
        return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"

    def stat(self, path: str) -> Entry | None:
        p = self._p(path)
        try:
            st = p.stat()
        except FileNotFoundError:
            return None
        except PermissionError:
            raise Unreadable(f"{path} is not readable (permission denied)") from None
        except OSError:  # a link that loops: what it is, a link
            st = p.lstat()
        return Entry(p.name, p.is_dir(), st.st_size, st.st_mtime)

    def list_dir(self, path: str) -> list[Entry]:
        return self._scan(path, None)

    def list_dir_stats(self, path: str) -> tuple[list[Entry], dict[str, os.stat_result]]:
        """`list_dir`, and the stat (links followed) each entry was listed from, by its name as
        listed (a link that loops is listed as the link, and has no stat here)."""
        stats: dict[str, os.stat_result] = {}
        return self._scan(path, stats), stats

    def _scan(self, path: str, stats: dict[str, os.stat_result] | None) -> list[Entry]:
        out: list[Entry] = []
        self._contain(clean_path(path))
        try:
            with os.scandir(self._p(path)) as it:
                for de in it:
                    if de.name.startswith(TMP_PREFIX):
                        continue
                    followed = True
                    try:
                        st = de.stat()
                    except FileNotFoundError:
                        continue
                    except OSError:  # a link to itself (ELOOP): listed as what it is, a link
                        st, followed = de.stat(follow_symlinks=False), False
                    name = de.name if de.name.isascii() else nfc(de.name)
                    out.append(Entry(name, stat.S_ISDIR(st.st_mode), st.st_size, st.st_mtime))
                    if stats is not None and followed:
                        stats[name] = st
        except FileNotFoundError:
            return []
        except PermissionError:
            raise Unreadable(f"{path or '.'}/ is not readable (permission denied)") from None
        return out

    def subfolders(self, path: str, match: Callable[[str], object]) -> list[str]:
        names = [n for n in self.list_names(path) if match(n)]
        return [n for n in names if (st := self.stat(join(path, n))) is not None and st.is_dir]

    def list_names(self, path: str) -> list[str]:
        """Names only: no per-file stat, so a 10k-file folder lists in a few milliseconds."""
        self._contain(clean_path(path))
        try:
            names = self._listing(self._p(path), reuse=False)  # plain names: it is the hot path
            if "".join(names).isascii():  # at C speed: a 40,000-file folder in milliseconds
                return list(filterfalse(_TMP_NAME.match, names))
            return [n if n.isascii() else nfc(n) for n in names if not n.startswith(TMP_PREFIX)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        except PermissionError:
            raise Unreadable(f"{path or '.'}/ is not readable (permission denied)") from None

    def listing_incomplete(self, path: str) -> str | None:
        return None  # a local listing is the folder itself

    def drop_listings(self, *, fresh: bool = False) -> None:
        """The cached listings are revalidated by the folder's mtime; where folders lead is
        looked at again."""
        self._inside.clear()

    def folder_id(self, path: str) -> str | None:
        return None  # local items have no Box ids

    def mkdir(self, path: str) -> str | None:
        self._new(path).mkdir(parents=True, exist_ok=True)
        return None

    def move(self, src: str, dst: str) -> None:
        s, d = self._p(src), self._new(dst)
        d.parent.mkdir(parents=True, exist_ok=True)
        if d.exists() or (other := self._taken(d)) is not None:
            raise AlreadyExists(f"{dst} already exists" + (f" (as {other})" if not d.exists() else ""))
        s.rename(d)

    def complete_config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        return cfg  # a folder's paths are its ids: nothing to record

    def close(self) -> None:
        pass  # a folder on this machine holds no session or handle between calls

    def upload_limit(self) -> int | None:
        return None

    def collected_warnings(self) -> list[str]:
        return []  # a local folder answers or fails; nothing is noticed on the side

    def lock_state(self) -> dict[str, Any] | None:
        """Who holds `_box-memory.lock`, and since when (a stale one is taken over by the next
        writer); None when nobody holds it."""
        st = self.stat(LOCK_NAME)
        if st is None:
            return None
        body: dict[str, Any] = {}
        with contextlib.suppress(Exception):
            loaded = orjson.loads(self.read_bytes(LOCK_NAME))
            body = loaded if isinstance(loaded, dict) else {}
        renewed = parse_time(body.get("renewed_at"))
        last = max(renewed.timestamp() if renewed else 0.0, st.modified)
        age = max(0.0, time.time() - last)
        stale_after = lock_settings()[0]
        return {
            "writer": body.get("writer"),
            "skill": body.get("skill"),
            "pid": body.get("pid"),
            "host": body.get("host"),
            "age_s": round(age, 1),
            "stale": age >= stale_after,
        }

    def sweep_temp(self, older_than: float) -> int:
        """Remove temp files left by killed writers (the lock holder runs this; returns how many).

        A temp file is written and renamed in within one lock hold, so one older than the lock's
        staleness belongs to no live writer. Only the folders box-memory writes to are looked at
        (this month's and last month's memory folders too), and of those only the ones changed
        since shortly before this machine's last sweep: a temp file changes its folder's time, and
        every one older than that sweep's limit was removed then. So a lock in a workspace with
        100,000 memories in `memories/` does not list that folder on every write. One process
        (serve) sweeps at most once per `older_than`: its own writes change `memories/` each
        time, and a temp file younger than that would be kept anyway.
        """
        if self._swept_at is not None and time.monotonic() - self._swept_at < older_than:
            return 0
        self._swept_at = time.monotonic()
        marker = self._sweep_marker()
        try:
            last = float(read_regular(marker, "lock").decode("ascii"))
        except (OSError, ValueError, BoxMemoryError):
            last = 0.0
        started = time.time()
        limit = started - older_than
        removed = 0
        for folder in self._sweep_folders():
            if not self._within(os.path.realpath(folder)):
                continue  # a link out of the workspace: its files are not ours to remove
            try:
                if last and os.stat(folder).st_mtime < last - older_than:  # noqa: PTH116
                    continue  # unchanged since before the last sweep's limit: no new temp file
                # The temp names first (at C speed over a large folder), then a stat of those only.
                names = filter(_TMP_NAME.match, os.listdir(folder))  # noqa: PTH208
                temps = [os.path.join(folder, n) for n in names]  # noqa: PTH118
            except OSError:
                continue
            for path in (p for p in temps if _old_regular(p, limit)):
                with contextlib.suppress(OSError):
                    Path(path).unlink()
                    removed += 1
        with contextlib.suppress(OSError):
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(repr(started), encoding="ascii")
        return removed

    def _sweep_folders(self) -> list[Path]:
        now = time.gmtime()
        last_month = (now.tm_year, now.tm_mon - 1) if now.tm_mon > 1 else (now.tm_year - 1, 12)
        months = [f"{now.tm_year:04d}-{now.tm_mon:02d}", f"{last_month[0]:04d}-{last_month[1]:02d}"]
        folders = [self.root]
        for scope in [self.root, *self._team_roots()]:
            folders += [scope / "memories", scope / "files", scope / "companions"]
            folders += [scope / "memories" / m for m in months]
        return [*folders, self.root / "_archive", self.root / "_archive" / "companions"]

    def _sweep_marker(self) -> Path:
        """When this machine last swept this workspace (a file in the user's state folder)."""
        import hashlib

        from box_memory.paths import user_dirs

        key = hashlib.sha256(str(self.root).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        return user_dirs().state / "temp-sweeps" / key

    def _team_roots(self) -> list[Path]:
        try:
            with os.scandir(self.root / "teams") as it:
                return [Path(de.path) for de in it if de.is_dir(follow_symlinks=False)]
        except OSError:
            return []

    @contextlib.contextmanager
    def lock(self, *, writer: str = "box-memory", skill: str = "") -> Iterator[object]:
        lk = FileLock(self.root / LOCK_NAME, writer=writer, skill=skill)
        lk.acquire()
        try:
            self.sweep_temp(lk.stale_after)
            yield lk
        finally:
            lk.release()


class FileLock:
    """`_box-memory.lock`, the protocol shared with the on-prem plugin (format spec section 7): a
    lock file (locks.FileLock, kernel=False) renewed while held, taken over once stale."""

    def __init__(self, path: Path, *, writer: str, skill: str) -> None:
        from box_memory import locks  # writes only: a recall never takes the lock

        self.path = path
        self.stale_after, self.wait, self.renew_every = lock_settings()
        self._lock = locks.FileLock(
            path,
            kernel=False,
            wait=self.wait,
            stale_after=self.stale_after,
            renew_every=self.renew_every,
            mode=0o644,
            tmp_prefix=TMP_PREFIX,
            body=locks.holder_body(writer, skill),
        )
        self.token = self._lock.token
        self.body = self._lock.body

    def acquire(self) -> None:
        try:
            held = self._lock.acquire()
        except FileNotFoundError:
            raise BackendUnavailable(f"workspace folder {self.path.parent} is missing") from None
        if not held:
            b = self._lock.holder()
            holder = f" by {b.get('writer')} (pid {b.get('pid')} on {b.get('host')})" if b else ""
            raise LockBusy(
                f"workspace is locked{holder}; gave up after {self.wait:g}s "
                f"(a lock older than {self.stale_after:g}s is taken over)"
            )

    def release(self) -> None:
        self._lock.release()


def _add_name(table: dict[str, str | list[str]], k: str, name: str) -> None:
    """Put `name` under key `k`: a lone name stays a string, a second one makes a list."""
    v = table.get(k)
    if v is None:
        table[k] = name
    elif isinstance(v, str):
        table[k] = [v, name]
    else:
        v.append(name)


_TMP_NAME = re.compile(re.escape(TMP_PREFIX))


def _old_regular(path: str, limit: float) -> bool:
    """A regular file (not followed through a link) last changed before `limit`."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_mtime < limit


def _any_link(root: Path, disk: Path) -> bool:
    """Whether a part of `disk` below `root` (a path under it, no `..`) is a symbolic link; a
    part that is not there is none (nothing under it can be read)."""
    cur = str(root)
    for part in disk.relative_to(root).parts:
        cur = f"{cur}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(cur).st_mode):
                return True
        except OSError:
            return False
    return False
