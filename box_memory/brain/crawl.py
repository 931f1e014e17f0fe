"""Breadth-first crawl of one folder tree, with the rules that say whether it saw everything.

Deletion is only safe after a COMPLETE crawl, so the crawl is strict about what it did not see:
a repeated marker, a folder below the depth limit, a page that failed, or the item cap reached
while anything was left unlisted (a further page, queued folders, or entries of the current page
beyond the cap) all make it incomplete. The same crawler walks Box (through the MCP listing tool)
and a local Box Drive folder (the file system is the listing).
"""

from __future__ import annotations

import datetime as dt
import os
import stat as statmod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from box_memory.box.payload import CRAWL_FIELDS, Page, Pager, listing
from box_memory.brain.entry import clean_name, clean_path, safe_url
from box_memory.errors import BackendUnavailable, BoxMemoryError, BoxToolError
from box_memory.format.names import nfc, resolve_nfc

MAX_DEPTH = 12
PAGE_LIMIT = 100
LIST_TOOL = "list_folder_content_by_folder_id"

Progress = Callable[[str, int, int | None], None]


@dataclass(frozen=True)
class RemoteFile:
    """One file as the listing describes it (already sanitised)."""

    id: str
    name: str
    path: str
    parent_id: str | None
    size: int | None
    etag: str | None
    version_id: str | None
    sha1: str | None
    modified_at: str | None
    url: str | None

    def signature(self) -> dict[str, Any]:
        return {
            "etag": self.etag,
            "version_id": self.version_id,
            "sha1": self.sha1,
            "name": self.name,
            "size": self.size,
            "path": self.path,
            "parent_id": self.parent_id,
            "modified_at": self.modified_at,
        }

    def meta(self) -> dict[str, Any]:
        return {**self.signature(), "url": self.url}


@dataclass
class CrawlResult:
    files: list[RemoteFile] = field(default_factory=list)
    complete: bool = True
    reasons: list[str] = field(default_factory=list)
    pages: int = 0
    folders: int = 0

    def incomplete(self, reason: str) -> None:
        self.complete = False
        if reason not in self.reasons and len(self.reasons) < 20:
            self.reasons.append(reason)


class Lister(Protocol):
    kind: str

    def page(self, folder_id: str, *, limit: int, marker: str | None, offset: int) -> Page: ...


def _str(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _box_path(entry: dict[str, Any], fallback: str) -> str:
    """`All Files/a/b/name` from the entry's path_collection when the server sent one."""
    pc = entry.get("path_collection")
    names: list[str] = []
    if isinstance(pc, dict) and isinstance(pc.get("entries"), list):
        for part in pc["entries"]:
            if isinstance(part, dict) and part.get("name"):
                names.append(clean_name(part["name"]))
    if names:
        return clean_path("/".join([*names, clean_name(entry.get("name"))]))
    return clean_path(fallback)


def remote_file(entry: dict[str, Any], folder_id: str, folder_path: str, kind: str) -> RemoteFile | None:
    """A listing entry as a RemoteFile; None when it has no usable id."""
    file_id = _str(entry.get("id"))
    if file_id is None:
        return None
    name = clean_name(entry.get("name")) or file_id
    rel = f"{folder_path}/{name}" if folder_path else name
    version = entry.get("file_version")
    version_id = _str(version.get("id")) if isinstance(version, dict) else None
    if kind == "local":
        return RemoteFile(
            id=file_id,
            name=name,
            path=clean_path(rel),
            parent_id=folder_id or None,
            size=_int(entry.get("size")),
            etag=None,
            version_id=None,
            sha1=None,
            modified_at=_str(entry.get("modified_at")),
            url=None,
        )
    link = entry.get("shared_link")
    candidate = link.get("url") if isinstance(link, dict) else None
    candidate = candidate or entry.get("web_url") or entry.get("url")
    return RemoteFile(
        id=file_id,
        name=name,
        path=_box_path(entry, rel),
        parent_id=folder_id,
        size=_int(entry.get("size")),
        etag=_str(entry.get("etag")),
        version_id=version_id,
        sha1=_str(entry.get("sha1")),
        modified_at=_str(entry.get("modified_at")),
        url=safe_url(candidate, file_id),
    )


def crawl(
    lister: Lister,
    root_id: str,
    *,
    cap: int,
    max_depth: int = MAX_DEPTH,
    progress: Progress | None = None,
) -> CrawlResult:
    """Breadth-first from `root_id`: at most `cap` files, folders queued down to `max_depth`.

    A listing failure of the root folder, or the backend becoming unavailable, raises (the run
    fails); a later page failing after the client's retries only makes the crawl incomplete.
    """
    result = CrawlResult()
    seen_files: set[str] = set()
    seen_folders: set[str] = {root_id}
    queue: deque[tuple[str, str, int]] = deque([(root_id, "", 0)])
    limit = max(1, min(PAGE_LIMIT, cap))
    while queue:
        folder_id, folder_path, depth = queue.popleft()
        result.folders += 1
        pager = Pager(limit)
        where = folder_path or folder_id
        while True:
            # At the cap the next page is still read: only an entry on it proves something was left.
            try:
                page = lister.page(folder_id, limit=limit, marker=pager.marker, offset=pager.offset)
            except BackendUnavailable:
                raise
            except BoxMemoryError as exc:
                if folder_id == root_id and result.pages == 0:
                    raise
                result.incomplete(f"listing {where} failed: {exc}")
                break
            result.pages += 1
            for index, entry in enumerate(page.entries):
                if len(result.files) >= cap:
                    left = len(page.entries) - index
                    result.incomplete(f"item cap {cap} reached with {left} more entries on the page")
                    return _rest_unlisted(result, queue, cap)
                kind = entry.get("type")
                if kind == "folder":
                    sub_id = _str(entry.get("id"))
                    if sub_id is None or sub_id in seen_folders:
                        continue
                    name = clean_name(entry.get("name")) or sub_id
                    sub_path = f"{folder_path}/{name}" if folder_path else name
                    if depth + 1 > max_depth:
                        result.incomplete(f"depth limit {max_depth} hides folder {clean_path(sub_path)}")
                        continue
                    seen_folders.add(sub_id)
                    queue.append((sub_id, sub_path, depth + 1))
                elif kind == "unreadable":  # skipped with its reason: the run ends `partial`
                    result.incomplete(f"skipped {clean_path(entry.get('id'))}: {entry.get('reason')}")
                elif kind == "file":
                    rf = remote_file(entry, folder_id, folder_path, lister.kind)
                    if rf is None or rf.id in seen_files:
                        continue
                    seen_files.add(rf.id)
                    result.files.append(rf)
            if progress is not None:
                progress("crawl", len(result.files), None)
            if not pager.advance(page):
                break
        if pager.incomplete:
            result.incomplete(f"listing {where}: {pager.incomplete}")
    return result


def _rest_unlisted(result: CrawlResult, queue: deque[tuple[str, str, int]], cap: int) -> CrawlResult:
    if queue:
        result.incomplete(f"item cap {cap} reached with {len(queue)} folders still queued")
    return result


# ---------------------------------------------------------------------------------------------
# Listers


class BoxLister:
    """Pages of a Box folder through `list_folder_content_by_folder_id` (marker or offset paging)."""

    kind = "box"

    def __init__(self, client: Any) -> None:
        self.client = client

    def page(self, folder_id: str, *, limit: int, marker: str | None, offset: int) -> Page:
        args: dict[str, Any] = {"folder_id": folder_id, "limit": limit, "fields": CRAWL_FIELDS}
        if marker:
            args["marker"] = marker
        elif offset:
            args["offset"] = offset
        return listing(self.client.call(LIST_TOOL, args), tool=LIST_TOOL)


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class LocalLister:
    """A local (Box Drive) folder as Box-shaped pages; ids are paths relative to the root.

    Symlinks are never followed and dot files (`.DS_Store`, sync tool state) are left out.
    """

    kind = "local"

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, list[dict[str, Any]]] = {}

    def _entries(self, folder_id: str) -> list[dict[str, Any]]:
        if folder_id in self._cache:
            return self._cache[folder_id]
        directory = resolve_nfc(self.root, folder_id)
        try:
            scanned = list(os.scandir(directory))
        except FileNotFoundError:
            if not folder_id:
                raise BackendUnavailable(
                    f"Box Drive folder {self.root} is missing (is Box Drive running?)"
                ) from None
            raise BoxToolError(f"folder {folder_id} vanished during the crawl", status=404) from None
        except OSError as exc:
            if not folder_id:
                raise BackendUnavailable(f"cannot read folder {self.root}: {exc.strerror or exc}") from None
            raise BoxToolError(f"cannot read folder {folder_id}: {exc.strerror or exc}") from None
        out: list[dict[str, Any]] = []
        for item in scanned:
            if item.name.startswith(".") or item.is_symlink():
                continue
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            try:
                item.name.encode("utf-8")
            except UnicodeEncodeError:  # a name that is not UTF-8 (bytes kept as surrogates)
                raw = f"{folder_id}/{item.name}" if folder_id else item.name
                shown = os.fsencode(raw).decode("utf-8", "backslashreplace")
                out.append(
                    {
                        "type": "unreadable",
                        "id": shown,
                        "name": shown,
                        "reason": "its name is not valid UTF-8",
                    }
                )
                continue
            # Ids and names are NFC: macOS hands back NFD names for files other clients made,
            # and one file must keep one id whichever form the disk shows this time.
            name = nfc(item.name)
            rel = f"{folder_id}/{name}" if folder_id else name
            if statmod.S_ISDIR(st.st_mode):
                out.append({"type": "folder", "id": rel, "name": name})
            elif statmod.S_ISREG(st.st_mode):
                out.append(
                    {
                        "type": "file",
                        "id": rel,
                        "name": name,
                        "size": st.st_size,
                        "modified_at": _iso(st.st_mtime),
                    }
                )
        out.sort(key=lambda e: (e["type"] != "folder", e["name"].casefold(), e["name"]))
        self._cache[folder_id] = out
        return out

    def page(self, folder_id: str, *, limit: int, marker: str | None, offset: int) -> Page:
        entries = self._entries(folder_id)
        chunk = entries[offset : offset + limit]
        if offset + len(chunk) >= len(entries):
            self._cache.pop(folder_id, None)
        return Page(entries=chunk, total_count=len(entries), offset=offset, limit=limit)
