"""A local folder's Box bookkeeping: ids, etags, versions and metadata kept beside it.

The served folder holds only the user's files; everything Box knows that a file system does not
(ids, etags, sequence ids, versions, descriptions, tags, metadata instances, templates) lives in a
SQLite database OUTSIDE the folder, so ids survive restarts and another process may edit the folder
behind the emulator's back. Such edits are noticed on access: a changed size or mtime triggers a
re-hash, and a changed sha1 bumps etag, sequence id and file version like a new upload would.

Guesses about the real service (not confirmed by Box documentation):
- an item removed on disk simply disappears (404 afterwards); an item renamed or moved on disk by
  another process gets a NEW id, because the emulator cannot tell a rename from delete + create;
- folder etags change only when the folder itself is renamed or moved, never for content changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat as statmod
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from box_memory.emulator.boxapi import (
    ROOT_ID,
    BoxApiError,
    Item,
    bad_request,
    not_found,
    sort_key,
    validate_name,
)

TEXT_LIMIT_BYTES = 50 * 1024 * 1024
TMP_PREFIX = ".box-emulator-tmp-"


FIRST_ITEM_ID = 1722847291673
FIRST_VERSION_ID = 1890431558201


# Extensions Box would extract text from with its own converters; the emulator has none, so these
# answer "no text representation" even when the bytes happen to decode.
BINARY_EXTENSIONS = frozenset(
    [
        "pdf",
        "doc",
        "docx",
        "xls",
        "xlsx",
        "ppt",
        "pptx",
        "png",
        "jpg",
        "jpeg",
        "gif",
        "bmp",
        "tiff",
        "webp",
        "heic",
        "zip",
        "gz",
        "tgz",
        "7z",
        "rar",
        "mp3",
        "mp4",
        "mov",
        "avi",
        "wav",
        "exe",
        "dll",
        "so",
        "bin",
        "dmg",
        "iso",
    ]
)


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def _hash_file(path: Path) -> str:
    digest = hashlib.sha1(usedforsecurity=False)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class BoxState:
    """The folder plus its Box bookkeeping. Thread-safe: every public method holds one lock.
    `boxfs.BoxFS` adds the Box JSON shapes."""

    def __init__(self, root: Path, state: Path) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.state = Path(state).resolve()
        if self.state == self.root or self.root in self.state.parents:
            raise ValueError(f"state {self.state} must live outside the served folder {self.root}")
        self.state.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(
            self.state / "state.sqlite3", check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(
            """
            CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, path TEXT NOT NULL, data TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS templates (
                scope TEXT NOT NULL, key TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (scope, key));
            CREATE TABLE IF NOT EXISTS hubs (id TEXT PRIMARY KEY, data TEXT NOT NULL);
            """
        )
        self._items: dict[str, Item] = {}
        self._by_path: dict[str, str] = {}
        self._children: dict[str, set[str]] = {}
        # Folder sizes (`folder_size`): every folder's, summed in one pass over the items, kept
        # until an item is saved or dropped (`_changes` counts those).
        self._changes = 0
        self._sizes: tuple[int, dict[str, int]] = (-1, {})
        for (data,) in self._db.execute("SELECT data FROM items"):
            item = Item(**json.loads(data))
            self._index(item)
        if ROOT_ID not in self._items:
            self._index(Item(id=ROOT_ID, type="folder", path=""))

    # -- bookkeeping -------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _kv_next(self, key: str, first: int) -> str:
        row = self._db.execute("SELECT v FROM kv WHERE k = ?", (key,)).fetchone()
        n = int(row[0]) if row else first
        step = 1 + (n * 7919) % 97  # irregular gaps: clients must not assume consecutive ids
        self._db.execute("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", (key, str(n + step)))
        return str(n)

    def _new_item_id(self) -> str:
        return self._kv_next("next_item_id", FIRST_ITEM_ID)

    def _new_version_id(self) -> str:
        return self._kv_next("next_version_id", FIRST_VERSION_ID)

    def _index(self, item: Item) -> None:
        self._items[item.id] = item
        self._by_path[item.path] = item.id
        if item.parent_path is not None:
            self._children.setdefault(item.parent_path, set()).add(item.path)

    def _unindex(self, item: Item) -> None:
        self._changes += 1
        self._items.pop(item.id, None)
        if self._by_path.get(item.path) == item.id:
            del self._by_path[item.path]
        if item.parent_path is not None:
            self._children.get(item.parent_path, set()).discard(item.path)

    def _save(self, item: Item) -> None:
        self._changes += 1
        if item.is_root:
            return
        self._db.execute(
            "INSERT OR REPLACE INTO items (id, path, data) VALUES (?, ?, ?)",
            (item.id, item.path, json.dumps(asdict(item))),
        )

    def _forget(self, item: Item) -> None:
        """Drop an item that vanished from disk, with everything that was under it."""
        doomed = [item]
        if item.type == "folder":
            prefix = item.path + "/"
            doomed += [self._items[i] for p, i in list(self._by_path.items()) if p.startswith(prefix)]
        for gone in doomed:
            self._unindex(gone)
            self._db.execute("DELETE FROM items WHERE id = ?", (gone.id,))
        self._children.pop(item.path, None)

    def _bump(self, item: Item) -> None:
        item.etag += 1
        item.sequence_id += 1

    def _new_content(self, item: Item, st: os.stat_result, sha1: str, when: float) -> None:
        """A new file version: Box bumps etag, sequence id and the file version together."""
        self._bump(item)
        item.version_id = self._new_version_id()
        item.version_number += 1
        item.sha1 = sha1
        item.size = st.st_size
        item.mtime_ns = st.st_mtime_ns
        item.modified_at = item.content_modified_at = when
        item.changed_at = when

    def _discover(self, rel: str, st: os.stat_result, *, now: float | None = None) -> Item:
        """Give an item first seen on disk (or just created by a tool) its Box identity."""
        stale = self._by_path.get(rel)
        if stale is not None:
            self._forget(self._items[stale])
        when = now if now is not None else st.st_mtime
        if statmod.S_ISDIR(st.st_mode):
            item = Item(
                id=self._new_item_id(),
                type="folder",
                path=rel,
                created_at=when,
                modified_at=when,
                content_modified_at=when,
                changed_at=when,
                mtime_ns=st.st_mtime_ns,
            )
        else:
            item = Item(
                id=self._new_item_id(),
                type="file",
                path=rel,
                created_at=when,
                modified_at=when,
                content_modified_at=when,
                changed_at=when,
                version_id=self._new_version_id(),
                version_number=1,
                sha1=_hash_file(self.root / rel),
                size=st.st_size,
                mtime_ns=st.st_mtime_ns,
            )
        self._index(item)
        self._save(item)
        return item

    def _apply_stat(self, item: Item, st: os.stat_result) -> Item:
        """Notice edits made behind the emulator's back (size/mtime change -> re-hash)."""
        if item.type == "file":
            if (st.st_size, st.st_mtime_ns) != (item.size, item.mtime_ns):
                sha1 = _hash_file(self.root / item.path)
                if sha1 != item.sha1:
                    self._new_content(item, st, sha1, st.st_mtime)
                else:
                    item.size, item.mtime_ns = st.st_size, st.st_mtime_ns
                self._save(item)
        elif st.st_mtime_ns != item.mtime_ns:
            item.mtime_ns = st.st_mtime_ns
            item.modified_at = st.st_mtime
            self._save(item)
        return item

    def _refresh(self, item: Item) -> Item:
        if item.is_root:
            return item
        try:
            st = (self.root / item.path).lstat()
        except (FileNotFoundError, NotADirectoryError):
            self._forget(item)
            raise not_found() from None
        kind = "folder" if statmod.S_ISDIR(st.st_mode) else "file" if statmod.S_ISREG(st.st_mode) else None
        if kind != item.type:
            self._forget(item)
            raise not_found()
        return self._apply_stat(item, st)

    def _scan(self, folder: Item) -> list[Item]:
        """The folder's children as on disk right now, ids assigned, vanished ones forgotten."""
        seen: set[str] = set()
        out: list[Item] = []
        try:
            entries = list(os.scandir(self.root / folder.path))
        except (FileNotFoundError, NotADirectoryError):
            self._forget(folder)
            raise not_found() from None
        for entry in entries:
            if entry.name.startswith(TMP_PREFIX) or entry.is_symlink():
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if not (statmod.S_ISDIR(st.st_mode) or statmod.S_ISREG(st.st_mode)):
                continue
            rel = _join(folder.path, entry.name)
            seen.add(rel)
            known_id = self._by_path.get(rel)
            item = self._items.get(known_id) if known_id else None
            kind = "folder" if statmod.S_ISDIR(st.st_mode) else "file"
            if item is None or item.type != kind:
                item = self._discover(rel, st)
            else:
                self._apply_stat(item, st)
            out.append(item)
        for stale in list(self._children.get(folder.path, set()) - seen):
            stale_id = self._by_path.get(stale)
            if stale_id:
                self._forget(self._items[stale_id])
        out.sort(key=sort_key)
        return out

    def _ancestors(self, item: Item) -> list[Item]:
        """Folders from the root down to the item's parent, creating ids where missing."""
        chain = [self._items[ROOT_ID]]
        if not item.path:
            return []
        parts = item.path.split("/")[:-1]
        rel = ""
        for part in parts:
            rel = _join(rel, part)
            known = self._by_path.get(rel)
            if known is None:
                chain.append(self._discover(rel, (self.root / rel).lstat()))
            else:
                chain.append(self._items[known])
        return chain

    # -- lookups -----------------------------------------------------------------------------

    def get(self, item_id: Any, kind: str | None = None) -> Item:
        """The item with that id, refreshed from disk; 404 if unknown, gone or of another kind."""
        with self._lock:
            item = self._items.get(str(item_id).strip())
            if item is None or (kind is not None and item.type != kind):
                raise not_found()
            return self._refresh(item)

    def children(self, folder: Item) -> list[Item]:
        with self._lock:
            return self._scan(folder)

    def walk(self, folder: Item) -> Iterator[Item]:
        """Every item under the folder, depth first, in listing order."""
        with self._lock:
            items = self._scan(folder)
        for item in items:
            yield item
            if item.type == "folder":
                yield from self.walk(item)

    def id_for_path(self, rel: str | Path) -> str:
        """The Box id of a path relative to the root (assigning one if needed); for tests and demos."""
        rel_str = Path(rel).as_posix().strip("/")
        if rel_str in ("", "."):
            return ROOT_ID
        with self._lock:
            folder = self._items[ROOT_ID]
            parts = rel_str.split("/")
            for i, part in enumerate(parts):
                match = next((c for c in self._scan(folder) if c.name == part), None)
                if match is None:
                    raise not_found()
                if i == len(parts) - 1:
                    return match.id
                folder = match
        raise not_found()  # pragma: no cover - the loop always returns or raises

    def parent(self, item: Item) -> Item:
        """The folder holding the item (the root for top-level items)."""
        with self._lock:
            chain = self._ancestors(item)
            if not chain:
                raise not_found()
            return chain[-1]

    def path_of(self, item: Item) -> Path:
        return self.root / item.path

    def read_bytes(self, item: Item) -> bytes:
        with self._lock:
            self._refresh(item)
            return self.path_of(item).read_bytes()

    def text_of(self, item: Item) -> str | None:
        """The text representation: UTF-8 text as is; None for binaries (no representation)."""
        with self._lock:
            self._refresh(item)
            if item.size > TEXT_LIMIT_BYTES:
                raise bad_request(
                    "File size exceeds the 50 MB limit for text extraction", "file_size_limit_exceeded"
                )
            ext = item.name.rsplit(".", 1)[-1].lower() if "." in item.name else ""
            if ext in BINARY_EXTENSIONS:
                return None
            data = self.path_of(item).read_bytes()
        if b"\x00" in data:
            return None
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None

    def folder_size(self, folder: Item) -> int:
        """Bytes in the files under the folder, as far as the emulator has seen them.

        Box keeps a folder's `size` as a field of the folder and hands it back with every listing
        that asks for it; it does not add the tree up per call. Walking the tree here made a
        listing of a workspace's root cost a stat of every file below it (1.5 s at 100,000
        memories). Sizes are summed for every folder at once, from the items known, and kept
        until an item changes: a file put on disk behind the emulator's back counts once a
        listing or a search has seen it.
        """
        with self._lock:
            if self._sizes[0] != self._changes:
                sizes: dict[str, int] = {}
                for item in self._items.values():
                    if item.type != "file" or item.name.startswith(TMP_PREFIX):
                        continue
                    parts = item.path.split("/")[:-1]
                    for depth in range(len(parts) + 1):  # the root (""), then each folder down
                        folder_path = "/".join(parts[:depth])
                        sizes[folder_path] = sizes.get(folder_path, 0) + item.size
                self._sizes = (self._changes, sizes)
            return self._sizes[1].get(folder.path, 0)

    def known_bytes(self) -> int:
        """Bytes in the files seen so far (cheap: no walk of the whole tree)."""
        with self._lock:
            return sum(i.size for i in self._items.values() if i.type == "file")

    def find_conflict(self, folder: Item, name: str, *, ignore: str | None = None) -> Item | None:
        """An item in the folder with the same name, case-insensitively, files and folders alike."""
        folded = name.casefold()
        with self._lock:
            return next(
                (c for c in self._scan(folder) if c.name.casefold() == folded and c.id != ignore), None
            )

    # -- writes ------------------------------------------------------------------------------

    def _write_tmp(self, folder: Item, data: bytes) -> Path:
        tmp = self.path_of(folder) / f"{TMP_PREFIX}{uuid.uuid4().hex}"
        with tmp.open("xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp

    def _link_no_clobber(self, src: Path, dst: Path) -> None:
        """Put src at dst without ever replacing an existing dst (409 instead)."""
        try:
            os.link(src, dst)
        except FileExistsError:
            raise BoxApiError(409, "item_name_in_use", "Item with the same name already exists") from None
        except OSError:  # no hard links on this file system: fall back to a checked rename
            if dst.exists():
                raise BoxApiError(409, "item_name_in_use", "Item with the same name already exists") from None
            src.rename(dst)
            return
        src.unlink()

    def upload(self, folder: Item, name: str, data: bytes, conflict: Any) -> Item:
        """Create a new file; `conflict(existing)` builds the 409 for a name already in use."""
        validate_name(name)
        with self._lock:
            self._refresh(folder)
            existing = self.find_conflict(folder, name)
            if existing is not None:
                raise conflict(existing)
            tmp = self._write_tmp(folder, data)
            try:
                self._link_no_clobber(tmp, self.path_of(folder) / name)
            finally:
                tmp.unlink(missing_ok=True)
            rel = _join(folder.path, name)
            now = time.time()
            return self._discover(rel, (self.root / rel).lstat(), now=now)

    def new_version(self, item: Item, data: bytes) -> Item:
        """Replace the content atomically; Box makes a new version even for identical bytes."""
        with self._lock:
            self._refresh(item)
            folder_path = self.path_of(item).parent
            tmp = folder_path / f"{TMP_PREFIX}{uuid.uuid4().hex}"
            with tmp.open("xb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            tmp.replace(self.path_of(item))
            st = self.path_of(item).lstat()
            self._new_content(item, st, hashlib.sha1(data, usedforsecurity=False).hexdigest(), time.time())
            self._save(item)
            return item

    def create_folder(self, parent: Item, name: str, conflict: Any) -> Item:
        validate_name(name)
        with self._lock:
            self._refresh(parent)
            existing = self.find_conflict(parent, name)
            if existing is not None:
                raise conflict(existing)
            target = self.path_of(parent) / name
            try:
                target.mkdir()
            except FileExistsError:
                raise BoxApiError(409, "item_name_in_use", "Item with the same name already exists") from None
            rel = _join(parent.path, name)
            return self._discover(rel, target.lstat(), now=time.time())

    def move(self, item: Item, parent: Item, name: str, conflict: Any) -> Item:
        """Move and/or rename a file without clobbering anything at the destination."""
        validate_name(name)
        with self._lock:
            self._refresh(item)
            self._refresh(parent)
            new_rel = _join(parent.path, name)
            if new_rel == item.path:
                return item
            existing = self.find_conflict(parent, name, ignore=item.id)
            if existing is not None:
                raise conflict(existing)
            src, dst = self.path_of(item), self.path_of(parent) / name
            if new_rel.casefold() == item.path.casefold():
                src.rename(dst)  # case-only rename of the same entry
            else:
                self._link_no_clobber(src, dst)
            self._unindex(item)
            item.path = new_rel
            self._index(item)
            self._bump(item)
            item.modified_at = item.changed_at = time.time()
            self._save(item)
            return item

    def move_folder(self, item: Item, parent: Item, name: str, conflict: Any) -> Item:
        """Move and/or rename a folder with everything in it (ids are kept, paths follow)."""
        validate_name(name)
        with self._lock:
            self._refresh(item)
            self._refresh(parent)
            new_rel = _join(parent.path, name)
            if new_rel == item.path:
                return item
            if item.is_root or (new_rel + "/").startswith(item.path + "/"):
                raise bad_request("A folder cannot be moved into itself", "bad_request")
            existing = self.find_conflict(parent, name, ignore=item.id)
            if existing is not None:
                raise conflict(existing)
            src, dst = self.path_of(item), self.path_of(parent) / name
            if dst.exists():
                raise BoxApiError(409, "item_name_in_use", "Item with the same name already exists")
            old = item.path
            src.rename(dst)
            moved = [i for i in self._items.values() if i.path == old or i.path.startswith(old + "/")]
            for i in moved:
                self._unindex(i)
            for key in [k for k in self._children if k == old or k.startswith(old + "/")]:
                self._children.pop(key, None)
            for i in moved:
                i.path = new_rel + i.path[len(old) :]
                self._index(i)
                self._save(i)
            self._bump(item)
            item.modified_at = item.changed_at = time.time()
            self._save(item)
            return item

    def ancestry(self, item: Item) -> list[Item]:
        """The item and every folder above it, up to the root."""
        with self._lock:
            return [item, *self._ancestors(item)]

    def update_properties(
        self, item: Item, *, description: str | None = None, tags: list[str] | None = None
    ) -> Item:
        with self._lock:
            self._refresh(item)
            if description is not None:
                item.description = description
            if tags is not None:
                item.tags = [str(t) for t in tags]
            self._bump(item)
            item.modified_at = time.time()
            self._save(item)
            return item

    def set_metadata(self, item: Item, key: str, instance: dict[str, Any]) -> None:
        with self._lock:
            self._refresh(item)
            item.metadata[key] = instance
            self._save(item)

    # -- metadata templates ------------------------------------------------------------------

    def templates(self, scope: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute("SELECT data FROM templates WHERE scope = ? ORDER BY key", (scope,))
            return [json.loads(data) for (data,) in rows]

    def template(self, scope: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT data FROM templates WHERE scope = ? AND key = ?", (scope, key)
            ).fetchone()
            return json.loads(row[0]) if row else None

    def add_template(self, scope: str, key: str, template: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO templates (scope, key, data) VALUES (?, ?, ?)",
                (scope, key, json.dumps(template)),
            )

    # -- Box Hubs ----------------------------------------------------------------------------
    # A hub is a named set of files and folders Box AI answers over. Box offers no API to
    # discover a hub's id (it is copied from the Box web app), so tests and demos make hubs here.
    # A hub is "indexing" until `ready_at`: Box AI cannot answer over it yet.

    def add_hub(self, title: str, items: list[str], *, indexing_s: float = 0.0) -> str:
        """A new hub over the given item ids; its id."""
        with self._lock:
            for item_id in items:
                self.get(item_id)
            hub_id = str(9_000_000 + len(self._db.execute("SELECT id FROM hubs").fetchall()) + 1)
            data = {"id": hub_id, "title": title, "items": list(items), "ready_at": time.time() + indexing_s}
            self._db.execute("INSERT INTO hubs (id, data) VALUES (?, ?)", (hub_id, json.dumps(data)))
            return hub_id

    def hub(self, hub_id: str) -> dict[str, Any]:
        with self._lock:
            row = self._db.execute("SELECT data FROM hubs WHERE id = ?", (str(hub_id).strip(),)).fetchone()
        if row is None:
            raise not_found()
        return dict(json.loads(row[0]))
