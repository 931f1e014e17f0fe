"""The cloud store's state and its Box session: the process's one MCP session and the stores open
on it (`close_all` ends them), tool calls with Box's write refusals named, `has_tool`.

The cloud store is built in layers, each a class over the one before it: this state, then its
folders (folders.py), reading (reading.py), big folders read by file id (pins.py), Box metadata
(metadata.py), writing (writing.py) and the store itself with its lock (store.py). Each layer uses
its own and the lower layers' methods, and the Store port's operations (the base class is the
port, `store/base.py`).
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import orjson

from box_memory.errors import BoxToolError, WriteRefused
from box_memory.paths import user_dirs
from box_memory.store.base import Store, join
from box_memory.store.cloud.cache import ContentCache
from box_memory.store.cloud.listings import Kept, ListingSnapshot

__all__ = ["WRITE_TOOLS", "CloudState", "close_all", "open_session"]

WRITE_TOOLS = frozenset(
    {
        "upload_file",
        "upload_file_version",
        "create_folder",
        "move_file",
        "move_folder",
        "update_file_properties",
        "set_file_metadata",
    }
)
_SHARED_LINK_RE = re.compile(r"shared[ _-]?link", re.IGNORECASE)
_EXTERNAL_RE = re.compile(r"external[ _-]?collaborat", re.IGNORECASE)
_FILE_TYPE_RE = re.compile(r"(file[ _-]?type|extension|text files? only|text types?)", re.IGNORECASE)

_OPEN: list[CloudState] = []
_SHARED: list[Any] = []  # the process's one MCP session, shared by every store; closed by close_all


def close_all() -> list[str]:
    """End every cloud session this process opened; returns the warnings the stores collected.

    The CLI calls it once per command (`output.run`), so one MCP session serves one command.
    """
    warnings: list[str] = []
    while _OPEN:
        store = _OPEN.pop()
        warnings.extend(store.collected_warnings())
        store.warnings = []
        with contextlib.suppress(Exception):
            store.close()
    while _SHARED:
        with contextlib.suppress(Exception):
            _SHARED.pop().close()
    return warnings


def open_session() -> Any:
    """The process's MCP session (opened on first use): each session start is a billed call."""
    from box_memory.box.auth import TokenSource
    from box_memory.box.client import BoxMCPClient
    from box_memory.box.transport import default_url

    url = default_url()
    if _SHARED and _SHARED[-1].is_open and _SHARED[-1].url == url:
        return _SHARED[-1]
    client = BoxMCPClient(url, TokenSource())
    client.open()
    _SHARED.append(client)
    return client


class CloudState(Store):
    """What every part of the cloud store shares: the Box folder it is rooted at, the session, the
    listings and paths resolved this command, the content cache, the warnings collected."""

    kind = "cloud"

    def __init__(
        self, root_id: str, *, client: Any = None, own_client: bool = True, cache_dir: Path | None = None
    ) -> None:
        self.root_id = str(root_id)
        self._client = client
        self._own_client = own_client
        self._listings: dict[str, dict[str, dict[str, Any]]] = {}
        self._paths: dict[str, str] = {"": self.root_id}
        self._logical: dict[str, str] | None = None
        self._config: dict[str, Any] | None = None
        self._config_loaded = False
        self._prefetched = False
        # First pages the prefetch fetched, by folder id, with when they were asked for: `_list`
        # starts from one when the folder is listed; `subfolders` may need no more than it.
        self._first_pages: dict[str, tuple[float, Any]] = {}
        self._leading: dict[str, dict[str, dict[str, Any]] | None] = {}  # subfolders before files
        self._stale_ids: set[str] = set()
        self._incomplete: dict[str, str] = {}  # folder id -> why its listing may be short
        # Big folders read through their `_index.json` found by Box file id, never listed
        # (pins.py): the index's Box item by path, and each such folder's id by path.
        self._pins: dict[str, dict[str, Any]] = {}
        self._unlisted: dict[str, str] = {}
        self._no_other_index = False  # pins.py: a complete search found no index elsewhere
        self.lock_name_used: str | None = None
        self.cache = ContentCache(cache_dir or user_dirs().cache / "box" / self.root_id)
        # Listings carried from an earlier command (on disk) or from before drop_listings, reused
        # while the root lists exactly as it did when they were read (listings.py).
        self._snapshot = ListingSnapshot(user_dirs().cache / "box" / self.root_id)
        self._kept: Kept | None = None
        self._kept_loaded = False
        self._reuse = True  # False once a caller asked for fresh listings (index-rebuild)
        self._listed_at: dict[str, float] = {}
        self._coherent: set[str] = set()  # folders read (or confirmed) under the current root listing
        self.warnings: list[str] = []
        self._redetected = False
        self.list_calls = 0
        _OPEN.append(self)

    @property
    def box(self) -> Any:
        if self._client is None:
            self._client = open_session()
            self._own_client = False  # shared by the process; close_all ends it
        return self._client

    def call(self, tool: str, args: dict[str, Any]) -> Any:
        try:
            return self.box.call(tool, args)
        except WriteRefused:
            raise
        except BoxToolError as e:
            refused = self._refusal(tool, args, e) if tool in WRITE_TOOLS else None
            if refused is not None:
                raise refused from None
            raise

    def _refusal(self, tool: str, args: dict[str, Any], e: BoxToolError) -> WriteRefused | None:
        """A write refused by one of Box's documented write rules, as one line that says which
        item, which rule and what to do (the refusal's exact wording is not published: matched
        on its words)."""
        if e.status is not None and e.status not in (400, 403, 415, 422):
            return None
        text = f"{e} {orjson.dumps(e.body, default=str).decode() if e.body is not None else ''}"
        what = self._target(tool, args)
        if _SHARED_LINK_RE.search(text):
            return WriteRefused(
                f"Box refused to write {what}: it or a parent folder has a shared link, and Box MCP "
                "write tools refuse such items - remove the shared link or keep the workspace out of "
                "shared folders",
                rule="shared_link",
                cause=e,
            )
        if _EXTERNAL_RE.search(text):
            return WriteRefused(
                f"Box refused to write {what}: it or a parent folder has an external collaborator, "
                "and Box MCP write tools refuse such items - remove the external collaborator or "
                "keep the workspace out of that folder",
                rule="external_collaborator",
                cause=e,
            )
        if tool == "upload_file" and _FILE_TYPE_RE.search(text):
            return WriteRefused(
                f"Box refused to upload {what}: upload_file takes text file types only - use a "
                ".md, .txt or .json name",
                rule="file_type",
                cause=e,
            )
        return None

    def _target(self, tool: str, args: dict[str, Any]) -> str:
        """The workspace path (or Box id) a write tool was aimed at, for error messages."""
        by_id = {fid: p for p, fid in self._paths.items()}

        def folder(fid: Any) -> str | None:
            return by_id.get(str(fid)) if fid is not None else None

        if args.get("file_name") is not None:
            where = folder(args.get("parent_folder_id"))
            return join(where, str(args["file_name"])) if where is not None else str(args["file_name"])
        if args.get("file_id") is not None:
            fid = str(args["file_id"])
            for parent, items in self._listings.items():
                for name, it in items.items():
                    if str(it.get("id")) == fid:
                        where = folder(parent)
                        return join(where, name) if where is not None else name
            return f"Box file {fid}"
        if tool == "create_folder" and args.get("name") is not None:
            where = folder(args.get("parent_folder_id"))
            return join(where, str(args["name"])) if where is not None else str(args["name"])
        if args.get("folder_id") is not None:
            return (folder(args["folder_id"]) or f"Box folder {args['folder_id']}") + "/"
        return f"the workspace (tool {tool})"

    def has_tool(self, tool: str) -> bool:
        return bool(self.box.has_tool(tool))

    def _end_session(self) -> None:
        """End the session if this store opened it, and leave the process's open stores."""
        client, self._client = self._client, None
        if client is not None and self._own_client:
            client.close()
        with contextlib.suppress(ValueError):
            _OPEN.remove(self)
