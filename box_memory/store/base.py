"""The storage port: the few operations the workspace layer needs, over workspace-relative paths.

Two real implementations sit behind it: `LocalStore` (a Box Drive folder or any folder) and the
cloud store (Box through Box MCP). Paths are POSIX, relative to the workspace root, no `..`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from box_memory.errors import BoxMemoryError, InvalidInput
from box_memory.record import Frozen

if TYPE_CHECKING:
    import os

    from box_memory.format.model import WorkspaceConfig


class AlreadyExists(BoxMemoryError):
    """`create_bytes` found a file of that name (case-insensitively on Box)."""

    code = "already_exists"


class Entry(Frozen):
    """One name in a folder listing; `modified` in epoch seconds."""

    _fields = ("name", "is_dir", "size", "modified", "file_id", "etag", "sha1")
    __slots__ = _fields

    name: str
    is_dir: bool
    size: int
    modified: float
    file_id: str | None
    etag: str | None
    sha1: str | None

    def __init__(
        self,
        name: str,
        is_dir: bool,
        size: int = 0,
        modified: float = 0.0,
        file_id: str | None = None,
        etag: str | None = None,
        sha1: str | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "name", name)
        set_(self, "is_dir", is_dir)
        set_(self, "size", size)
        set_(self, "modified", modified)
        set_(self, "file_id", file_id)
        set_(self, "etag", etag)
        set_(self, "sha1", sha1)


class Store(Protocol):
    """Everything the layers above may ask of a store; nothing else is probed for.

    `kind` describes the backend ("local" | "cloud") for the config and `status`; callers never
    branch on it: what differs between backends is a method here (a no-op or None where a backend
    has nothing to do) or an optional capability below.
    """

    kind: str

    @property
    def local_root(self) -> Path | None:
        """The folder on this machine the workspace is (None on Box cloud)."""
        ...

    def describe(self) -> str: ...
    def read_bytes(self, path: str) -> bytes: ...
    def read_if_local(self, path: str) -> bytes | None:
        """The file's bytes when they are on this machine already, else None, never an error: a
        Box Drive file not downloaded (an online-only placeholder) and a Box file missing from the
        content cache give None rather than a download. For display only (recall's excerpts)."""
        ...

    def read_chunks(self, path: str, chunk_size: int = ...) -> Iterator[bytes | memoryview]:
        """The file's bytes in chunks (a memoryview may be reused: consume it before the next)."""
        ...

    def write_bytes(self, path: str, data: bytes) -> str | None: ...
    def upload_limit(self) -> int | None:
        """The largest file one write may carry (Box cloud: its direct upload's 50 MB), None where
        there is no such limit (a local folder; Box Drive uploads big files in parts itself)."""
        ...

    def create_bytes(self, path: str, data: bytes) -> str | None: ...
    def exists(self, path: str) -> bool: ...
    def stat(self, path: str) -> Entry | None: ...
    def signature(self, path: str) -> str | None:
        """What changes whenever `path` (a file, or a folder's entries) changes; None when it is
        missing, "denied" when it may not be read."""
        ...

    def list_dir(self, path: str) -> list[Entry]: ...
    def subfolders(self, path: str, match: Callable[[str], object]) -> list[str]:
        """Names `match` accepts of the folders directly in `path` ([] when it does not exist); on
        Box without listing the files of a big folder (Box lists folders first)."""
        ...

    def list_names(self, path: str) -> list[str]: ...
    def listing_incomplete(self, path: str) -> str | None:
        """Why the listing of folder `path` may be short, or None when it is complete.

        Callers that would infer "deleted" from absence (brain-sync, index-rebuild) check this.
        """
        ...

    def drop_listings(self, *, fresh: bool = False) -> None:
        """Forget listings cached for this command, so the next read sees other writers; `fresh`:
        list every folder anew for the rest of the command (no listing kept from before is reused)."""
        ...

    def prefetch(self, paths: Iterable[str]) -> int:
        """Fetch many files at once ahead of reading them one by one (returns how many)."""
        ...

    def folder_id(self, path: str) -> str | None:
        """The Box id of a workspace folder (None where items have no Box ids, or it is missing)."""
        ...

    def mkdir(self, path: str) -> str | None: ...
    def move(self, src: str, dst: str) -> None: ...
    def batch(self) -> AbstractContextManager[None]:
        """Many new files in a row: durability may be deferred to `checkpoint()`."""
        ...

    def checkpoint(self) -> None:
        """Make every file created so far in a `batch()` durable (before an index lists them)."""
        ...

    def lock(self, *, writer: str, skill: str) -> AbstractContextManager[object]: ...
    def lock_state(self) -> dict[str, Any] | None:
        """Who holds the workspace lock and since when (for `status`; None when nobody does or the
        backend does not report it)."""
        ...

    def complete_config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """The workspace config `cfg` (its JSON object) with what this store learned that belongs
        in it added, for the workspace layer to write: on Box the folder ids resolved this command
        and the lease file's name; a local store returns it as given."""
        ...

    def close(self) -> None:
        """Release what this store holds (the cloud store: its Box session when it opened it, and
        its listings saved for the next command); nothing on a local store. Idempotent."""
        ...

    def collected_warnings(self) -> list[str]:
        """What the store noticed without failing the call (the cloud store: Box metadata not
        applied, a tier re-detected), for the command to report; none on a local store."""
        ...


# --- optional capabilities: checked only through the `as_*` functions below -----------------


@runtime_checkable
class MetadataSearch(Protocol):
    """Structured filters answered by Box metadata search (Business+ tiers)."""

    def metadata_search(
        self, *, kind: str | None = None, status: str | None = None, team: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]] | None: ...


@runtime_checkable
class BoxTools(Protocol):
    """Box MCP tools called by name (Box AI Q&A and extraction)."""

    def has_tool(self, tool: str) -> bool: ...
    def call(self, tool: str, args: dict[str, Any]) -> Any: ...


@runtime_checkable
class TierDetection(Protocol):
    """A Box tier and its capabilities, detected again and written to the config."""

    def redetect_tier(self) -> dict[str, Any] | None: ...


@runtime_checkable
class UnlistedReads(Protocol):
    """Box: big folders read through their `_index.json` found by file id (never listed), memory
    files fetched by file id, memory text searched with Box search (store/cloud/pins.py)."""

    def pin_indexes(self, known: dict[str, str] | None) -> dict[str, str]: ...
    def fetch_bodies(self, wanted: dict[str, str | None]) -> dict[str, bytes]: ...
    def cached_text(self, file_id: str, sha1: str | None) -> bytes | None: ...
    def search_text(self, words: list[str], limit: int) -> list[dict[str, Any]] | None: ...


@runtime_checkable
class BatchReads(Protocol):
    """A local folder: many memory files read at once, the plain case only (`LocalStore.read_files`),
    and a folder listed with the stat of each entry (`LocalStore.list_dir_stats`)."""

    def read_files(self, paths: list[str]) -> dict[str, tuple[os.stat_result, bytes | None]]: ...
    def list_dir_stats(self, path: str) -> tuple[list[Entry], dict[str, os.stat_result]]: ...


@runtime_checkable
class KeptListings(Protocol):
    """A local folder: the listing it keeps of a folder for its case-folded name check, declared
    current again by a caller that knows nothing but itself changed the folder since (a watch:
    `serve.kept_folders`); `listing_mark` is taken before the caller looks for other changes."""

    def listing_mark(self, path: str) -> Any: ...
    def listing_still(self, mark: Any) -> None: ...


_MEMBERS: dict[type, tuple[str, ...]] = {}


def offers(store: object, capability: type) -> bool:
    """Whether `store` has every method of the capability protocol: what `isinstance` with a
    runtime-checkable protocol answers, without its ABC machinery (~0.05-0.1 ms for each protocol
    and store class in a process, paid by every command's start)."""
    names = _MEMBERS.get(capability)
    if names is None:
        names = tuple(n for n, v in vars(capability).items() if callable(v) and not n.startswith("_"))
        _MEMBERS[capability] = names
    return all(callable(getattr(store, n, None)) for n in names)


def as_batch_reads(store: Store) -> BatchReads | None:
    """The store as a reader of many local files at once (a local folder), else None."""
    return store if offers(store, BatchReads) else None  # type: ignore[return-value]


def as_unlisted_reads(store: Store) -> UnlistedReads | None:
    """The store as a reader of big folders by file id (Box cloud), else None."""
    return store if offers(store, UnlistedReads) else None  # type: ignore[return-value]


def as_metadata_search(store: Store) -> MetadataSearch | None:
    """The store as a metadata search, when it offers one (Box cloud), else None."""
    return store if offers(store, MetadataSearch) else None  # type: ignore[return-value]


def as_box_tools(store: Store) -> BoxTools | None:
    """The store as a caller of Box tools by name (Box cloud), else None."""
    return store if offers(store, BoxTools) else None  # type: ignore[return-value]


def as_tier_detection(store: Store) -> TierDetection | None:
    """The store as a Box tier detector (Box cloud), else None."""
    return store if offers(store, TierDetection) else None  # type: ignore[return-value]


# --- provisioning: the workspace layer's part, handed down to the store ---------------------


class _Workspace(Protocol):
    """The two things provisioning does with a workspace object."""

    def scopes(self) -> list[str | None]: ...
    def save_config(self) -> None: ...


W = TypeVar("W", bound=_Workspace)


class WorkspaceBuilders(Generic[W]):
    """What provisioning needs of the workspace layer, handed in by it: `open` makes the workspace
    over a store and its config, `lay_out` adds the folders, empty indexes and README that were
    missing, `set_default` makes a workspace spec the user's default."""

    def __init__(
        self,
        load_config: Callable[[Store], WorkspaceConfig],
        open: Callable[[Store, WorkspaceConfig], W],
        lay_out: Callable[[W], list[str]],
        refresh_rollup: Callable[[W], object],
        set_default: Callable[[str], None],
    ) -> None:
        self.load_config = load_config
        self.open = open
        self.lay_out = lay_out
        self.refresh_rollup = refresh_rollup
        self.set_default = set_default


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


_FOLDER_KEY = r"^team_(.+)_(root|memories|files|companions)$"


def logical_folder_paths(folder_ids: Any, teams: Any = None) -> dict[str, str]:
    """`folder_ids` of the config as {workspace-relative folder path: Box id}."""
    out: dict[str, str] = {}
    if not isinstance(folder_ids, dict):
        return out
    for key, value in folder_ids.items():
        if value is None or isinstance(value, bool) or not str(value).strip().isdigit():
            continue
        fid = str(value).strip()
        if key in ("memories", "files", "companions", "teams"):
            out[key] = fid
        elif m := re.compile(_FOLDER_KEY).match(str(key)):
            team, part = m.group(1), m.group(2)
            out[f"teams/{team}" if part == "root" else f"teams/{team}/{part}"] = fid
    return out


def as_kept_listings(store: Store) -> KeptListings | None:
    """The store as one whose kept folder listings a watching caller may carry over, else None."""
    return store if offers(store, KeptListings) else None  # type: ignore[return-value]
