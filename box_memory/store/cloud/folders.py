"""The cloud store's folders: each listed at most once per command (every page, the fields
box-memory needs), listings kept from before reused while the root lists unchanged (listings.py),
workspace paths resolved to Box ids through the config's `folder_ids` and by name, and the folder
ids this command resolved completed into the config.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson

from box_memory import settings
from box_memory.box.payload import LIST_FIELDS, Pager, listing
from box_memory.errors import BoxMemoryError, BoxToolError, NotFound, Unreadable, WorkspaceNotFound
from box_memory.format.model import CONFIG_NAME, WorkspaceConfig
from box_memory.store.base import clean_path, join, logical_folder_paths
from box_memory.store.cloud.items import is_folder, logical_keys, split_path
from box_memory.store.cloud.listings import Kept, root_signature, usable
from box_memory.store.cloud.state import CloudState

__all__ = ["PREFETCH_CONCURRENCY", "Folders"]

PREFETCH_CONCURRENCY = 4


def _list_limit() -> int:
    """Page size of folder listings (env `BOX_MEMORY_LIST_LIMIT` lets tests force paging)."""
    return settings.list_limit()


def _month_parent(path: str) -> bool:
    """A memories folder (`memories`, `teams/<t>/memories`): its month folders are found from the
    pages before its first file (`Folders.subfolders`)."""
    return path.rpartition("/")[2] == "memories"


class Folders(CloudState):
    """Listings and path resolution over the cloud store's state."""

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
        self._pins.clear()  # found before the drop: a writer (the lock) lists them afresh
        self._unlisted.clear()
        self._no_other_index = False
        self._prefetched = False
        self._first_pages.clear()
        self._leading.clear()
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
        stashed = self._first_pages.pop(folder_id, None)
        if first is None and stashed is not None:
            listed_at, first = stashed
        items: dict[str, dict[str, Any]] = {}
        pager = Pager(_list_limit())
        for _ in range(100_000):
            args: dict[str, Any] = {"folder_id": folder_id, "fields": LIST_FIELDS, **pager.args()}
            try:
                fetched = first is None
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
            self.list_calls += fetched  # a page handed in was counted by whoever fetched it
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
        parent, name = split_path(path)
        pid = self.folder_id(parent, logical=logical)
        if pid is None:
            return None
        told, item = self._month_folder(parent, pid, name)
        if not told:
            item = self._find(self._list(pid), name)
        if item is None or not is_folder(item):
            return None
        self._paths[path] = str(item["id"])
        return self._paths[path]

    def _forget_path(self, path: str) -> None:
        for p in [p for p in self._paths if p == path or p.startswith(path + "/")]:
            fid = self._paths.pop(p)
            self._listings.pop(fid, None)
            self._leading.pop(fid, None)
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
        unlisted = set(self._unlisted.values())  # read through their pinned index (pins.py)
        wanted = [
            (p, fid)
            for p, fid in self._logical_ids().items()
            if p != "teams" and fid not in self._listings and fid not in unlisted
        ]
        if len(wanted) < 2:
            return
        args = {"fields": LIST_FIELDS, "limit": _list_limit()}
        asked_at = time.time()
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
            self.list_calls += 1
            # Kept, not followed: a folder's other pages are read only when its listing is asked
            # for (a write under the monthly layout never needs the 100,000 files of memories/).
            self._first_pages[fid] = (asked_at, page)

    def subfolders(self, path: str, match: Callable[[str], object]) -> list[str]:
        """Names `match` accepts of the folders directly in workspace folder `path` ([] when it
        does not exist).

        Box lists a folder's subfolders before its files (box-mcp.md, section 3; a listing by name
        also puts `YYYY-MM` before any memory file), so the pages up to the first file answer: one
        page for a `memories/` of 100,000 files. Their ids are remembered for `folder_id`. When a
        page shows a folder after a file, fails, or holds no file at all, the folder is listed
        whole instead."""
        path = clean_path(path)
        if path:
            self._prefetch_folders()
        fid = self.folder_id(path)
        if fid is None:
            return []
        found = None if fid in self._listings else self._leading_folders(fid)
        if found is None:
            try:
                items = self._list(fid)
            except NotFound:
                return []
            return [n for n, it in items.items() if is_folder(it) and match(n)]
        names = [n for n in found if match(n)]
        for name in names:
            self._paths[f"{path}/{name}" if path else name] = str(found[name]["id"])
        return names

    def _month_folder(self, parent: str, pid: str, name: str) -> tuple[bool, dict[str, Any] | None]:
        """(True, folder `name` or None when there is none) from the pages of memories folder
        `parent` (Box id `pid`) before its first file, when it is not listed yet (see
        `subfolders`): a month folder is found, or known to be missing, without listing the
        100,000 files beside it. (False, None) when those pages cannot tell, or `parent` is no
        memories folder: the caller lists it whole."""
        if "." in name or not _month_parent(parent) or pid in self._listings:
            return False, None
        found = self._leading_folders(pid)
        if found is None:
            return False, None
        item = self._find(found, name)
        if item is not None:
            self._paths[join(parent, str(item["name"]))] = str(item["id"])
        return True, item

    def _leading_folders(self, folder_id: str) -> dict[str, dict[str, Any]] | None:
        """The folders a listing shows before its first file, or None (see `subfolders`)."""
        if folder_id in self._leading:
            return self._leading[folder_id]
        found = self._leading[folder_id] = self._read_leading(folder_id)
        return found

    def _read_leading(self, folder_id: str) -> dict[str, dict[str, Any]] | None:
        found: dict[str, dict[str, Any]] = {}
        pager = Pager(_list_limit())
        stashed = self._first_pages.get(folder_id)
        first = stashed[1] if stashed is not None else None
        for _ in range(100):
            try:
                if first is None:
                    args = {"folder_id": folder_id, "fields": LIST_FIELDS, **pager.args()}
                    payload = self.call("list_folder_content_by_folder_id", args)
                    self.list_calls += 1
                else:
                    payload, first = first, None
                page = listing(payload)
            except BoxMemoryError:
                return None
            file_seen = False
            for it in page.entries:
                if is_folder(it) and it.get("name") is not None and it.get("id") is not None:
                    if file_seen:
                        return None  # not folders first: list it whole
                    found[str(it["name"])] = it
                elif it.get("type") in ("file", "web_link"):
                    file_seen = True
            if file_seen:
                return found
            if not pager.advance(page):
                return None
        return None

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
        parent, name = split_path(path)
        pin = self._pins.get(path)
        if pin is not None and self._unlisted.get(parent) not in self._listings:
            return pin  # found by its Box file id (pins.py): the folder is not listed for it
        if _month_parent(parent):  # a month's `YYYY-MM`, perhaps
            self._prefetch_folders()
            pid = self.folder_id(parent)
            known, found = (False, None) if pid is None else self._month_folder(parent, pid, name)
            if known:
                return found
        items = self._items(parent)
        return None if items is None else self._find(items, name)

    def _remember(self, parent_id: str, obj: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
        """Put an object our write got back into the cached listing of its folder."""
        items = self._listings.get(parent_id)
        if obj is None or obj.get("id") is None or not obj.get("name"):
            self._listings.pop(parent_id, None)  # unknown answer shape: re-list when needed
            self._leading.pop(parent_id, None)
            return None
        lead = self._leading.get(parent_id)
        if lead is not None and is_folder(obj):
            lead[str(obj["name"])] = obj  # a folder we made: among the folders before the files
        if items is not None:
            stale = self._find(items, name)
            if stale is not None:
                items.pop(str(stale.get("name")), None)
            items[str(obj["name"])] = obj
        return obj

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
