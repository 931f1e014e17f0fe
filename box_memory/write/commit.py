"""The write transaction shared by memories and companions: content checks, the memory file, the
superseded file's bookkeeping, the folder index and the rollup, under the caller's lock.

`memories` (write, supersede) and `companions` (a companion is a memory pinned to a binary) both
commit through `commit_memory`; neither imports the other for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from box_memory.errors import (
    BackendUnavailable,
    BoxToolError,
    FileBusy,
    HeldMemory,
    InvalidInput,
)
from box_memory.format import frontmatter
from box_memory.format.model import (
    IndexEntry,
    Memory,
    index_entry,
)
from box_memory.format.names import conflict_copies
from box_memory.format.safeio import LIMITS, human
from box_memory.store.base import AlreadyExists, join
from box_memory.workspace.index import (
    FolderIndex,
    crash_point,
    drift,
    load_index,
    refresh_rollup,
    rollup_may_lag,
    save_index,
)
from box_memory.workspace.resolve import Workspace

MAX_CONTENT_BYTES = 1024 * 1024


_BINARY_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


def check_content(content: str | bytes) -> str:
    if isinstance(content, bytes):
        if len(content) > MAX_CONTENT_BYTES:
            raise InvalidInput(f"content is larger than {MAX_CONTENT_BYTES // 1024} KiB")
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(
                "content is binary (not UTF-8 text); describe binaries with `companion`"
            ) from None
    if len(content.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
        raise InvalidInput(f"content is larger than {MAX_CONTENT_BYTES // 1024} KiB")
    if _BINARY_RE.search(content):
        raise InvalidInput("content contains binary/control characters; describe binaries with `companion`")
    if not content.strip():
        raise InvalidInput("content is empty")
    return content


def check_readable(data: bytes, path: str) -> None:
    """Nothing is committed that cannot be read back: the rendered file must be within the read
    caps (safeio.LIMITS) and its frontmatter must parse. Called before anything is written."""
    from box_memory.errors import InvalidFile

    if len(data) > LIMITS["memory"]:
        raise InvalidInput(
            f"{path} would be {len(data)} bytes, over the {human(LIMITS['memory'])} limit for "
            "memory files; nothing was written"
        )
    try:
        frontmatter.parse(data.decode("utf-8"), path)
    except InvalidFile as e:
        raise InvalidInput(f"{e}; nothing was written") from None


def render_body(title: str, content: str) -> str:
    content = content.strip("\n")
    if content.lstrip().startswith("# "):
        return content + "\n"
    return f"# {title}\n\n{content}\n"


@dataclass
class Located:
    entry: dict[str, Any]
    folder: str

    @property
    def path(self) -> str:
        return IndexEntry(self.folder, self.entry).path


@dataclass
class Supersede:
    """The memory a write replaces. `archive_to`: move its file there (a companion frees its name)."""

    located: Located
    mem: Memory
    archive_to: str | None = None


@dataclass
class Committed:
    path: str
    filename: str
    file_id: str | None
    warnings: list[str] = field(default_factory=list)


def load_for_write(ws: Workspace, folder: str, warnings: list[str]) -> FolderIndex:
    """The folder's index for a write (caller holds the lock), repaired first if it drifted."""
    idx = load_index(ws, folder)
    if ws.config.settings.get("rebuild_index_on_drift") and (reasons := drift(ws, idx, quick=True)):
        from box_memory.maintenance.folder_scan import rescan_folder

        scanned = rescan_folder(ws, idx)  # same repair as index-rebuild: records orphans, keeps Box ids
        if scanned.incomplete:
            warnings.append(
                f"index of {folder}/ not repaired: its listing may be incomplete ({scanned.incomplete})"
            )
            return idx
        idx.mark_dirty()  # entries replaced wholesale: every map is rebuilt on save
        warnings.append(f"repaired drifted index of {folder}/ before writing ({'; '.join(reasons)})")
    return idx


def check_supersedable(mem: Memory) -> Memory:
    """Held memories are never modified; a superseded one already has its successor."""
    if mem.status == "held":
        raise HeldMemory(f"memory {mem.id} is under legal hold (status held) and is never modified")
    if mem.status == "superseded":
        raise InvalidInput(
            f"memory {mem.id} is already superseded by {mem.superseded_by}; supersede that one"
        )
    return mem


def commit_memory(
    ws: Workspace,
    idx: FolderIndex,
    meta: dict[str, Any],
    body: str,
    filename: str,
    *,
    old: Supersede | None = None,
    rename: Callable[[dict[str, Any]], str] | None = None,
    save: bool = True,
) -> Committed:
    """The commit step every memory write shares (memories, companions); the caller holds the lock.

    Creates `idx.folder/filename` create-or-fail (never overwrites: on a clash `rename` may
    change `meta` and return another name, else AlreadyExists), marks `old` superseded by
    `meta["id"]` (moving it to `old.archive_to` first when given, so the new memory can take its
    name), then saves every changed folder index and refreshes the rollup.
    """
    folder = idx.folder
    changed: dict[str, FolderIndex] = {folder: idx}
    old_idx = idx
    old_raw = b""
    aliased = frontmatter.with_alias(meta)
    if aliased is not meta:  # in place: the caller reads back the meta it passed
        meta.clear()
        meta.update(aliased)
    if old is not None:
        if old.located.folder != folder:
            old_idx = load_index(ws, old.located.folder)
            changed[old_idx.folder] = old_idx
        old.mem.meta["status"] = "superseded"
        old.mem.meta["superseded_by"] = meta["id"]
        old.mem.meta["updated_at"] = meta["updated_at"]  # one clock: history reads in order
        frontmatter.drop_alias(old.mem.meta, str(meta.get("title") or ""))
        old_raw = frontmatter.render(old.mem.meta, old.mem.body).encode("utf-8")
    from box_memory.recall.cache import after_write, before_write

    path = join(folder, filename)
    data = frontmatter.render(meta, body).encode("utf-8")
    check_readable(data, path)
    if old is not None:
        check_readable(old_raw, old.located.path)
    # The recall cache is updated for this write at the end (a batch leaves it to the next refresh).
    before = before_write(ws, changed) if save else {}
    # Crash safety: every step below leaves each file whole, old or new. The new memory exists
    # before anything points at it or marks the old one superseded (index-rebuild completes an
    # interrupted supersede), and before any index entry for it.
    if old is not None and old.archive_to and path == old.located.path:
        # The new memory takes the old one's name: keep a memory at that name at every instant.
        # The superseded copy goes to the archive first, then one atomic replace swaps the bytes.
        ws.store.write_bytes(old.archive_to, old_raw)
        crash_point("write:old-archived")
        file_id = ws.store.write_bytes(path, data)
    else:
        if old is not None and old.archive_to and ws.store.exists(path):
            raise AlreadyExists(f"{path} already exists")
        while True:
            try:
                file_id = ws.store.create_bytes(path, data)
                break
            except AlreadyExists:
                if rename is None:
                    raise
                filename = rename(meta)
                path = join(folder, filename)
                data = frontmatter.render(meta, body).encode("utf-8")
    crash_point("write:file-created")
    try:
        idx.upsert(
            index_entry(Memory(meta, body, path), filename=filename, file_id=file_id, size_bytes=len(data))
        )

        if old is not None and old.archive_to:
            if path != old.located.path:
                ws.store.write_bytes(old.located.path, old_raw)
                crash_point("write:old-rewritten")
                ws.store.move(old.located.path, old.archive_to)
            old_idx.remove(old.mem.id)
        elif old is not None:
            old_file_id = ws.store.write_bytes(old.located.path, old_raw)
            crash_point("write:old-rewritten")
            old_idx.upsert(
                index_entry(
                    old.mem,
                    filename=str(old.located.entry.get("filename") or old.located.path.rsplit("/", 1)[-1]),
                    file_id=old_file_id or old.located.entry.get("file_id"),
                    size_bytes=len(old_raw),
                )
            )
        if not save:  # a batch (write_many) saves its indexes itself
            return Committed(path, filename, file_id)
        for folder_idx in changed.values():
            save_index(ws, folder_idx)
            crash_point("write:index-saved")
        if not rollup_may_lag(ws):
            refresh_rollup(ws, changed)
        crash_point("write:rollup-saved")
        after_write(ws, before, changed, {str(meta["id"])} | ({old.mem.id} if old is not None else set()))
    except (BackendUnavailable, BoxToolError, FileBusy, OSError) as e:  # FileBusy: held open
        # The memory itself is committed: report it as written. What follows it (indexes, the
        # rollup, the superseded memory's bookkeeping) is derived and repaired by the next write or
        # `index-rebuild`, so its failure is a warning, not an error that would invite a retry.
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        return Committed(
            path,
            filename,
            file_id,
            [
                f"{path} is saved, but updating the indexes failed ({why}); the next write or "
                "`box-memory index-rebuild` repairs them"
            ],
        )
    return Committed(path, filename, file_id)


def unmerged_copies(idx: FolderIndex, names: list[str]) -> list[str]:
    """Conflict copies in a folder listing that the index has not taken in: every index copy
    (index-rebuild merges and archives them) and memory copies it neither lists nor records as
    orphans (another machine's version, written before Box Drive synced this one)."""
    known = {str(e.get("filename")) for e in idx.entries}
    known |= {str(o.get("filename")) for o in idx.data.get("orphans") or [] if isinstance(o, dict)}
    return [n for n in conflict_copies(names) if n.endswith(".json") or n not in known]


def copies_warning(folder: str, copies: list[str]) -> str:
    shown = ", ".join(copies[:3]) + (f" and {len(copies) - 3} more" if len(copies) > 3 else "")
    return (
        f"{folder}/ holds sync conflict copies from another machine ({shown}); "
        "run `box-memory index-rebuild` to merge them"
    )
