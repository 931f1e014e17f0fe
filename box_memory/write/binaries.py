"""Binaries: hashing them (the pin of a companion), their types, and where their companions live.

Binaries are never chunked, embedded or read whole: they are streamed once, in 1 MiB chunks,
through sha256 (the pin) and sha1 (what Box reports for a file, so a cloud workspace can check
staleness without a download). A companion is written through the same commit step as every
memory (`write.commit`); regenerating one supersedes the old companion, which moves to
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
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from box_memory.errors import BoxMemoryError, InvalidInput, NotFound, Unreadable
from box_memory.format.model import LOCK_NAME, TMP_PREFIX
from box_memory.format.names import MAX_PATH, check_name, fit_name, nfc, resolve_nfc
from box_memory.store.base import Entry, clean_path, join
from box_memory.workspace.resolve import CONFIG_NAME, INDEX_NAME, Workspace

CHUNK_SIZE = 1 << 20
HEAD_BYTES = 64
TYPE_TAGS = ("pdf", "image", "cad", "office", "audio", "video", "archive", "other")
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


def scope_of(path: str) -> str | None:
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
    scope = scope_of(rel)
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


def refuse_folder(ws: Workspace, path: str) -> None:
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
