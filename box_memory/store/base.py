"""The storage port: the few operations the workspace layer needs, over workspace-relative paths.

Two real implementations sit behind it: `LocalStore` (a Box Drive folder or any folder) and the
cloud store (Box through Box MCP). Paths are POSIX, relative to the workspace root, no `..`.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from box_memory.errors import BoxMemoryError, InvalidInput


class AlreadyExists(BoxMemoryError):
    """`create_bytes` found a file of that name (case-insensitively on Box)."""

    code = "already_exists"


@dataclass(frozen=True)
class Entry:
    name: str
    is_dir: bool
    size: int = 0
    modified: float = 0.0  # epoch seconds
    file_id: str | None = None
    etag: str | None = None
    sha1: str | None = None


class Store(Protocol):
    kind: str  # "local" | "cloud"

    def describe(self) -> str: ...
    def read_bytes(self, path: str) -> bytes: ...
    def write_bytes(self, path: str, data: bytes) -> str | None: ...
    def create_bytes(self, path: str, data: bytes) -> str | None: ...
    def exists(self, path: str) -> bool: ...
    def stat(self, path: str) -> Entry | None: ...
    def list_dir(self, path: str) -> list[Entry]: ...
    def list_names(self, path: str) -> list[str]: ...
    def mkdir(self, path: str) -> str | None: ...
    def move(self, src: str, dst: str) -> None: ...
    def lock(self, *, writer: str, skill: str) -> AbstractContextManager[object]: ...


def clean_path(path: str) -> str:
    """Normalise a workspace-relative path and refuse anything that could escape the root."""
    p = path.replace("\\", "/").strip("/")
    parts = [x for x in p.split("/") if x not in ("", ".")]
    if "\x00" in path:
        raise InvalidInput(f"path {path!r} contains a NUL character")
    if any(x == ".." for x in parts) or path.startswith(("/", "\\")):
        raise InvalidInput(f"path {path!r} escapes the workspace")
    return "/".join(parts)


def join(*parts: str) -> str:
    return clean_path("/".join(p.strip("/") for p in parts if p))


def listing_incomplete(store: object, path: str) -> str | None:
    """Why the store's listing of folder `path` may be short, or None when it is complete.

    Only the cloud store can list short (a page that failed, paging the server did not describe);
    callers that would infer "deleted" from absence (brain-sync, index-rebuild) must check this.
    """
    check = getattr(store, "listing_incomplete", None)
    return check(path) if callable(check) else None
