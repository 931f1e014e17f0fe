"""A retried write recognised as done: the memory an earlier attempt of this very write (or
supersede) committed, with what that attempt left undone finished under the held lock, so a
retry after "saved, but updating the indexes failed" completes the write instead of repeating it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from box_memory.errors import BoxMemoryError
from box_memory.format import frontmatter
from box_memory.format.model import Memory, index_entry, now_iso
from box_memory.store.base import join
from box_memory.workspace.index import (
    FolderIndex,
    load_index,
    read_memory,
    refresh_rollup,
    rollup_may_lag,
    save_index,
)
from box_memory.workspace.resolve import Workspace
from box_memory.write.checks import memory_filename, render_body
from box_memory.write.commit import Supersede, save_changed


@dataclass(frozen=True)
class Same:
    """What makes a memory file this write's: title, kind, status, tags and body."""

    title: str
    kind: str
    status: str
    tags: tuple[str, ...]
    content: str

    def matches(self, mem: Memory) -> bool:
        return (
            mem.title == self.title
            and mem.kind == self.kind
            and mem.status == self.status
            and tuple(mem.tags) == self.tags
            and mem.body.lstrip("\n") == render_body(self.title, self.content).lstrip("\n")
        )


def _done(mem: Memory, path: str, file_id: Any, supersedes: str | None) -> dict[str, Any]:
    return {
        "id": mem.id,
        "slug": mem.slug,
        "title": mem.title,
        "kind": mem.kind,
        "status": mem.status,
        "file": path,
        "file_id": file_id,
        "supersedes": supersedes,
        "already_written": True,
    }


def _indexed(ws: Workspace, idx: FolderIndex, mem: Memory, path: str) -> dict[str, Any]:
    """`mem`'s entry in `idx`, added from the file's stat when the index lacks it."""
    entry = idx.get(mem.id)
    if entry is None:
        st = ws.store.stat(path)
        name = path.rsplit("/", 1)[-1]
        entry = index_entry(
            mem, filename=name, file_id=st.file_id if st else None, size_bytes=st.size if st else 0
        )
        idx.upsert(entry)
    return entry


def earlier_attempt(
    ws: Workspace, idx: FolderIndex, same_slug: dict[str, Any] | None, filename: str, same: Same
) -> dict[str, Any] | None:
    """The memory an earlier attempt of this very write committed, or None. A memory file missing
    from the index is added to it (the caller holds the lock)."""
    path = join(idx.folder, filename)
    if same_slug is not None:
        named = str(same_slug.get("filename") or filename)
        path = str(same_slug.get("local_path") or join(idx.folder, named))
    elif not ws.store.exists(path):
        return None
    try:
        mem = read_memory(ws, path)
    except BoxMemoryError:
        return None
    if mem.supersedes or not same.matches(mem):
        return None
    entry = idx.get(mem.id)
    if entry is None or idx.dirty:  # missing from the index, or the index was repaired on load
        _indexed(ws, idx, mem, path)
        save_index(ws, idx)
        if not rollup_may_lag(ws):
            refresh_rollup(ws, {idx.folder: idx})
    return _done(mem, path, entry.get("file_id") if entry else None, None)


def _candidates(
    ws: Workspace, idx: FolderIndex, old: Supersede, stem: str
) -> Iterator[tuple[str, Memory, dict[str, Any] | None]]:
    """Files of this slug (`stem`, `stem-2` ...) that may be the successor: (name, memory, entry)."""
    successor = old.mem.superseded_by if old.mem.status == "superseded" else None
    by_name = {str(e.get("filename") or "").casefold(): e for e in idx.entries}
    for name in sorted(ws.store.list_names(idx.folder)):
        low = name.casefold()
        if not (low == stem + ".md" or (low.startswith(stem + "-") and low[len(stem) + 1 : -3].isdigit())):
            continue
        if not low.endswith(".md"):
            continue
        listed = by_name.get(low)
        if listed is not None and successor is not None and listed.get("id") != successor:
            continue  # another memory of that slug
        try:
            mem = read_memory(ws, join(idx.folder, name))
        except BoxMemoryError:
            continue
        if (successor is None or mem.id == successor) and mem.supersedes == [old.mem.id]:
            yield name, mem, listed


def _old_marked(ws: Workspace, old: Supersede, mem: Memory) -> tuple[str | None, int | None]:
    """The old memory marked superseded by `mem` if it is not yet: (its file id, its size)."""
    if old.mem.status == "superseded":
        return None, None
    old.mem.meta["status"] = "superseded"
    old.mem.meta["superseded_by"] = mem.id
    old.mem.meta["updated_at"] = mem.meta.get("updated_at") or now_iso()
    frontmatter.drop_alias(old.mem.meta, mem.title)
    old_raw = frontmatter.render(old.mem.meta, old.mem.body).encode("utf-8")
    return ws.store.write_bytes(old.located.path, old_raw), len(old_raw)


def _old_entry_updated(
    ws: Workspace, old_idx: FolderIndex, old: Supersede, file_id: str | None, size: int | None
) -> bool:
    """The old memory's index entry brought up to date; True when it changed."""
    entry = old_idx.get(old.mem.id)
    if entry is None or (size is None and entry.get("status") == "superseded"):
        return False
    if size is None:
        st = ws.store.stat(old.located.path)
        size = st.size if st else int(entry.get("size_bytes") or 0)
    old_idx.upsert(
        index_entry(
            old.mem,
            filename=str(entry.get("filename") or old.located.path.rsplit("/", 1)[-1]),
            file_id=file_id or entry.get("file_id"),
            size_bytes=size,
        )
    )
    return True


def earlier_supersede(
    ws: Workspace, idx: FolderIndex, old: Supersede, base: str, same: Same
) -> dict[str, Any] | None:
    """The memory an earlier attempt of this very supersede committed, or None: the successor the
    old memory already names, or a file of this slug that no index lists, that supersedes the old
    memory with the same title, kind, status, tags and body (the write's drift repair may have
    indexed it already). What that attempt left undone (the old memory marked superseded, index
    entries, rollup) is finished here (the caller holds the lock), as `index-rebuild` would."""
    from box_memory.recall.cache import after_write, before_write

    stem = memory_filename(same.kind, base)[:-3].casefold()
    for name, mem, listed in _candidates(ws, idx, old, stem):
        if not same.matches(mem):
            continue
        path = join(idx.folder, name)
        old_idx = idx if old.located.folder == idx.folder else load_index(ws, old.located.folder)
        before = before_write(ws, {idx.folder: idx, old_idx.folder: old_idx})
        entry = _indexed(ws, idx, mem, path)
        old_file_id, old_size = _old_marked(ws, old, mem)
        changed: dict[str, FolderIndex] = {idx.folder: idx}
        if _old_entry_updated(ws, old_idx, old, old_file_id, old_size):
            changed[old_idx.folder] = old_idx
        if listed is None or len(changed) > 1 or old_size is not None or idx.dirty:
            save_changed(ws, changed)
            after_write(ws, before, changed, {mem.id, old.mem.id})
        return _done(mem, path, entry.get("file_id"), old.mem.id)
    return None
