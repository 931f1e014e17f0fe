"""The Box cloud store: the Store port over Box MCP tools (spec box-mcp.md), one session per command.

Workspace-relative paths map to Box ids through `folder_ids` in `_box-memory.json` and folder
listings. Each folder is listed at most once per command (with the fields box-memory needs: id,
name, etag, sha1, size, modified_at); our own writes update that listing in place from the object
Box returns, and taking the write lock drops every listing so other writers' changes become
visible exactly when they matter. File text is cached on disk under `user_dirs().cache`, keyed by
Box file id and sha1 (revalidated by the listing), so a warm command reads nothing but listings.

The write lock is a lease on `_box-memory.lock` (lease.py), the content cache is cache.py, tier
detection and the metadata template are tier.py, and provisioning a new workspace is provision.py.

Tier-aware, never tier-gated: when the workspace says `custom_metadata_templates` and the tools
exist, every memory file written also gets the `boxMemory` metadata instance (a failure is a
warning), and `metadata_search` can answer structured filters through `search_files_keyword` +
`mdfilters` once the template is older than Box's search lag.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from box_memory import settings
from box_memory.box.payload import (
    LIST_FIELDS,
    Pager,
    conflicts,
    listing,
    representation_pending,
    text_content,
)
from box_memory.errors import (
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    ContentUnverified,
    InvalidInput,
    NotFound,
    ToolMissing,
    Unreadable,
    WorkspaceNotFound,
    WriteRefused,
)
from box_memory.format.model import CONFIG_NAME, LOCK_NAME, WorkspaceConfig, now_iso, parse_time
from box_memory.format.safeio import check_size, kind_for
from box_memory.paths import user_dirs
from box_memory.store.base import AlreadyExists, Entry, clean_path, join, logical_folder_paths
from box_memory.store.cloud.cache import ContentCache
from box_memory.store.cloud.lease import FALLBACK_LOCK_NAME, Lease
from box_memory.store.cloud.listings import Kept, ListingSnapshot, root_signature, usable
from box_memory.store.cloud.tier import TEMPLATE_SCOPE, detect_tier, metadata_fields

__all__ = [
    "CONFIG_NAME",
    "CloudStore",
    "as_object",
    "close_all",
    "is_folder",
    "logical_keys",
    "open_cloud_store",
    "open_session",
]

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
SEARCH_LAG_S = 600.0  # Box's search index lags ~10 minutes: no mdfilters before that
_SCOPE_FOLDERS = ("memories", "files", "companions")
MIB = 1024 * 1024
PREFETCH_CONCURRENCY = 4
PREFETCH_WAVE = 64  # files fetched per wave of concurrent calls (progress is counted per wave)

_OPEN: list[CloudStore] = []


def close_all() -> list[str]:
    """End every cloud session this process opened; returns the warnings the stores collected.

    The CLI calls it once per command (`output.run`), so one MCP session serves one command.
    """
    warnings: list[str] = []
    while _OPEN:
        store = _OPEN.pop()
        warnings.extend(store.warnings)
        store.warnings = []
        with contextlib.suppress(Exception):
            store.close()
    while _SHARED:
        with contextlib.suppress(Exception):
            _SHARED.pop().close()
    return warnings


def _list_limit() -> int:
    """Page size of folder listings (env `BOX_MEMORY_LIST_LIMIT` lets tests force paging)."""
    return settings.list_limit()


def _content_retries() -> tuple[int, float]:
    """(attempts, first back-off in seconds) for a file read that does not verify
    (env `BOX_MEMORY_CONTENT_ATTEMPTS`, `BOX_MEMORY_CONTENT_BACKOFF_S`; tests shorten the wait)."""
    return settings.content_retries()


def _split(path: str) -> tuple[str, str]:
    p = clean_path(path)
    if "/" in p:
        parent, name = p.rsplit("/", 1)
        return parent, name
    return "", p


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def _box_time(value: Any) -> float:
    """Epoch seconds of a Box timestamp, rounded UP when Box gave whole seconds.

    Box renders times at second precision (truncated); rounding up keeps every comparison
    "changed after X" conservative (a file never looks older than it is).
    """
    t = parse_time(value)
    if t is None:
        return 0.0
    ts = t.timestamp()
    return ts + 0.999 if t.microsecond == 0 else ts


def item_sha1(item: dict[str, Any]) -> str | None:
    sha = item.get("sha1")
    if not sha and isinstance(item.get("file_version"), dict):
        sha = item["file_version"].get("sha1")
    return str(sha).lower() if sha else None


def is_folder(item: dict[str, Any]) -> bool:
    return item.get("type") == "folder"


def _to_entry(item: dict[str, Any]) -> Entry:
    size = item.get("size")
    return Entry(
        name=str(item.get("name") or ""),
        is_dir=is_folder(item),
        size=int(size) if isinstance(size, int | float) and not isinstance(size, bool) else 0,
        modified=_box_time(item.get("modified_at") or item.get("content_modified_at")),
        file_id=str(item["id"]) if item.get("id") is not None else None,
        etag=str(item["etag"]) if item.get("etag") is not None else None,
        sha1=item_sha1(item),
    )


def as_object(payload: Any) -> dict[str, Any] | None:
    """The Box object in a write tool's answer (a file/folder object, or the REST upload wrapper)."""
    if isinstance(payload, dict):
        entries = payload.get("entries")
        if "id" not in payload and isinstance(entries, list) and entries and isinstance(entries[0], dict):
            return entries[0]
        return payload if payload.get("id") is not None else None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        return payload[0]
    return None


def _envelope_text(result: Any) -> str | None:
    """The file text in an unwrapped get_file_content answer, or None when it is not plainly one."""
    if isinstance(result, BaseException):
        return None
    if isinstance(result, str):
        return result
    try:
        return text_content("get_file_content", result)
    except BoxMemoryError:
        return None


def logical_keys(teams: list[str]) -> dict[str, str]:
    """{folder path: folder_ids key} for the standard layout of these teams."""
    keys = {"memories": "memories", "files": "files", "companions": "companions", "teams": "teams"}
    for t in teams:
        keys[f"teams/{t}"] = f"team_{t}_root"
        for part in _SCOPE_FOLDERS:
            keys[f"teams/{t}/{part}"] = f"team_{t}_{part}"
    return keys


# ---------------------------------------------------------------------------------------------
# The store


def open_cloud_store(folder_id: str) -> CloudStore:
    """The store behind `--workspace box:<folder_id>` (the session opens on first use)."""
    fid = str(folder_id).strip()
    if not fid.isdigit():
        raise InvalidInput(f"box:{folder_id} is not a Box folder id (digits expected)")
    return CloudStore(fid)


_SHARED: list[Any] = []  # the process's one MCP session, shared by every store; closed by close_all


def open_session() -> Any:
    """The process's MCP session (opened on first use): each session start is a billed call."""
    from box_memory.box.auth import TokenSource
    from box_memory.box.client import BoxMCPClient, default_url

    url = default_url()
    if _SHARED and _SHARED[-1].is_open and _SHARED[-1].url == url:
        return _SHARED[-1]
    client = BoxMCPClient(url, TokenSource())
    client.open()
    _SHARED.append(client)
    return client


class CloudStore:
    """A workspace rooted at one Box folder. Not thread-safe (one command, one thread)."""

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
        self._stale_ids: set[str] = set()
        self._incomplete: dict[str, str] = {}  # folder id -> why its listing may be short
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

    # -- session --------------------------------------------------------------------------

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

    def close(self) -> None:
        kept = self._keep()
        if kept is not None and settings.listing_trust_s() > 0:
            self._snapshot.save(kept)
        client, self._client = self._client, None
        if client is not None and self._own_client:
            client.close()
        with contextlib.suppress(ValueError):
            _OPEN.remove(self)

    def describe(self) -> str:
        return f"box:{self.root_id}"

    @property
    def local_root(self) -> Path | None:
        return None  # nothing of the workspace is on this machine (the text cache is private)

    def signature(self, path: str) -> str | None:
        """From the listing this command holds: size, modified time, id, etag and sha1."""
        try:
            e = self.stat(path)
        except Unreadable:
            return "denied"
        return None if e is None else f"{e.size}:{e.modified}:{e.file_id}:{e.etag}:{e.sha1}"

    def batch(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # every upload is durable when Box answers

    def checkpoint(self) -> None:
        pass

    def lock_state(self) -> dict[str, Any] | None:
        return None  # `status` reports the local lock file only, not the Box lease

    # -- listings and path resolution -------------------------------------------------------

    def drop_listings(self, *, fresh: bool = False) -> None:
        """Forget every cached listing (folder ids stay): the next read sees other writers. The
        other folders' listings come back without a call when the root then lists unchanged (no
        writer took the lock meanwhile; listings.py), unless `fresh` (index-rebuild: from now on
        every folder is listed anew). A session that was ended elsewhere (a long-lived server
        between tool calls) is reopened on next use."""
        if fresh:
            self._reuse = False
            self._kept = None
        else:
            self._kept = self._keep()
        self._listings.clear()
        self._coherent.clear()
        self._prefetched = False
        if self._client is not None and not getattr(self._client, "is_open", True):
            self._client = None

    def _keep(self) -> Kept | None:
        """The listings this command holds that are valid under its root listing, for later."""
        root = self._listings.get(self.root_id)
        if root is None or self.root_id in self._incomplete:
            return None
        folders = {
            fid: (self._listed_at[fid], items)
            for fid, items in self._listings.items()
            if fid in self._coherent and fid not in self._incomplete and fid in self._listed_at
        }
        return root_signature(root), folders

    def _adopt(self, root: dict[str, dict[str, Any]]) -> None:
        """After a fresh root listing: take back the kept listings it shows are still current."""
        if not self._reuse:
            return
        if not self._kept_loaded:
            self._kept_loaded = True
            if self._kept is None:
                self._kept = self._snapshot.load()
        kept, self._kept = self._kept, None
        for fid, (at, items) in usable(kept, root, settings.listing_trust_s()).items():
            if fid != self.root_id and fid not in self._listings:
                self._listings[fid] = items
                self._listed_at[fid] = at
                self._coherent.add(fid)
                self._incomplete.pop(fid, None)

    def _list(self, folder_id: str, first: Any = None) -> dict[str, dict[str, Any]]:
        """The folder's items by name (every page), listed once per command; `first` is a first
        page already fetched (by a concurrent prefetch)."""
        cached = self._listings.get(folder_id)
        if cached is not None:
            return cached
        listed_at = time.time()
        items: dict[str, dict[str, Any]] = {}
        pager = Pager(_list_limit())
        for _ in range(100_000):
            args: dict[str, Any] = {"folder_id": folder_id, "fields": LIST_FIELDS, **pager.args()}
            try:
                payload = first if first is not None else self.call("list_folder_content_by_folder_id", args)
                first = None
                page = listing(payload)
            except BoxMemoryError as e:
                if isinstance(e, BoxToolError) and e.status == 403 and folder_id != self.root_id:
                    # A folder of the workspace this Box user may not read (a team boundary):
                    # readers skip it and say so; it is never taken for a missing folder.
                    raise Unreadable(
                        f"Box folder {folder_id} is not readable by this Box user (403)"
                    ) from None
                if isinstance(e, BoxToolError) and e.status == 404:
                    if folder_id == self.root_id:
                        raise WorkspaceNotFound(
                            f"Box folder {folder_id} not found (or not shared with this Box user)"
                        ) from None
                    raise NotFound(f"Box folder {folder_id} not found") from None
                if pager.pages == 0:
                    raise
                pager.fail(f"page {pager.pages + 1} failed: {e}")  # keep what was read, say so
                break
            self.list_calls += 1
            for it in page.entries:
                if it.get("type") in ("file", "folder") and it.get("name") is not None:
                    items[str(it["name"])] = it
            if not pager.advance(page):
                break
        else:
            pager.fail("too many pages")
        if pager.incomplete:
            self._incomplete[folder_id] = pager.incomplete
            where = next((p or "the workspace root" for p, f in self._paths.items() if f == folder_id), None)
            self.warnings.append(
                f"the Box listing of {where or 'folder ' + folder_id} may be incomplete "
                f"({pager.incomplete}); files missing from it are not treated as deleted"
            )
        else:
            self._incomplete.pop(folder_id, None)
        self._listings[folder_id] = items
        self._listed_at[folder_id] = listed_at
        if folder_id == self.root_id:
            self._coherent.clear()
            self._adopt(items)
        elif self.root_id in self._listings:
            self._coherent.add(folder_id)  # read after the root: valid under it
        return items

    def listing_incomplete(self, path: str) -> str | None:
        """Why the listing of a workspace folder may be short (None when it is known complete)."""
        items = self._items(path)
        fid = self._paths.get(clean_path(path))
        return None if items is None or fid is None else self._incomplete.get(fid)

    @staticmethod
    def _find(items: dict[str, dict[str, Any]], name: str) -> dict[str, Any] | None:
        """Exact name first, then case-insensitively (Box names are unique case-insensitively)."""
        hit = items.get(name)
        if hit is not None:
            return hit
        folded = name.casefold()
        return next((v for k, v in items.items() if k.casefold() == folded), None)

    def _logical_ids(self) -> dict[str, str]:
        if self._logical is None:
            cfg = self._config_data()
            self._logical = logical_folder_paths(cfg.get("folder_ids"), cfg.get("teams"))
        return self._logical

    def config_data(self) -> dict[str, Any]:
        """The workspace config as this store last read or wrote it ({} when there is none)."""
        return self._config_data()

    def _config_data(self) -> dict[str, Any]:
        if not self._config_loaded:
            self._config_loaded = True
            try:
                data = orjson.loads(self.read_bytes(CONFIG_NAME))
            except (NotFound, orjson.JSONDecodeError):
                data = {}
            self._config = data if isinstance(data, dict) else {}
        return self._config or {}

    def folder_id(self, path: str, *, logical: bool = True) -> str | None:
        """Box id of a workspace folder, or None when it does not exist (no folder is created)."""
        path = clean_path(path)
        if path in self._paths:
            return self._paths[path]
        if logical:
            known = self._logical_ids().get(path)
            if known is not None:
                self._paths[path] = known
                return known
        parent, name = _split(path)
        pid = self.folder_id(parent, logical=logical)
        if pid is None:
            return None
        item = self._find(self._list(pid), name)
        if item is None or not is_folder(item):
            return None
        self._paths[path] = str(item["id"])
        return self._paths[path]

    def _forget_path(self, path: str) -> None:
        for p in [p for p in self._paths if p == path or p.startswith(path + "/")]:
            fid = self._paths.pop(p)
            self._listings.pop(fid, None)
        if self._logical is not None and path in self._logical:
            self._logical.pop(path)  # only this one: ids of the folders below it may still be good

    def _prefetch_folders(self) -> None:
        """List the folders the config names, concurrently, once (again after the lock drops them).

        Nearly every command reads every index folder; listing them in parallel costs about one
        round trip instead of one per folder, and never lists a folder twice.
        """
        if self._prefetched:
            return
        self._prefetched = True
        wanted = [
            (p, fid) for p, fid in self._logical_ids().items() if p != "teams" and fid not in self._listings
        ]
        if len(wanted) < 2:
            return
        args = {"fields": LIST_FIELDS, "limit": _list_limit()}
        pages = self.box.call_many(
            [("list_folder_content_by_folder_id", {"folder_id": fid, **args}) for _, fid in wanted],
            concurrency=PREFETCH_CONCURRENCY,
        )
        for (path, fid), page in zip(wanted, pages, strict=True):
            if isinstance(page, BoxToolError) and page.status == 404:
                self._stale_ids.add(fid)  # gone: resolve this folder by name from now on
                self._forget_path(path)
                continue
            if isinstance(page, BaseException):
                continue  # a failure: the ordinary path retries it when the folder is needed
            with contextlib.suppress(BoxMemoryError):
                self._list(fid, first=page)

    def prefetch(self, paths: Iterable[str]) -> int:
        """Read many files concurrently into the text cache before they are read one by one.

        An optimisation only (a cold recall or a rebuild reads every memory): only text whose
        sha1 matches the listing is kept, anything else is left to `read_bytes`. Returns how many
        files were fetched.
        """
        todo: dict[str, str] = {}
        for p in paths:
            try:
                item = self._item(p)
            except BoxMemoryError:
                continue
            if item is None or is_folder(item):
                continue
            sha = item_sha1(item)
            if sha and not self.cache.has(str(item["id"]), sha):
                todo[str(item["id"])] = sha
        if len(todo) < 2:
            return 0
        from box_memory.progress import task

        ids, results = list(todo), []
        with task("Reading memories from Box", total=len(ids), unit="files") as bar:
            for start in range(0, len(ids), PREFETCH_WAVE):  # waves, so that progress can be shown
                wave = ids[start : start + PREFETCH_WAVE]
                calls = [("get_file_content", {"file_id": fid}) for fid in wave]
                results += self.box.call_many(calls, concurrency=PREFETCH_CONCURRENCY)
                bar.advance(len(wave))
        fetched = 0
        for (fid, sha), res in zip(todo.items(), results, strict=True):
            text = _envelope_text(res)
            if text is not None and _sha1(data := text.encode("utf-8")) == sha:
                self.cache.put(fid, sha, data)
                fetched += 1
        return fetched

    def _items(self, path: str) -> dict[str, dict[str, Any]] | None:
        """The listing of a workspace folder (None when the folder does not exist)."""
        path = clean_path(path)
        if path:
            self._prefetch_folders()
        fid = self.folder_id(path)
        if fid is None:
            return None
        try:
            return self._list(fid)
        except NotFound:
            # A folder id from the config or an earlier listing went stale: walk by name once.
            self._stale_ids.add(fid)
            self._forget_path(path)
            fid = self.folder_id(path, logical=False)
            if fid is None:
                return None
            try:
                return self._list(fid)
            except NotFound:
                # Listed in its parent, yet Box answers 404 for it: Box's answer for an item the
                # user may not see. Skipped like a 403, never taken for a deletion.
                raise Unreadable(f"Box folder {path}/ is not readable by this Box user (404)") from None

    def _item(self, path: str) -> dict[str, Any] | None:
        path = clean_path(path)
        if not path:
            return {"type": "folder", "id": self.root_id, "name": ""}
        parent, name = _split(path)
        items = self._items(parent)
        return None if items is None else self._find(items, name)

    def _remember(self, parent_id: str, obj: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
        """Put an object our write got back into the cached listing of its folder."""
        items = self._listings.get(parent_id)
        if obj is None or obj.get("id") is None or not obj.get("name"):
            self._listings.pop(parent_id, None)  # unknown answer shape: re-list when needed
            return None
        if items is not None:
            stale = self._find(items, name)
            if stale is not None:
                items.pop(str(stale.get("name")), None)
            items[str(obj["name"])] = obj
        return obj

    # -- reading ----------------------------------------------------------------------------

    def exists(self, path: str) -> bool:
        return self._item(path) is not None

    def stat(self, path: str) -> Entry | None:
        item = self._item(path)
        if item is None:
            return None
        if not is_folder(item):
            return _to_entry(item)
        return self._folder_entry(clean_path(path), item)

    def _folder_entry(self, path: str, item: dict[str, Any]) -> Entry:
        """A folder's entry; its etag digests the children, so it changes whenever they do
        (Box folder etags only change when the folder itself is renamed or moved)."""
        children = self._items(path) or {}
        digest = hashlib.sha1(usedforsecurity=False)
        newest = 0.0
        for name in sorted(children):
            c = children[name]
            digest.update(f"{name}\0{c.get('id')}\0{c.get('etag')}\0{item_sha1(c)}\n".encode())
            newest = max(newest, _box_time(c.get("modified_at")))
        name = path.rsplit("/", 1)[-1]
        return Entry(name, True, len(children), newest, str(item.get("id")), digest.hexdigest()[:20], None)

    def list_dir(self, path: str) -> list[Entry]:
        items = self._items(path)
        return [] if items is None else [_to_entry(i) for i in items.values()]

    def list_names(self, path: str) -> list[str]:
        items = self._items(path)
        return [] if items is None else list(items)

    def _file_item(self, path: str) -> dict[str, Any]:
        item = self._item(path)
        if item is None:
            raise NotFound(f"{path} not found in the workspace")
        if is_folder(item):
            raise NotFound(f"{path} is a folder, not a file")
        return item

    def read_bytes(self, path: str) -> bytes:
        item = self._file_item(path)
        size = item.get("size")
        check_size(path, kind_for(path), size if isinstance(size, int) else None)  # before downloading
        return self._content(path, item)

    def read_if_local(self, path: str) -> bytes | None:
        """From the content cache only (by the listed sha1): never a download."""
        try:
            item = self._file_item(path)
        except (BoxMemoryError, OSError):
            return None
        sha = item_sha1(item)
        return self.cache.get(str(item["id"]), sha) if sha else None

    def _content(self, path: str, item: dict[str, Any]) -> bytes:
        """The file's bytes, accepted (and cached) only when they hash to the sha1 Box lists.

        `get_file_content` answers from Box's text representations: it may answer "still being
        generated" (`status: pending`) as a success (box-community/box-ai-agents-toolkit
        `box_api_file_representation.py`), and for some types the text is not byte-exact. So the
        text is kept only when its sha1 matches; otherwise the bytes of `get_download_url` are
        used; when neither verifies the read is retried with back-off (the sha1 re-read from
        `get_file_details` in case the file changed since it was listed), then fails with
        `ContentUnverified`. Nothing unverified is ever cached.
        """
        fid = str(item["id"])
        sha = item_sha1(item) or self._details_sha1(path, fid)
        if sha:
            cached = self.cache.get(fid, sha)
            if cached is not None:
                return cached
        attempts, backoff = _content_retries()
        why = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(backoff * 2 ** (attempt - 1))
                fresh = self._details_sha1(path, fid)
                if fresh and fresh != sha:
                    sha = fresh
                    item["sha1"] = fresh
                    cached = self.cache.get(fid, sha)
                    if cached is not None:
                        return cached
            data, why = self._fetch_verified(path, fid, sha)
            if data is not None:
                if sha:
                    self.cache.put(fid, sha, data)
                return data
        raise ContentUnverified(
            f"{path}: Box gave no content matching the file's sha1 after {attempts} attempts ({why})"
        )

    def _details_sha1(self, path: str, file_id: str) -> str | None:
        try:
            details = self.call("get_file_details", {"file_id": file_id, "fields": ["sha1"]})
        except BoxToolError as e:
            if e.status == 404:
                self._listings.clear()
                raise NotFound(f"{path} not found in the workspace") from None
            return None
        return item_sha1(as_object(details) or {})

    def _fetch_verified(self, path: str, file_id: str, sha: str | None) -> tuple[bytes | None, str]:
        """(bytes whose sha1 is `sha`, "") or (None, what went wrong) - one try of each source."""
        problems: list[str] = []
        try:
            text: str | None = self.box.call_text("get_file_content", {"file_id": file_id})
        except BoxToolError as e:
            if e.status == 404:
                self._listings.clear()
                raise NotFound(f"{path} not found in the workspace") from None
            text = None
            problems.append(f"no text representation: {e}")
        if text is not None:
            if representation_pending(text):
                problems.append("the text representation is still being generated")
            else:
                data = text.encode("utf-8")
                if sha and _sha1(data) == sha:
                    return data, ""
                problems.append("the text representation is not byte-exact")
        if not self.has_tool("get_download_url"):
            problems.append("the server has no get_download_url to fetch the bytes")
            return None, "; ".join(problems)
        try:
            data = b"".join(self._download(path, file_id))
        except (NotFound, ToolMissing) as e:
            problems.append(str(e))
        except BoxToolError as e:
            problems.append(f"download failed: {e}")
        else:
            if not sha or _sha1(data) == sha:  # the bytes themselves (no sha1 to check: not cached)
                return data, ""
            problems.append("the downloaded bytes do not match the sha1 either")
        return None, "; ".join(problems)

    def read_chunks(self, path: str, chunk_size: int = MIB) -> Iterator[bytes]:
        """The file's bytes, streamed from a short-lived download URL (companions hash binaries)."""
        item = self._file_item(path)
        return self._download(path, str(item["id"]), chunk_size)

    def _download(self, path: str, file_id: str, chunk_size: int = MIB) -> Iterator[bytes]:
        payload = self.call("get_download_url", {"file_id": file_id})
        url = None
        if isinstance(payload, str) and payload.strip().startswith("http"):
            url = payload.strip()
        elif isinstance(payload, dict):
            for key in ("download_url", "downloadUrl", "url", "location"):
                if isinstance(payload.get(key), str):
                    url = payload[key]
                    break
        if not url:
            raise BoxToolError(f"Box tool get_download_url gave no URL for {path}")
        return _stream(url, path, chunk_size)

    # -- writing ----------------------------------------------------------------------------

    @staticmethod
    def _text(path: str, data: bytes) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(f"{path}: the Box cloud backend stores UTF-8 text files only") from None

    def _upload_new(self, parent_id: str, name: str, data: bytes, path: str) -> dict[str, Any]:
        """upload_file (create-or-fail). 409 -> AlreadyExists, unless the file there is this very
        content (a retried upload whose first attempt did land)."""
        try:
            payload = self.call(
                "upload_file",
                {"file_name": name, "file_content": self._text(path, data), "parent_folder_id": parent_id},
            )
        except BoxToolError as e:
            if e.status != 409:
                raise
            clash = next(iter(conflicts(e.body)), None)
            if clash is not None and item_sha1(clash) == _sha1(data) and not is_folder(clash):
                clash.setdefault("name", name)
                return self._after_write(parent_id, clash, name, data, path)
            self._listings.pop(parent_id, None)
            raise AlreadyExists(f"{path} already exists") from None
        return self._after_write(parent_id, as_object(payload), name, data, path)

    def _upload_version(
        self, parent_id: str, file_id: str, name: str, data: bytes, path: str
    ) -> dict[str, Any]:
        payload = self.call(
            "upload_file_version", {"file_id": file_id, "file_content": self._text(path, data)}
        )
        obj = as_object(payload)
        if obj is not None:
            obj.setdefault("name", name)
        return self._after_write(parent_id, obj, name, data, path)

    def _after_write(
        self, parent_id: str, obj: dict[str, Any] | None, name: str, data: bytes, path: str
    ) -> dict[str, Any]:
        if obj is not None and not obj.get("sha1"):
            obj["sha1"] = _sha1(data)
        kept = self._remember(parent_id, obj, name)
        if kept is None:
            kept = self._find(self._list(parent_id), name)
            if kept is None:
                raise BoxToolError(f"Box accepted {path} but the file is not in its folder")
        fid = str(kept["id"])
        self.cache.put(fid, item_sha1(kept) or _sha1(data), data)
        if path == CONFIG_NAME:
            with contextlib.suppress(orjson.JSONDecodeError):
                cfg = orjson.loads(data)
                if isinstance(cfg, dict):
                    self._config, self._config_loaded, self._logical = cfg, True, None
        elif path.endswith(".md"):
            self._apply_metadata(path, fid, data)
        return kept

    def write_bytes(self, path: str, data: bytes) -> str | None:
        """Create the file, or upload a new version of it (Box keeps the old one)."""
        path = clean_path(path)
        parent, name = _split(path)
        pid = self._ensure_folder(parent)
        item = self._find(self._list(pid), name)
        if item is not None and is_folder(item):
            raise InvalidInput(f"{path} is a folder")
        if item is not None:
            try:
                return str(self._upload_version(pid, str(item["id"]), name, data, path)["id"])
            except BoxToolError as e:
                if e.status != 404:
                    raise
                self._listings.pop(pid, None)  # gone since we listed: create it afresh below
        try:
            return str(self._upload_new(pid, name, data, path)["id"])
        except AlreadyExists:
            # Created by someone else between our listing and the upload: version it.
            item = self._find(self._list(pid), name)
            if item is None or is_folder(item):
                raise
            return str(self._upload_version(pid, str(item["id"]), name, data, path)["id"])

    def create_bytes(self, path: str, data: bytes) -> str | None:
        """Create-or-fail: Box's `upload_file` fails when the name exists (case-insensitively)."""
        path = clean_path(path)
        parent, name = _split(path)
        pid = self._ensure_folder(parent)
        there = self._find(self._list(pid), name)
        if there is not None:
            if not is_folder(there) and item_sha1(there) == _sha1(data):
                return str(there["id"])  # exactly these bytes: an earlier attempt of ours landed
            raise AlreadyExists(f"{path} already exists")
        return str(self._upload_new(pid, name, data, path)["id"])

    def _ensure_folder(self, path: str) -> str:
        path = clean_path(path)
        fid = self.folder_id(path)
        if fid is not None:
            return fid
        parent, name = _split(path)
        pid = self._ensure_folder(parent)
        fresh = True
        try:
            obj = as_object(self.call("create_folder", {"name": name, "parent_folder_id": pid}))
        except BoxToolError as e:
            if e.status != 409:
                raise
            clash = next((c for c in conflicts(e.body) if is_folder(c)), None)
            if clash is None:
                self._listings.pop(pid, None)
                clash = self._find(self._list(pid), name)
                if clash is None or not is_folder(clash):
                    raise AlreadyExists(f"{path} exists and is not a folder") from None
            obj, fresh = clash, False
        if obj is None or obj.get("id") is None:
            self._listings.pop(pid, None)
            obj = self._find(self._list(pid), name)
            if obj is None:
                raise BoxToolError(f"Box did not create the folder {path}")
        obj.setdefault("type", "folder")
        obj.setdefault("name", name)
        self._remember(pid, obj, name)
        fid = str(obj["id"])
        self._paths[path] = fid
        if fresh:
            self._listings[fid] = {}  # a folder we just created is empty: no listing needed
        return fid

    def mkdir(self, path: str) -> str | None:
        return self._ensure_folder(path)

    def mark_empty(self, path: str) -> None:
        """A folder this command just created: it is known to be empty, no listing needed."""
        fid = self.folder_id(path)
        if fid is not None:
            self._listings[fid] = {}

    def resolved_folder_ids(self) -> dict[str, str]:
        """{workspace folder path: Box id} of every folder this command has resolved so far."""
        return dict(self._paths)

    def write_version(self, path: str, file_id: str, data: bytes) -> str:
        """Upload `data` as a new version of file `file_id` at `path` (its id is known: no
        lookup by name); returns the file's id."""
        path = clean_path(path)
        parent, name = _split(path)
        pid = self._ensure_folder(parent)
        return str(self._upload_version(pid, file_id, name, data, path)["id"])

    def current_sha1(self, file_id: str) -> str | None:
        """The sha1 Box reports for the file now (a fresh details call, never a listing)."""
        return self.current_version(file_id)[0]

    def current_version(self, file_id: str) -> tuple[str | None, str | None]:
        """(sha1, etag) Box reports for the file now (a fresh details call, never a listing)."""
        args = {"file_id": file_id, "fields": ["sha1", "etag"]}
        details = as_object(self.call("get_file_details", args)) or {}
        etag = details.get("etag")
        return item_sha1(details), None if etag is None else str(etag)

    def root_listing_age(self) -> float | None:
        """Seconds since this command listed the workspace root (None: it holds no root listing)."""
        at = self._listed_at.get(self.root_id)
        return None if at is None or self.root_id not in self._listings else time.time() - at

    def current_text(self, file_id: str) -> str:
        """The file's text as Box serves it now (not verified, not cached)."""
        return str(self.box.call_text("get_file_content", {"file_id": file_id}))

    def move(self, src: str, dst: str) -> None:
        """Move a file (`move_file`) or a folder (`move_folder`, one call with everything in it,
        where the server offers it: DOC2/CAT in CONNECTORS.md). Without `move_folder` a folder is
        moved file by file into a new tree, and as Box MCP has no delete tool the emptied source
        folders stay behind."""
        src, dst = clean_path(src), clean_path(dst)
        item = self._item(src)
        if item is None:
            raise NotFound(f"{src} not found in the workspace")
        if self.exists(dst):
            raise AlreadyExists(f"{dst} already exists")
        if is_folder(item):
            if self.has_tool("move_folder"):
                try:
                    self._move_folder(src, dst, item)
                    return
                except ToolMissing:
                    pass  # gone from the catalogue since it was cached: move file by file
            self._move_tree(src, dst)
            return
        dpid, dname, payload = self._move_item("file", src, dst, item)
        obj = as_object(payload)
        if obj is not None:
            obj = {**item, **obj, "name": dname}
        self._remember(dpid, obj, dname)

    def _move_item(self, what: str, src: str, dst: str, item: dict[str, Any]) -> tuple[str, str, Any]:
        """One `move_file`/`move_folder` call; drops `src` from its parent's cached listing.
        Returns (destination parent id, new name, the tool's payload)."""
        sparent, _ = _split(src)
        dparent, dname = _split(dst)
        spid = self.folder_id(sparent)
        dpid = self._ensure_folder(dparent)
        try:
            payload = self.call(
                f"move_{what}", {f"{what}_id": str(item["id"]), "parent_folder_id": dpid, "name": dname}
            )
        except BoxToolError as e:
            if e.status == 409:
                raise AlreadyExists(f"{dst} already exists") from None
            raise
        if spid is not None and spid in self._listings:
            self._listings[spid].pop(str(item.get("name")), None)
        return dpid, dname, payload

    def _move_folder(self, src: str, dst: str, item: dict[str, Any]) -> None:
        dpid, dname, payload = self._move_item("folder", src, dst, item)
        # Ids are kept by a move: re-key the cached paths under the folder to their new place.
        moved = {p: fid for p, fid in self._paths.items() if p == src or p.startswith(src + "/")}
        for p in moved:
            self._paths.pop(p, None)
        for p, fid in moved.items():
            self._paths[dst + p[len(src) :]] = fid
        if self._logical is not None:
            for p in [p for p in self._logical if p == src or p.startswith(src + "/")]:
                self._logical.pop(p)
        obj = as_object(payload)
        self._remember(dpid, {**item, **obj, "name": dname} if obj is not None else None, dname)

    def _move_tree(self, src: str, dst: str) -> None:
        self._ensure_folder(dst)
        for name, child in sorted((self._items(src) or {}).items()):
            if is_folder(child):
                self._move_tree(join(src, name), join(dst, name))
            else:
                self.move(join(src, name), join(dst, name))

    def lock_name(self) -> str:
        """The lease file's name: the plugins' `_box-memory.lock`, or the recorded fallback."""
        if self.lock_name_used:
            return self.lock_name_used
        name = self._config_data().get("lock_name")
        return FALLBACK_LOCK_NAME if name == FALLBACK_LOCK_NAME else LOCK_NAME

    def record_lock_name(self, name: str) -> None:
        """Remember (in the config, under the lock) that this workspace's lease uses `name`."""
        self.lock_name_used = name
        cfg = self._config_data()
        if cfg and cfg.get("lock_name") != name:
            self._write_config({**cfg, "lock_name": name})

    # -- config bookkeeping -----------------------------------------------------------------

    def complete_config(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """The config with `folder_ids` filled in for the standard folders this command resolved,
        so later commands need no listing to find them, and the lease file's name. A key that is
        there is kept, unless Box said its folder is gone (404) and this command found the folder
        again by name. Returned as given when there is nothing to add."""
        ids = cfg.get("folder_ids")
        if ids is None:
            ids = {}
        if not isinstance(ids, dict):
            return cfg
        cfg, ids = dict(cfg), dict(ids)
        teams = [str(t) for t in cfg.get("teams") or [] if isinstance(t, str)]
        added = False
        if self.lock_name_used and cfg.get("lock_name") != self.lock_name_used:
            cfg["lock_name"] = self.lock_name_used  # a config written from older data keeps it
            added = True
        if "root" not in ids:
            ids["root"] = self.root_id
            added = True
        for path, key in logical_keys(teams).items():
            if key in ids and str(ids[key]) in self._stale_ids:
                found = self.folder_id(path, logical=False)  # found again by name?
                if found is not None and found != str(ids[key]):
                    ids[key] = found
                    added = True
            elif key not in ids and path in self._paths:
                ids[key] = self._paths[path]
                added = True
        if not added:
            return cfg
        cfg["folder_ids"] = ids
        return cfg

    def _write_config(self, cfg: dict[str, Any]) -> None:
        """Write the workspace config from this store's own bookkeeping (lease name, tier)."""
        self.write_bytes(CONFIG_NAME, WorkspaceConfig(self.complete_config(cfg)).to_bytes())

    # -- metadata (Business+ tiers) ---------------------------------------------------------

    def _template_key(self) -> str | None:
        cfg = self._config_data()
        caps = cfg.get("capabilities") if isinstance(cfg.get("capabilities"), dict) else {}
        key = cfg.get("metadata_template_key")
        if not (isinstance(caps, dict) and caps.get("custom_metadata_templates")) or not key:
            return None
        return str(key)

    def _apply_metadata(self, path: str, file_id: str, data: bytes) -> None:
        key = self._template_key()
        if key is None:
            return
        if not self.has_tool("set_file_metadata"):
            # The config says metadata templates, the catalogue no longer offers the tool.
            self._downgraded("the set_file_metadata tool is no longer offered")
            return
        fields = metadata_fields(data)
        if fields is None:
            return
        try:
            self.call(
                "set_file_metadata",
                {"file_id": file_id, "scope": TEMPLATE_SCOPE, "template_key": key, "metadata_fields": fields},
            )
        except BoxMemoryError as e:
            self.warnings.append(f"Box metadata not applied to {path} (the memory is written): {e}")
            if isinstance(e, ToolMissing):
                self._downgraded("the set_file_metadata tool is no longer offered", tool_gone=True)
            elif isinstance(e, BoxToolError) and e.status in (403, 404):
                self._downgraded(f"Box refused the metadata ({e.status})")

    def _downgraded(self, why: str, *, tool_gone: bool = False) -> None:
        """A Box answer that signals a lower tier: detect tier and capabilities again (once per
        command) and write them back to the config, with a warning. The caller holds the lock."""
        if self._redetected:
            return
        self._redetected = True
        try:
            found = self.redetect_tier(metadata_tool=not tool_gone)
        except BoxMemoryError as e:
            self.warnings.append(f"{why}; re-detecting the Box tier failed: {e}")
            return
        if found is not None:
            self.warnings.append(
                f"{why}: Box tier re-detected as {found['tier']} (was {found['previous_tier']}); "
                f"capabilities updated in {CONFIG_NAME}"
            )

    def redetect_tier(self, *, metadata_tool: bool = True) -> dict[str, Any] | None:
        """Tier and capabilities detected now (who_am_i, catalogue) and written to the config.

        Used after a downgrade signal and by `status --refresh` (an upgrade); the caller holds
        the workspace lock. Returns {tier, previous_tier, capabilities, changed} or None when
        the workspace has no config.
        """
        cfg = self._config_data()
        if not cfg:
            return None
        reload = getattr(self.box, "reload_catalogue", None)
        if reload is not None:
            reload()  # the cached tool list may predate the plan change
        tier, caps, _template = detect_tier(self.box)
        before = cfg.get("capabilities")
        merged: dict[str, Any] = {**(before if isinstance(before, dict) else {}), **caps}
        if not metadata_tool or not self.has_tool("set_file_metadata"):
            merged["custom_metadata_templates"] = False  # templates listable, but nothing to apply them
        changed = cfg.get("tier") != tier or cfg.get("capabilities") != merged
        new = {**cfg, "tier": tier, "tier_detected_at": now_iso(), "capabilities": merged}
        self._write_config(new)
        return {"tier": tier, "previous_tier": cfg.get("tier"), "capabilities": merged, "changed": changed}

    def metadata_search(
        self, *, kind: str | None = None, status: str | None = None, team: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]] | None:
        """Memory files matching a structured filter through Box metadata search, or None when
        this workspace cannot use it (no template, template younger than the search lag, tool
        missing, or the search failed). Callers always fall back to the indexes."""
        key = self._template_key()
        created = parse_time(self._config_data().get("metadata_template_created_at"))
        if key is None or created is None or time.time() - created.timestamp() < SEARCH_LAG_S:
            return None
        if not self.has_tool("search_files_keyword"):
            return None
        filters = {k: v for k, v in (("kind", kind), ("status", status), ("team", team)) if v}
        try:
            payload = self.call(
                "search_files_keyword",
                {
                    "query": "the",
                    "ancestor_folder_id": self.root_id,
                    "file_extensions": ["md"],
                    "mdfilters": [{"scope": TEMPLATE_SCOPE, "templateKey": key, "filters": filters}],
                    "fields": ["name", "parent", "sha1", "modified_at", f"metadata.{TEMPLATE_SCOPE}.{key}"],
                    "limit": limit,
                },
            )
            return listing(payload, tool="search_files_keyword").entries
        except BoxMemoryError as e:
            self.warnings.append(f"Box metadata search failed, answered from the indexes: {e}")
            return None

    # -- the write lock -------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, *, writer: str = "box-memory", skill: str = "") -> Iterator[object]:
        lease = Lease(self, writer=writer, skill=skill)
        lease.acquire()
        try:
            yield lease
        finally:
            lease.release()


def _stream(url: str, path: str, chunk_size: int) -> Iterator[bytes]:
    import httpx2

    try:
        with httpx2.stream("GET", url, timeout=60.0, follow_redirects=True) as resp:
            if resp.status_code == 404:
                raise NotFound(f"{path} could not be downloaded (the download link expired or is gone)")
            if resp.status_code >= 400:
                raise BackendUnavailable(f"downloading {path} from Box failed (HTTP {resp.status_code})")
            yield from resp.iter_bytes(chunk_size)
    except httpx2.HTTPError as e:
        raise BackendUnavailable(f"downloading {path} from Box failed ({type(e).__name__})") from None
