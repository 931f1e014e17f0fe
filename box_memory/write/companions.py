"""Companions: a markdown memory that describes one binary and is pinned to its bytes by hash.

Binaries are never chunked, embedded or read whole: they are streamed once, in 1 MiB chunks,
through sha256 (the pin) and sha1 (what Box reports for a file, so a cloud workspace can check
staleness without a download). A companion is written through the same commit step as every
memory (`commit.commit_memory`); regenerating one supersedes the old companion, which moves to
`_archive/companions/<binary-name>.<old id>.md` so the new one can take the canonical name.

Where a companion lives (format spec section 4):
- a binary directly in `files/` (or `teams/<t>/files/`): sibling layout -> `<binary-name>.md`
  next to it; folder layout -> `companions/<binary-name>.md` (`teams/<t>/companions/`);
- any other binary inside the workspace (a subfolder of `files/`, `docs/x.pdf`, ...): there is no
  indexed folder next to it, so its companion goes to the scope's `companions/` folder in either
  layout (that folder gets its own `_index.json`, which the workspace then indexes too). The
  scope is the binary's team when it sits under `teams/<t>/`, else `--team` or the default.
Refused: `.md` files (memories never get companions), workspace bookkeeping (`_index.json`,
`_box-memory.json`, the lock, anything under `_archive/`), folders, missing files, and anything
whose real path (symlinks resolved) is outside the workspace.

Readers recognise a companion by `kind: companion` plus a `companion_for` mapping, under any file
name, in any indexed folder (the plugin itself writes `memories/companion__<slug>.md`). The binary
it describes is `companion_for.local_path` when present, else `companion_for.filename` next to the
companion when that sits in a files folder, else in its scope's `files/` folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from box_memory.errors import BoxMemoryError, InvalidFile, InvalidInput, NotFound, Unreadable
from box_memory.format.ids import new_id, next_free_slug, normalize_tag, slugify, validate_title
from box_memory.format.model import LOCK_NAME, TMP_PREFIX, IndexEntry, now_iso
from box_memory.format.names import MAX_PATH, check_name, check_path, fit_name, nfc, resolve_nfc
from box_memory.format.safeio import ReadFailed, UnreadableFile
from box_memory.params import Param
from box_memory.result import Result
from box_memory.store.base import Entry, as_box_tools, clean_path, join
from box_memory.workspace.index import LIVE, FolderIndex, load_all, read_memory
from box_memory.workspace.resolve import CONFIG_NAME, INDEX_NAME, Workspace

CHUNK_SIZE = 1 << 20
HEAD_BYTES = 64
TYPE_TAGS = ("pdf", "image", "cad", "office", "audio", "video", "archive", "other")
STATES = ("current", "stale", "orphaned", "missing")
ARCHIVE_FOLDER = "_archive/companions"
_BOOKKEEPING = {CONFIG_NAME, INDEX_NAME, LOCK_NAME}
_THREADED_MIN = 64 * 1024  # below this a second thread costs more than it saves


# --- hashing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Digest:
    sha256: str
    sha1: str
    size: int
    head: bytes  # the first bytes, for sniffing the type


def digest_chunks(chunks: Iterable[bytes | bytearray | memoryview]) -> Digest:
    """Hash a stream of byte chunks in constant memory: the one place binaries are hashed.

    Every backend feeds it: local files read in 1 MiB chunks, the cloud store a download stream.
    A chunk is fully consumed before the next is requested, so a reader may reuse one buffer.
    sha1 runs on a second thread (hashlib releases the GIL), so both cost about one pass.
    """
    sha256 = hashlib.sha256()
    sha1 = hashlib.sha1(usedforsecurity=False)
    size = 0
    head = b""
    with ThreadPoolExecutor(max_workers=1) as pool:
        for chunk in chunks:
            n = len(chunk)
            if not n:
                continue
            if len(head) < HEAD_BYTES:
                head += bytes(chunk[: HEAD_BYTES - len(head)])
            if n >= _THREADED_MIN:
                side = pool.submit(sha1.update, chunk)
                sha256.update(chunk)
                side.result()
            else:
                sha1.update(chunk)
                sha256.update(chunk)
            size += n
    return Digest(sha256.hexdigest(), sha1.hexdigest(), size, head)


def _counted(ws: Workspace, path: str, chunks: Iterator[Any]) -> Iterator[Any]:
    """The chunks as they are hashed, on a progress bar (drawn only for a hash that takes > ~1 s)."""
    from box_memory.progress import task

    root = _local_root(ws)
    total = None
    if root is not None:
        with contextlib.suppress(OSError, InvalidInput):
            total = (_contained(root, path)).stat().st_size / 2**20
    with task(f"Hashing {path}", total, "MiB") as bar:
        for chunk in chunks:
            yield chunk
            bar.advance(len(chunk) / 2**20)


def _local_root(ws: Workspace) -> Path | None:
    return ws.store.local_root


def _contained(root: Path, rel: str) -> Path:
    """The real path of `rel` (symlinks resolved), refusing anything that lands outside `root`."""
    real_root = root.resolve()
    real = Path(os.path.realpath(resolve_nfc(real_root, clean_path(rel))))
    if real != real_root and real_root not in real.parents:
        raise InvalidInput(f"{rel} resolves outside the workspace ({real}); refusing to follow it")
    return real


def binary_chunks(ws: Workspace, path: str, chunk_size: int = CHUNK_SIZE) -> Iterator[Any]:
    """The binary's bytes as a stream of chunks (a local file after a containment check, a Box
    file through a download URL)."""
    return iter(ws.store.read_chunks(path, chunk_size))


def hash_binary(ws: Workspace, path: str) -> Digest:
    try:
        return digest_chunks(_counted(ws, path, binary_chunks(ws, path)))
    except FileNotFoundError:
        raise NotFound(f"{path} does not exist") from None
    except IsADirectoryError:
        raise InvalidInput(f"{path} is a folder, not a file") from None
    except PermissionError:
        raise Unreadable(f"{path} is not readable (permission denied)") from None
    except OSError as e:
        raise BoxMemoryError(f"cannot read {path}: {e.strerror or e}") from None


# --- types -----------------------------------------------------------------------------------

_EXT_MIME = {
    "pdf": "application/pdf",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "svg": "image/svg+xml",
    "tif": "image/tiff",
    "tiff": "image/tiff",
    "bmp": "image/bmp",
    "heic": "image/heic",
    "doc": "application/msword",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xls": "application/vnd.ms-excel",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "ppt": "application/vnd.ms-powerpoint",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "rtf": "application/rtf",
    "csv": "text/csv",
    "txt": "text/plain",
    "json": "application/json",
    "zip": "application/zip",
    "tar": "application/x-tar",
    "gz": "application/gzip",
    "tgz": "application/gzip",
    "bz2": "application/x-bzip2",
    "xz": "application/x-xz",
    "zst": "application/zstd",
    "7z": "application/x-7z-compressed",
    "rar": "application/vnd.rar",
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "flac": "audio/flac",
    "ogg": "audio/ogg",
    "m4a": "audio/mp4",
    "mp4": "video/mp4",
    "m4v": "video/mp4",
    "mov": "video/quicktime",
    "mkv": "video/x-matroska",
    "webm": "video/webm",
    "avi": "video/x-msvideo",
    "dwg": "image/vnd.dwg",
    "dxf": "image/vnd.dxf",
    "step": "model/step",
    "stp": "model/step",
    "iges": "model/iges",
    "igs": "model/iges",
    "stl": "model/stl",
    "3mf": "model/3mf",
    "obj": "model/obj",
}
_CAD_EXT = {
    "dwg", "dxf", "step", "stp", "iges", "igs", "stl", "3mf", "obj", "sldprt", "sldasm", "slddrw",
    "ipt", "iam", "idw", "f3d", "skp", "3dm", "ifc", "rvt", "rfa", "catpart", "catproduct", "x_t",
    "x_b", "fcstd", "scad", "dgn",
}  # fmt: skip
_OFFICE_EXT = {
    "doc", "docx", "docm", "dot", "dotx", "xls", "xlsx", "xlsm", "xlsb", "ppt", "pptx", "pptm",
    "odt", "ods", "odp", "odg", "rtf", "pages", "numbers", "key", "vsd", "vsdx", "one", "pub",
}  # fmt: skip
_ARCHIVE_EXT = {
    "zip", "tar", "gz", "tgz", "bz2", "tbz2", "xz", "txz", "zst", "7z", "rar", "lz", "lzma", "cab",
    "iso", "dmg", "jar",
}  # fmt: skip
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"%PDF-", "application/pdf"),
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF8", "image/gif"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (8, b"WEBP", "image/webp"),
    (8, b"WAVE", "audio/wav"),
    (8, b"AVI ", "video/x-msvideo"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"OggS", "audio/ogg"),
    (4, b"ftyp", "video/mp4"),
    (0, b"\x1aE\xdf\xa3", "video/x-matroska"),
    (0, b"PK\x03\x04", "application/zip"),
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (0, b"Rar!\x1a\x07", "application/vnd.rar"),
    (0, b"BZh", "application/x-bzip2"),
    (0, b"\xfd7zXZ\x00", "application/x-xz"),
    (0, b"\x28\xb5\x2f\xfd", "application/zstd"),
    (257, b"ustar", "application/x-tar"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
    (0, b"AC10", "image/vnd.dwg"),
    (0, b"ISO-10303-21", "model/step"),
)
_ARCHIVE_MIMES = {m for e, m in _EXT_MIME.items() if e in _ARCHIVE_EXT}


def _ext(name: str) -> str:
    return name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else ""


def sniff_mime(name: str, head: bytes) -> str:
    """Extension first (it tells docx from zip), then the system table, then magic bytes."""
    ext = _ext(name)
    if ext in _EXT_MIME:
        return _EXT_MIME[ext]
    if ext:
        import mimetypes

        guessed = mimetypes.guess_type(f"x.{ext}", strict=False)[0]
        if guessed:
            return guessed
    for offset, magic, mime in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return mime
    return "application/octet-stream"


def type_tag(name: str, mime: str) -> str:
    """One of TYPE_TAGS: the coarse kind of binary, always among a companion's tags."""
    ext = _ext(name)
    if ext in _CAD_EXT or mime.startswith("model/") or mime in ("image/vnd.dwg", "image/vnd.dxf"):
        return "cad"
    if ext == "pdf" or mime == "application/pdf":
        return "pdf"
    if (
        ext in _OFFICE_EXT
        or mime.startswith(
            (
                "application/vnd.openxmlformats-officedocument.",
                "application/vnd.ms-",
                "application/vnd.oasis.opendocument.",
            )
        )
        or mime in ("application/msword", "application/rtf", "application/x-ole-storage")
    ):
        return "office"
    if ext in _ARCHIVE_EXT or mime in _ARCHIVE_MIMES:
        return "archive"
    for prefix in ("image", "audio", "video"):
        if mime.startswith(prefix + "/"):
            return prefix
    return "other"


# --- where binaries and companions are ---------------------------------------------------------


@dataclass(frozen=True)
class Binary:
    path: str  # workspace-relative POSIX path
    team: str | None  # the scope: None is the default scope

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


def _scope_of(path: str) -> str | None:
    parts = path.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "teams" else None


NAME_MAX_BYTES = 255  # one file or folder name (Linux, macOS and Windows alike)


def _shown(text: str, most: int = 120) -> str:
    """A path as an error message shows it: a hostile 5,000-character one is cut, not echoed."""
    return text if len(text) <= most else text[:most] + "..."


def _check_binary_name(path: str) -> None:
    name = path.rsplit("/", 1)[-1]
    if not path:
        raise InvalidInput("that is the workspace root, not a binary")
    # Before any file system call, which would fail with ENAMETOOLONG.
    if len(path) > MAX_PATH:
        raise InvalidInput(
            f"{_shown(path)} is {len(path)} characters long; workspace paths stay within {MAX_PATH}"
        )
    if any(len(part.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES for part in path.split("/")):
        raise InvalidInput(
            f"{_shown(path)} has a name longer than {NAME_MAX_BYTES} bytes, more than file systems hold"
        )
    if name.lower().endswith(".md"):
        raise InvalidInput(f"{path} is a markdown memory: companions describe binaries, never .md files")
    if path.split("/", 1)[0] == "_archive":
        raise InvalidInput(f"{path} is in _archive/: archived files get no companion")
    if name in _BOOKKEEPING or name.startswith((TMP_PREFIX, LOCK_NAME)):
        raise InvalidInput(f"{path} is workspace bookkeeping, not a binary")
    check_name(name, "binary")  # a file Box Drive skips never reaches Box: nothing to describe


def resolve_binary(ws: Workspace, file: str, *, team: str | None = None, cwd: Path | None = None) -> Binary:
    """The workspace-relative path of FILE, refusing anything outside the workspace.

    Local: an absolute path, or a path relative to the current directory (when that is inside
    the workspace or the file exists there), else relative to the workspace root; symlinks are
    resolved and the real path must stay inside. Cloud: a workspace-relative path.
    """
    if not file.strip():
        raise InvalidInput("no file given: pass the binary's path")
    if any(ord(c) < 32 or ord(c) == 127 for c in file):
        raise InvalidInput("file path contains control characters")
    root = _local_root(ws)
    if root is None:
        rel = clean_path(file)
    else:
        real_root = root.resolve()
        given = Path(file).expanduser()
        here = (cwd or Path.cwd()).resolve()
        if given.is_absolute():
            cand = given
        elif here == real_root or real_root in here.parents or os.path.lexists(here / given):
            cand = here / given
        else:
            cand = real_root / given
        real = Path(os.path.realpath(cand))
        if not os.path.lexists(real) and (real == real_root or real_root in real.parents):
            # An NFC name typed by the user, an NFD name on disk (macOS): the same file.
            real = Path(os.path.realpath(resolve_nfc(real_root, real.relative_to(real_root).as_posix())))
        if real != real_root and real_root not in real.parents:
            import shlex

            files = real_root / ws.files_folder(team)
            if len(file) > MAX_PATH:
                raise InvalidInput(
                    f"{_shown(file)} ({len(file)} characters) is outside the workspace ({real_root})"
                )
            raise InvalidInput(
                f"{file} is outside the workspace ({real_root}); copy it in first, e.g. "
                f"`cp {shlex.quote(str(real))} {shlex.quote(str(files))}/`, then run companion on the copy"
            )
        rel = nfc(real.relative_to(real_root).as_posix())  # indexes and companions record NFC
    _check_binary_name(rel)
    scope = _scope_of(rel)
    if scope is not None:
        if team is not None and team != scope:
            raise InvalidInput(f"{rel} belongs to team {scope!r}, not --team {team!r}")
        ws.require_team(scope)
        return Binary(rel, scope)
    if team is not None and rel.split("/", 1)[0] == "files":
        raise InvalidInput(f"{rel} is in the default scope's files/; --team {team!r} does not apply")
    return Binary(rel, ws.require_team(team))


def stat_binary(ws: Workspace, path: str) -> Entry | None:
    """The binary's store entry, or None when it is gone (or no longer resolves inside)."""
    root = _local_root(ws)
    if root is not None:
        try:
            _contained(root, path)
        except InvalidInput:
            return None
    try:
        entry = ws.store.stat(path)
    except (NotFound, InvalidInput):
        return None
    return entry if entry is not None and not entry.is_dir else None


def _refuse_folder(ws: Workspace, path: str) -> None:
    """A folder is bad input for a companion command (exit 2), not a missing file."""
    try:
        ent = ws.store.stat(path)
    except (NotFound, InvalidInput):
        return
    if ent is not None and ent.is_dir:
        raise InvalidInput(f"{path} is a folder: a companion describes one file")


def companion_location(ws: Workspace, binary: Binary) -> tuple[str, str]:
    """(folder, filename) where the binary's companion belongs (module docstring)."""
    files = ws.files_folder(binary.team)
    direct = binary.path.rsplit("/", 1)[0] == files if "/" in binary.path else False
    folder = (
        files if direct and ws.config.companion_layout == "sibling" else ws.companions_folder(binary.team)
    )
    return folder, f"{binary.name}.md"


def archive_path(binary_name: str, mem_id: str) -> str:
    return join(ARCHIVE_FOLDER, fit_name(binary_name, f".{mem_id}.md", ARCHIVE_FOLDER))


# --- reading companions ----------------------------------------------------------------------


@dataclass
class Companion:
    """A companion found through an index: its entry, frontmatter and the binary it describes."""

    entry: dict[str, Any]
    folder: str
    meta: dict[str, Any]
    body: str
    binary: str | None  # workspace-relative path, None when it cannot be located

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def path(self) -> str:
        return IndexEntry(self.folder, self.entry).path

    @property
    def cf(self) -> dict[str, Any]:
        cf: dict[str, Any] = self.meta["companion_for"]
        return cf

    @property
    def hash_algo(self) -> str:
        algo = str(self.cf.get("hash_algo") or "").lower()
        if algo in ("sha256", "sha1"):
            return algo
        return "sha1" if self.cf.get("sha1") and not self.cf.get("sha256") else "sha256"

    @property
    def pinned(self) -> str | None:
        v = self.cf.get(self.hash_algo)
        return str(v).lower() if v else None


def binary_of(ws: Workspace, folder: str, cf: dict[str, Any]) -> str | None:
    """Which binary a `companion_for` block describes (local_path, else filename; see above)."""
    lp = cf.get("local_path")
    if isinstance(lp, str) and lp.strip():
        try:
            return clean_path(lp) or None
        except InvalidInput:
            return None
    fn = cf.get("filename")
    if not isinstance(fn, str) or not fn.strip() or "/" in fn or "\\" in fn or fn in (".", ".."):
        return None
    team = _scope_of(folder + "/")
    files = ws.files_folder(team)
    direct = join(folder if folder == files else files, fn)
    fid = cf.get("file_id")
    if fid and stat_binary(ws, direct) is None:
        # A plugin companion that knows only the Box file: Box Drive keeps the file under its
        # relative path in Box, so look for it (by id when the store lists ids, else by name)
        # anywhere under files/ before calling the companion orphaned.
        return _find_binary(ws, files, fn, str(fid)) or direct
    return direct


def _find_binary(ws: Workspace, files: str, name: str, file_id: str, depth: int = 8) -> str | None:
    """The one file under `files` with this Box id, or else with this name; None when not unique."""
    by_name: list[str] = []
    queue = [(files, 0)]
    while queue:
        folder, d = queue.pop(0)
        try:
            listing = ws.store.list_dir(folder)
        except BoxMemoryError:
            continue
        for e in sorted(listing, key=lambda x: x.name):
            path = join(folder, e.name)
            if e.is_dir:
                if d + 1 < depth and not e.name.startswith(("_", ".")):
                    queue.append((path, d + 1))
            elif e.file_id and str(e.file_id) == file_id:
                return path
            elif e.name == name:
                by_name.append(path)
    return by_name[0] if len(by_name) == 1 else None


def find_companions(
    ws: Workspace, indexes: list[FolderIndex] | None = None, *, live_only: bool = True
) -> tuple[list[Companion], list[str]]:
    """Every companion the indexes know (`kind: companion` + a `companion_for` mapping).

    Returns (companions, problems): a companion file that cannot be read is reported, not fatal.
    """
    found: list[Companion] = []
    problems: list[str] = []
    seen: set[str] = set()
    for idx in indexes if indexes is not None else load_all(ws):
        for e in idx.entries:
            if e.get("kind") != "companion" or (live_only and e.get("status") not in LIVE):
                continue
            path = IndexEntry(idx.folder, e).path
            try:
                mem = read_memory(ws, path)
            except (NotFound, InvalidFile, Unreadable) as err:
                problems.append(f"companion {e.get('id')} ({path}) cannot be read: {err}")
                continue
            cf = mem.meta.get("companion_for")
            if mem.kind != "companion" or not isinstance(cf, dict) or mem.id in seen:
                continue
            if live_only and mem.status not in LIVE:
                continue
            seen.add(mem.id)
            found.append(Companion(e, idx.folder, mem.meta, mem.body, binary_of(ws, idx.folder, cf)))
    return found, problems


def _matches(c: Companion, binary: str, entry: Entry | None) -> bool:
    if c.binary == binary:
        return True
    fid = c.cf.get("file_id")
    return bool(entry is not None and entry.file_id and fid and str(fid) == str(entry.file_id))


def companions_for(ws: Workspace, binary: str, indexes: list[FolderIndex] | None = None) -> list[Companion]:
    """Live companions describing `binary`, newest first."""
    entry = stat_binary(ws, binary)
    comps, _ = find_companions(ws, indexes)
    hits = [c for c in comps if _matches(c, binary, entry)]
    return sorted(hits, key=lambda c: str(c.meta.get("updated_at") or ""), reverse=True)


def _report(c: Companion) -> dict[str, Any]:
    return {
        "id": c.id,
        "path": c.path,
        "binary": c.binary,
        "team": c.meta.get("team"),
        "status": c.meta.get("status"),
        "hash_algo": c.hash_algo,
        "pinned": c.pinned,
        "current": None,
    }


class HashCache:
    """Binary hashes remembered by (workspace, path, stat signature), in the user's cache dir.

    A read (recall, get, status) re-hashes a binary only when its size or mtime (local), or its
    Box etag/sha1 (cloud listing), differ from what was recorded when it was last hashed; an
    unchanged binary costs one stat. Derived data: a cache that cannot be used is just skipped.
    """

    def __init__(self, ws: Workspace) -> None:
        self.root = ws.describe()
        self.db: Any = None
        self.tried = False

    def _open(self) -> Any:
        if not self.tried:
            self.tried = True
            import sqlite3

            from box_memory.paths import user_dirs

            try:
                folder = user_dirs().recall_cache_dir
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                db = sqlite3.connect(str(folder / "binary-hashes.sqlite3"), timeout=5, isolation_level=None)
                db.execute(
                    "CREATE TABLE IF NOT EXISTS hashes(root TEXT, path TEXT, sig TEXT, sha256 TEXT, "
                    "sha1 TEXT, size INTEGER, PRIMARY KEY(root, path)) WITHOUT ROWID"
                )
                self.db = db
            except (OSError, sqlite3.Error):
                self.db = None
        return self.db

    def digest(self, ws: Workspace, path: str, entry: Entry) -> Digest:
        import sqlite3

        sig = f"{entry.size}:{entry.modified!r}:{entry.etag}:{entry.sha1}:{entry.file_id}"
        db = self._open()
        if db is not None:
            try:
                row = db.execute(
                    "SELECT sha256, sha1, size FROM hashes WHERE root = ? AND path = ? AND sig = ?",
                    (self.root, path, sig),
                ).fetchone()
            except sqlite3.Error:
                row = None
            if row is not None:
                return Digest(row[0], row[1], row[2], b"")
        d = hash_binary(ws, path)
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.execute(
                    "INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?, ?, ?)",
                    (self.root, path, sig, d.sha256, d.sha1, d.size),
                )
        return d

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def state_of(
    ws: Workspace, c: Companion, digest: Digest | None = None, hashes: HashCache | None = None
) -> dict[str, Any]:
    """current | stale | orphaned for one companion, with the pinned and current hashes.

    Stale compares the pinned algorithm's hash; a pinned Box sha1 is checked against the
    store's sha1 without reading the bytes when the store reports one (cloud). With `hashes`
    the check is cheap: a size different from the pinned `size_bytes` is stale without a read,
    and an unchanged binary (same size and mtime, or etag/sha1 on Box) is not hashed again.
    """
    out = _report(c)
    entry = stat_binary(ws, c.binary) if c.binary else None
    if entry is None or c.binary is None:
        return {**out, "state": "orphaned"}
    pinned_size = c.cf.get("size_bytes")
    if c.hash_algo == "sha1" and entry.sha1:
        current = entry.sha1.lower()
    elif hashes is not None and entry.sha1 and c.cf.get("sha1"):
        # Box reports the sha1 in the listing: compare that instead of downloading the bytes.
        out["state"] = "current" if entry.sha1.lower() == str(c.cf["sha1"]).lower() else "stale"
        return out
    elif (
        hashes is not None and isinstance(pinned_size, int) and not entry.is_dir and pinned_size != entry.size
    ):
        return {**out, "state": "stale"}
    else:
        try:
            if digest is None:
                digest = (
                    hashes.digest(ws, c.binary, entry) if hashes is not None else hash_binary(ws, c.binary)
                )
        except NotFound:  # deleted between the stat and the read
            return {**out, "state": "orphaned"}
        except ReadFailed:  # held open, or Box Drive has not delivered it: not known, not stale
            raise
        except UnreadableFile as e:  # replaced by a FIFO, device or symlink: changed, not hashed
            return {**out, "state": "stale", "error": str(e)}
        current = getattr(digest, c.hash_algo)
    out["current"] = current
    out["state"] = "current" if c.pinned and current == c.pinned else "stale"
    return out


def companion_states(ws: Workspace, paths: list[str]) -> dict[str, str]:
    """current | stale | orphaned for each companion memory file in `paths` (a recall's or a
    get's hits), through the hash cache; a file that is not a companion is left out."""
    out: dict[str, str] = {}
    hashes = HashCache(ws)
    try:
        for path in paths:
            try:
                mem = read_memory(ws, path)
            except BoxMemoryError:
                continue
            cf = mem.meta.get("companion_for")
            if mem.kind != "companion" or not isinstance(cf, dict):
                continue
            folder = path.rsplit("/", 1)[0] if "/" in path else ""
            c = Companion({"local_path": path}, folder, mem.meta, mem.body, binary_of(ws, folder, cf))
            try:
                out[path] = state_of(ws, c, hashes=hashes)["state"]
            except BoxMemoryError:
                continue
    finally:
        hashes.close()
    return out


def stale_warning(title_or_path: str, state: str) -> str:
    if state == "orphaned":
        return f"companion {title_or_path} is orphaned: its binary is gone"
    return f"companion {title_or_path} is stale: its binary changed since it was reviewed - regenerate it"


def stale_companions(ws: Workspace) -> list[dict[str, Any]]:
    """Every live companion whose binary changed ("stale") or is gone ("orphaned").

    Read-only (no lock, safe next to a rebuild). Each dict: id, path (the companion), binary,
    state, hash_algo, pinned, current (None when orphaned), team, status.
    """
    return stale_report(ws)[0]


def stale_report(
    ws: Workspace, *, cached: bool = False, indexes: list[FolderIndex] | None = None
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """(stale or orphaned companions, how many live companions were checked, unreadable ones).

    `cached` checks through the hash cache (status): a binary is hashed only when it changed.
    `indexes`: the folder indexes to look in (status passes the ones that parse), else all.
    """
    comps, problems = find_companions(ws, indexes)
    rows: list[dict[str, Any]] = []
    hashes = HashCache(ws) if cached else None
    try:
        for c in comps:
            try:
                st = state_of(ws, c, hashes=hashes)
            except (Unreadable, ReadFailed) as e:  # neither stale nor orphaned: not readable now
                problems.append(f"companion {c.id} ({c.path}): {e}")
                continue
            if st["state"] != "current":
                rows.append(st)
    finally:
        if hashes is not None:
            hashes.close()
    return rows, len(comps), problems


INTEGRITY_EXIT = 6  # a finding (stale, orphaned, missing), not a failure (docs/spec/cli.md exit codes)


def stale_list(ws: Workspace, team: str | None = None) -> Result:
    """The `companion --stale` service: every stale or orphaned companion (exit 6 if any)."""
    rows, checked, problems = stale_report(ws)
    if team is not None:
        ws.require_team(team)
        rows = [r for r in rows if str(r["path"]).startswith(f"teams/{team}/")]
    data = {"checked": checked, "stale": rows, "count": len(rows)}
    return Result(data, warnings=problems, exit_code=INTEGRITY_EXIT if rows else 0)


@dataclass
class CheckRequest:
    """The MCP `companion_check` tool's parameters."""

    file: Annotated[
        str,
        Param(
            "The binary: a path inside the workspace (e.g. files/report.pdf) or an absolute path.",
            min_length=1,
        ),
    ]
    team: Annotated[str | None, Param("The team whose files/ holds the binary.")] = None


def check_companion(ws: Workspace, file: str, *, team: str | None = None, cwd: Path | None = None) -> Result:
    """The `companion --check` service: current | stale | orphaned | missing for FILE (the
    newest live companion decides); exit 6 unless current."""
    data = _check(ws, file, team=team, cwd=cwd)
    warnings = []
    if data.get("others"):
        warnings.append(
            f"{data['binary']} has other live companions: " + ", ".join(o["path"] for o in data["others"])
        )
    return Result(data, warnings=warnings, exit_code=0 if data["state"] == "current" else INTEGRITY_EXIT)


def _check(ws: Workspace, file: str, *, team: str | None, cwd: Path | None) -> dict[str, Any]:
    binary = resolve_binary(ws, file, team=team, cwd=cwd)
    comps = companions_for(ws, binary.path)
    exists = stat_binary(ws, binary.path) is not None
    folder, filename = companion_location(ws, binary)
    if not comps:
        if not exists:
            _refuse_folder(ws, binary.path)
            raise NotFound(f"{binary.path} does not exist and has no companion")
        return {
            "state": "missing",
            "binary": binary.path,
            "companion": None,
            "expected_path": join(folder, filename),
            "others": [],
        }
    st = state_of(ws, comps[0])
    return {
        **st,
        "companion": {"id": comps[0].id, "path": comps[0].path},
        "others": [{"id": c.id, "path": c.path} for c in comps[1:]],
    }


# --- writing ---------------------------------------------------------------------------------


@dataclass
class CompanionRequest:
    file: str
    body: str | bytes | None = None
    tags: list[str] = field(default_factory=list)
    team: str | None = None
    force: bool = False
    agent: str | None = None
    cwd: Path | None = None
    extract: bool = False  # fill the fields with Box AI structured extraction (Box workspace with Box AI)


# What `companion --extract` asks Box AI for (the companion template's fields).
EXTRACT_FIELDS: list[dict[str, Any]] = [
    {
        "key": "summary",
        "type": "string",
        "displayName": "Summary",
        "description": "What the file is, briefly",
    },
    {"key": "parties", "type": "string", "displayName": "Parties", "description": "People or organisations"},
    {"key": "dates", "type": "string", "displayName": "Dates", "description": "Dates that matter"},
    {"key": "amounts", "type": "string", "displayName": "Amounts", "description": "Money amounts"},
]
_EXTRACT_TOOLS = ("ai_extract_structured_from_fields", "ai_extract_structured_from_fields_enhanced")


EXTRACT_SETTING = "ai_extract_enabled"


def extract_by_setting(ws: Workspace, req: CompanionRequest) -> bool:
    """`ai_extract_enabled: true` in the workspace settings, no --body and no --extract given,
    on a Box workspace whose tier has Box AI extraction: the write fills its fields through Box
    AI without being asked. Off by default; elsewhere the setting changes nothing."""
    if req.extract or req.body is not None or ws.config.settings.get(EXTRACT_SETTING) is not True:
        return False
    store = as_box_tools(ws.store)
    caps = ws.config.data.get("capabilities") or {}
    if store is None or (isinstance(caps, dict) and caps.get("box_ai_tools_available") is False):
        return False
    return any(store.has_tool(t) for t in _EXTRACT_TOOLS)


def ai_extract(ws: Workspace, file_id: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """(Box AI's structured extraction of the binary, None) or (None, why it was not done).

    Box AI reads the binary itself in Box (structured extraction from fields: DOC1/CHG in
    CONNECTORS.md); the answer is data, kept verbatim, never instructions.
    """
    from box_memory.errors import ToolMissing

    store = as_box_tools(ws.store)
    caps = ws.config.data.get("capabilities") or {}
    if store is None or not file_id:
        return None, "Box AI extraction needs a Box workspace (Box AI reads the file in Box)"
    tool = next((t for t in _EXTRACT_TOOLS if store.has_tool(t)), None)
    if tool is None or (isinstance(caps, dict) and caps.get("box_ai_tools_available") is False):
        return (
            None,
            "Box AI is not available for this workspace (its tier, or the server offers no extraction)",
        )
    try:
        payload = store.call(tool, {"file_ids": [str(file_id)], "fields": EXTRACT_FIELDS})
    except ToolMissing:
        return None, "Box AI is not available for this workspace (the server no longer offers extraction)"
    except BoxMemoryError as e:
        return None, f"Box AI extraction failed ({e})"
    answer = payload.get("answer") if isinstance(payload, dict) else None
    if isinstance(answer, str):
        with contextlib.suppress(ValueError):
            answer = json.loads(answer)
    if not isinstance(answer, dict):
        return None, f"Box AI answered {tool} in a shape box-memory cannot read"
    return {"tool": tool, "answer": answer}, None


def _extracted_section(extracted: dict[str, Any]) -> str:
    raw = json.dumps(extracted["answer"], ensure_ascii=False, indent=2)
    return (
        "## Box AI extraction\n\n"
        f"> Generated by Box AI ({extracted['tool']}) from the file itself; the model's answer, verbatim. "
        "Check it before relying on it.\n\n"
        f"```json\n{raw}\n```\n"
    )


def _human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover


def hash_chain(cf: dict[str, Any], previous: Companion | None) -> str:
    """The `## Hash chain` section: this pin, and the one it replaces."""
    lines = [
        "## Hash chain",
        "",
        f"File reviewed at `sha256:{cf['sha256']}` on `{cf['reviewed_at']}` "
        f"({cf['size_bytes']} bytes; sha1 `{cf['sha1']}`). If the binary's current sha256 differs, "
        "this companion is stale and must be regenerated.",
    ]
    if previous is not None:
        lines += [
            "",
            f"- Supersedes {previous.id}: `{previous.hash_algo}:{previous.pinned}` reviewed at "
            f"`{previous.cf.get('reviewed_at') or previous.meta.get('updated_at')}` "
            f"(archived as `{archive_path(_binary_name(previous), previous.id)}`).",
        ]
    return "\n".join(lines) + "\n"


def skeleton(title: str, cf: dict[str, Any], tags: list[str], previous: Companion | None) -> str:
    """A body for an agent to fill in: the plugin's sections, the hash chain, what was not checked."""
    return "\n".join(
        [
            f"# {title}",
            "",
            f"> Describes `{cf['local_path']}` ({cf['mime_type']}, {_human_size(cf['size_bytes'])}). "
            "Not reviewed yet: fill in the sections below from the file itself.",
            "",
            "## What's in this file",
            "",
            "_To fill in: what the file is, who made it, when and why._",
            "",
            "## Key facts",
            "",
            "- _To fill in._",
            "",
            "## Structure",
            "",
            "- _To fill in: pages, sheets, sections, layers or tracks._",
            "",
            "## Classification / handling notes",
            "",
            "_To fill in: sensitivity, retention, who may see it._",
            "",
            "## Related",
            "",
            hash_chain(cf, previous),
            "## What the agent did NOT verify",
            "",
            "- [ ] Did not open or read the file: this companion was generated from its bytes' hash, "
            "size and type only.",
            "- [ ] Did not check who made the file, or whether it is the authoritative version.",
            "- [ ] Did not check the file for sensitive data (personal data, secrets).",
            "- [ ] Did not compare it with earlier versions of the file.",
            "",
            "---",
            "",
            " ".join(f"#{t}" for t in tags),
            "",
        ]
    )


def _binary_name(c: Companion) -> str:
    fn = c.cf.get("filename")
    if isinstance(fn, str) and fn.strip() and "/" not in fn and "\\" not in fn:
        return fn
    return (c.binary or "binary").rsplit("/", 1)[-1]


def _user_body(title: str, content: str | bytes, cf: dict[str, Any], previous: Companion | None) -> str:
    from box_memory.write.commit import check_content, render_body

    body = render_body(title, check_content(content))
    if "## Hash chain" not in body:
        body = body.rstrip("\n") + "\n\n" + hash_chain(cf, previous)
    return body


def write_companion(ws: Workspace, req: CompanionRequest) -> Result:
    """Write (or refresh) FILE's companion; an up-to-date one is returned untouched unless `force`.

    Everything is validated and the binary hashed before the lock is taken (hashing a large file
    must not hold other writers back); under the lock the existing companion is found again, and
    the new one is committed through the shared memory write step.
    """
    from box_memory.write.commit import (
        Located,
        Supersede,
        check_supersedable,
        commit_memory,
        copies_warning,
        load_for_write,
        unmerged_copies,
    )

    binary = resolve_binary(ws, req.file, team=req.team, cwd=req.cwd)
    before = stat_binary(ws, binary.path)
    if before is None:
        _refuse_folder(ws, binary.path)
        raise NotFound(f"{binary.path} does not exist: a companion needs the binary it describes")
    extra_tags = [normalize_tag(t) for t in req.tags]
    title = f"Companion — {binary.name}"
    try:
        validate_title(title)
    except InvalidInput as e:
        raise InvalidInput(f"binary name {binary.name!r} cannot name a companion: {e}") from None
    if req.body is not None:
        from box_memory.write.commit import check_content

        check_content(req.body)
    try:
        digest = hash_binary(ws, binary.path)
    except ReadFailed:
        raise
    except UnreadableFile as e:
        raise InvalidInput(str(e)) from None
    after = stat_binary(ws, binary.path)
    if after is None or (after.size, after.modified) != (before.size, before.modified):
        raise BoxMemoryError(f"{binary.path} changed while it was being hashed; run the command again")
    extracted, not_extracted = ai_extract(ws, after.file_id) if req.extract else (None, None)
    by_setting = extract_by_setting(ws, req)  # extracted below, once the write is not a no-op
    mime = sniff_mime(binary.name, digest.head)
    kind_tag = type_tag(binary.name, mime)
    tags = list(dict.fromkeys(["companion", kind_tag, *extra_tags]))
    folder, filename = companion_location(ws, binary)
    path = check_path(join(folder, filename), "companion")
    info = {
        "binary": binary.path,
        "team": ws.team_of(binary.team),
        "layout": ws.config.companion_layout,
        "sha256": digest.sha256,
        "sha1": digest.sha1,
        "size_bytes": digest.size,
        "mime_type": mime,
        "type": kind_tag,
    }

    with ws.store.lock(writer=req.agent or "box-memory", skill="companion"):
        warnings: list[str] = [f"{not_extracted}; wrote the skeleton"] if not_extracted else []
        idx = load_for_write(ws, folder, warnings)
        if copies := unmerged_copies(idx, ws.store.list_names(folder)):  # another machine's copies
            warnings.append(copies_warning(folder, copies))
        indexes = [idx if i.folder == folder else i for i in load_all(ws)]
        if all(i.folder != folder for i in indexes):
            indexes.append(idx)
        existing = companions_for(ws, binary.path, indexes)
        old: Companion | None = existing[0] if existing else None
        if len(existing) > 1:
            warnings.append(
                f"{binary.path} has {len(existing)} live companions; the newest ({existing[0].id}) is used: "
                + ", ".join(c.path for c in existing[1:])
            )
        if old is not None:
            st = state_of(ws, old, digest)
            if st["state"] == "current" and not req.force:
                unchanged = {
                    **info,
                    "action": "unchanged",
                    "state": "current",
                    "id": old.id,
                    "title": old.meta.get("title"),
                    "path": old.path,
                    "folder": old.folder + "/",
                    "supersedes": None,
                    "archived": None,
                }
                return Result(unchanged, warnings=warnings)
            state_before = st["state"]
            old_mem = check_supersedable(read_memory(ws, old.path))
        else:
            state_before = "missing"
        if ws.store.exists(path) and (old is None or old.path != path):
            raise BoxMemoryError(
                f"{path} already exists and is not the indexed companion of {binary.path}; "
                "run `box-memory index-rebuild` or move it aside",
                code="already_exists",
            )

        if by_setting:
            extracted, failed = ai_extract(ws, after.file_id)
            if extracted is None:
                warnings.append(f"{failed} ({EXTRACT_SETTING} is on); wrote the skeleton")

        base = f"{slugify(binary.name)}-companion"
        taken = {str(e.get("slug")) for e in idx.entries if old is None or e.get("id") != old.id}
        slug = next_free_slug(base, taken)
        now = now_iso()
        cf: dict[str, Any] = {
            "file_id": after.file_id,
            "filename": binary.name,
            "local_path": binary.path,
            "sha256": digest.sha256,
            "hash_algo": "sha256",
            "sha1": digest.sha1,
            "size_bytes": digest.size,
            "mime_type": mime,
            "reviewed_at": now,
            "reviewed_by": req.agent or "box-memory",
        }
        meta: dict[str, Any] = {
            "id": new_id(),
            "slug": slug,
            "title": title,
            "kind": "companion",
            "status": "active",
            "team": ws.team_of(binary.team),
            "created_at": now,
            "updated_at": now,
        }
        if req.agent:
            meta["agent"] = req.agent
        if extracted is not None:
            cf["ai_extracted"] = True
            cf["extracted"] = {
                str(k): v for k, v in extracted["answer"].items() if v not in (None, "", [], {})
            }
        meta["companion_for"] = cf
        meta["tags"] = tags
        supersede = None
        if old is not None:
            meta["supersedes"] = [old.id]
            supersede = Supersede(
                Located(old.entry, old.folder),
                old_mem,
                archive_to=archive_path(_binary_name(old), old.id),
            )
            if not ws.store.exists(ARCHIVE_FOLDER):
                ws.store.mkdir(ARCHIVE_FOLDER)
        body = skeleton(title, cf, tags, old) if req.body is None else _user_body(title, req.body, cf, old)
        if extracted is not None:
            head, sep, rest = body.partition("\n## ")
            body = (
                f"{head}\n{_extracted_section(extracted)}{sep}{rest}"
                if sep
                else body + _extracted_section(extracted)
            )
        if not ws.store.exists(folder):
            ws.store.mkdir(folder)
        done = commit_memory(ws, idx, meta, body, filename, old=supersede)

    written = {
        **info,
        "action": "superseded" if old is not None else "created",
        "state_before": state_before,
        "state": "current",
        "id": meta["id"],
        "title": title,
        "slug": slug,
        "path": done.path,
        "folder": folder + "/",
        "file_id": done.file_id,
        "supersedes": old.id if old is not None else None,
        "archived": supersede.archive_to if supersede is not None else None,
        "ai_extracted": extracted is not None,
        "extracted": cf.get("extracted"),
        "extracted_by": ("setting" if by_setting else "option") if extracted is not None else None,
    }
    return Result(written, warnings=[*warnings, *done.warnings])
