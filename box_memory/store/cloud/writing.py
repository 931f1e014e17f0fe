"""Writing to the cloud store: uploads (create-or-fail, new versions), folders created, moves of
files and folders. Each write puts the object Box returns into the cached listing of its folder
and its text into the content cache, so the command reads it back without a call.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

from box_memory import settings
from box_memory.box.payload import conflicts
from box_memory.errors import BoxToolError, InvalidInput, NotFound, TooLargeForBox, ToolMissing
from box_memory.format.model import CONFIG_NAME
from box_memory.store.base import AlreadyExists, clean_path, join
from box_memory.store.cloud.items import as_object, is_folder, item_sha1, sha1_of, split_path
from box_memory.store.cloud.metadata import Metadata

__all__ = ["UPLOAD_LIMIT_BYTES", "Writing", "box_upload_limit"]

# Box's direct upload takes a file of up to 50 MB in one request; bigger files need the chunked
# upload API (https://developer.box.com/guides/uploads/), and Box's MCP server offers only the
# direct `upload_file` / `upload_file_version`. 50,000,000 bytes: the smaller reading of "50MB".
UPLOAD_LIMIT_BYTES = 50_000_000


def box_upload_limit() -> int:
    """UPLOAD_LIMIT_BYTES, or lower when the environment says so (settings.box_upload_max_bytes)."""
    return settings.box_upload_max_bytes(UPLOAD_LIMIT_BYTES)


class Writing(Metadata):
    """Uploads, folders and moves over the cloud store's reads and metadata."""

    def upload_limit(self) -> int | None:
        """The largest file one upload may carry (Box's direct upload)."""
        return box_upload_limit()

    @staticmethod
    def _text(path: str, data: bytes) -> str:
        limit = box_upload_limit()
        if len(data) > limit:
            raise TooLargeForBox(
                f"{path} would be {len(data) / 1e6:.1f} MB, over the {limit / 1e6:g} MB Box takes in "
                "one upload (Box's MCP server offers no chunked upload); nothing was uploaded"
            )
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
            if clash is not None and item_sha1(clash) == sha1_of(data) and not is_folder(clash):
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
            obj["sha1"] = sha1_of(data)
        kept = self._remember(parent_id, obj, name)
        if kept is None:
            kept = self._find(self._list(parent_id), name)
            if kept is None:
                raise BoxToolError(f"Box accepted {path} but the file is not in its folder")
        fid = str(kept["id"])
        self.cache.put(fid, item_sha1(kept) or sha1_of(data), data)
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
        parent, name = split_path(path)
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
        parent, name = split_path(path)
        pid = self._ensure_folder(parent)
        there = self._find(self._list(pid), name)
        if there is not None:
            if not is_folder(there) and item_sha1(there) == sha1_of(data):
                return str(there["id"])  # exactly these bytes: an earlier attempt of ours landed
            raise AlreadyExists(f"{path} already exists")
        return str(self._upload_new(pid, name, data, path)["id"])

    def _ensure_folder(self, path: str) -> str:
        path = clean_path(path)
        fid = self.folder_id(path)
        if fid is not None:
            return fid
        parent, name = split_path(path)
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
        parent, name = split_path(path)
        pid = self._ensure_folder(parent)
        return str(self._upload_version(pid, file_id, name, data, path)["id"])

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
        sparent, _ = split_path(src)
        dparent, dname = split_path(dst)
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
