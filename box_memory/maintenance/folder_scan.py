"""One folder as `index-rebuild` reads it (`scan`): files parsed, old entries merged, orphans.

Every memory file parsed, what the current index and its Box Drive conflict copies knew merged
in, orphans and duplicate ids found.

The files are the truth; an index only adds what a file cannot say about itself (the Box
`file_id` of a Box Drive copy, keys written by other tools). Nothing is dropped: files that
cannot be indexed (unparseable, incomplete, a duplicate id) become orphans, and an unparseable
file keeps the entry an old index had for it. The write path repairs one folder index the same
way (`rescan_folder`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from box_memory.errors import BoxMemoryError, InvalidFile, NotFound, Unreadable
from box_memory.format.model import INDEX_MAPS, IndexEntry, index_entry
from box_memory.format.safeio import OutsideWorkspace, ReadFailed, UnreadableFile
from box_memory.progress import each
from box_memory.store.base import Entry, join
from box_memory.workspace.index import (
    LIVE,
    FolderIndex,
    carry_over,
    is_memory_file,
    parse_index,
    read_memory,
)
from box_memory.workspace.resolve import INDEX_NAME, Workspace


def is_conflict_copy(name: str) -> bool:
    """Box Drive's copies of `_index.json` made on a sync conflict (`_index (1).json`, ...)."""
    low = name.lower()
    return low.startswith("_index") and low.endswith(".json") and name != INDEX_NAME


def _canonical(e: dict[str, Any]) -> bool:
    return e.get("filename") == f"{e.get('kind')}__{e.get('slug')}.md"


def _keep_rank(e: dict[str, Any]) -> tuple[str, bool, bool]:
    """Which of several files sharing an id is indexed: newest, then canonical name, then live."""
    return (str(e.get("updated_at") or ""), _canonical(e), e.get("status") in LIVE)


# --- scanning one folder --------------------------------------------------------------------


@dataclass
class FolderScan:
    """What a rebuild would write for one folder, and what it found on the way."""

    folder: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    orphans: list[dict[str, Any]] = field(default_factory=list)  # {filename, path, reason, kept_entry}
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    conflict_copies: list[dict[str, Any]] = field(default_factory=list)
    claims: dict[str, list[str]] = field(default_factory=dict)  # superseded id -> claiming ids
    current: FolderIndex | None = None
    index_state: str = "ok"  # ok | missing | unparseable
    index_error: str | None = None
    raw_index: bytes = b""
    exists: bool = True
    incomplete: str | None = None  # why the folder's listing may be short: nothing is inferred from it
    unread: list[str] = field(default_factory=list)  # files that could not be read (ReadFailed)
    # Not readable by this user (a team boundary): the folder itself, or these files in it.
    unreadable: list[str] = field(default_factory=list)
    outside: str | None = None  # the folder is behind a symbolic link out of the workspace: why
    aside: bool = False  # `_index.json` is not a regular file: moved aside before the rewrite

    def index_data(self) -> dict[str, Any]:
        """The index to write: the current one's extra keys (folder_id, tier...) + fresh entries."""
        base = dict(self.current.data) if self.current is not None and self.index_state == "ok" else {}
        for k in INDEX_MAPS:  # rebuilt from the entries when saved; never extend stale ones
            base.pop(k, None)
        base["entries"] = self.entries
        if self.orphans:
            base["orphans"] = [
                {k: o[k] for k in ("filename", "reason", "kept_entry") if o.get(k) is not None}
                for o in self.orphans
            ]
        else:
            base.pop("orphans", None)
        return base


def read_conflict_copy(ws: Workspace, path: str) -> tuple[list[dict[str, Any]], str | None]:
    try:
        data = parse_index(ws.store.read_bytes(path), path)
    except (InvalidFile, NotFound) as e:
        return [], str(e)
    return [e for e in data.get("entries", []) if isinstance(e, dict) and e.get("id")], None


# Parsed files from an earlier pass, by path: (listing fingerprint, (index entry, supersedes) or
# the error). Entries, not whole memories, so a 100k-file workspace stays small in memory.
Parsed = tuple[dict[str, Any], list[str]]
Memo = dict[str, tuple[tuple[Any, ...], "Parsed | BoxMemoryError"]]


def _fingerprint(ent: Entry) -> tuple[Any, ...]:
    return (ent.name, ent.size, ent.modified, ent.etag, ent.sha1, ent.file_id)


def _read(ws: Workspace, path: str, ent: Entry, memo: Memo | None) -> Parsed | BoxMemoryError:
    """Parse one memory file, or reuse the parse of an unchanged file from an earlier pass."""
    fp = _fingerprint(ent)
    if memo is not None and (hit := memo.get(path)) is not None and hit[0] == fp:
        res = hit[1]
        return res if isinstance(res, BoxMemoryError) else (dict(res[0]), res[1])
    try:
        mem = read_memory(ws, path)
    except (NotFound, ReadFailed, Unreadable):
        raise
    except BoxMemoryError as e:
        result: Parsed | BoxMemoryError = e
    else:
        entry = index_entry(mem, filename=ent.name, file_id=ent.file_id, size_bytes=ent.size)
        result = (entry, mem.supersedes)
    if memo is not None:
        memo[path] = (fp, result)
        if not isinstance(result, BoxMemoryError):
            return (dict(result[0]), result[1])
    return result


def prefill(ws: Workspace, folder: str, memo: Memo) -> None:
    """Parse every memory file of a folder into `memo` (no lock needed: nothing is written)."""
    files = [e for e in ws.store.list_dir(folder) if not e.is_dir and is_memory_file(e.name)]
    ws.store.prefetch([join(folder, e.name) for e in files])  # the cloud store reads many at once
    for ent in each(files, f"Reading {folder}/", "files"):
        with contextlib.suppress(NotFound, Unreadable):
            _read(ws, join(folder, ent.name), ent, memo)


def _unreadable(s: FolderScan) -> FolderScan:
    """A folder this user may not read: reported, never rebuilt (that would drop what it cannot see)."""
    s.exists = False
    s.unreadable = [s.folder + "/"]
    return s


def scan(
    ws: Workspace, folder: str, extra_old: Iterable[dict[str, Any]] = (), memo: Memo | None = None
) -> FolderScan:
    """Scan one folder: parse every memory file, merge what old indexes knew, find problems."""
    s = FolderScan(folder)
    try:
        listing = ws.store.list_dir(folder)
    except OutsideWorkspace as e:
        s.exists, s.outside = False, str(e)  # never read nor written through: nothing to rebuild
        return s
    except Unreadable:
        return _unreadable(s)
    if not listing and not ws.store.exists(folder):
        s.exists = False
        s.index_state = "missing"
        return s
    s.incomplete = ws.store.listing_incomplete(folder)
    # cloud: fetch the memory files concurrently, not one round trip each
    ws.store.prefetch(join(folder, e.name) for e in listing if not e.is_dir and is_memory_file(e.name))
    # The current index (kept as raw bytes too, so an unparseable one can be archived). A folder
    # in its place is looked at too: like a FIFO, a device or a link that loops it is moved aside.
    if any(e.name == INDEX_NAME for e in listing):
        try:
            s.raw_index = ws.store.read_bytes(join(folder, INDEX_NAME))
            s.current = FolderIndex(folder, parse_index(s.raw_index, join(folder, INDEX_NAME)))
        except NotFound:
            s.index_state = "missing"
        except ReadFailed as e:
            s.unread.append(str(e))
        except (UnreadableFile, OutsideWorkspace) as e:
            s.index_state, s.index_error, s.aside = "not a regular file", str(e), True
        except Unreadable:
            return _unreadable(s)
        except InvalidFile as e:
            s.index_state, s.index_error = "unparseable", str(e)
    else:
        s.index_state = "missing"
    old: list[dict[str, Any]] = list(s.current.entries) if s.current is not None else []
    for ent in sorted(listing, key=lambda x: x.name):
        if not ent.is_dir and is_conflict_copy(ent.name):
            path = join(folder, ent.name)
            copy_entries, err = read_conflict_copy(ws, path)
            s.conflict_copies.append({"path": path, "entries": len(copy_entries), "error": err})
            old.extend(copy_entries)
    old.extend(extra_old)
    old_by_id = _merge_old(old)
    old_by_name: dict[str, dict[str, Any]] = {}
    for prev in old_by_id.values():
        old_by_name.setdefault(str(prev.get("filename")), prev)

    fresh: list[dict[str, Any]] = []
    for ent in each(sorted(listing, key=lambda x: x.name), f"Reading {folder}/", "files"):
        if ent.is_dir or not is_memory_file(ent.name):
            continue
        path = join(folder, ent.name)
        try:
            parsed = _read(ws, path, ent, memo)
        except NotFound:
            continue  # vanished since the listing (only possible without the lock)
        except ReadFailed as e:
            # Held open or not downloaded: never an orphan, and the folder is not rewritten.
            s.unread.append(str(e))
            if (kept := old_by_name.get(ent.name)) is not None:
                fresh.append(dict(kept))
            continue
        except OutsideWorkspace as e:
            # A link out of the workspace is not read: an orphan (kept on disk, reported).
            parsed = e
        except Unreadable:
            # Neither an orphan nor a deletion: the entry the index had for it stays as it was.
            s.unreadable.append(path)
            kept = old_by_name.get(ent.name)
            if kept is not None:
                fresh.append(dict(kept))
            continue
        if isinstance(parsed, BoxMemoryError):
            reason = str(parsed).removeprefix(f"{path}: ")
            kept = old_by_name.get(ent.name)
            s.orphans.append(
                {
                    "filename": ent.name,
                    "path": path,
                    "reason": reason,
                    "kept_entry": str(kept["id"]) if kept else None,
                }
            )
            continue
        entry, supersedes = parsed
        for target in supersedes:
            s.claims.setdefault(target, []).append(str(entry["id"]))
        fresh.append(entry)
    entries = carry_over(fresh, list(old_by_id.values()))
    # "Never dropped": an unparseable file keeps the entry an old index had for it.
    fresh_ids = {str(e["id"]) for e in entries}
    for o in s.orphans:
        kept = old_by_name.get(o["filename"]) if o["kept_entry"] else None
        if kept is not None and str(kept["id"]) not in fresh_ids:
            entries.append({k: v for k, v in kept.items() if k != "folder_path"})
            fresh_ids.add(str(kept["id"]))
        else:
            o["kept_entry"] = None
    s.entries = _dedupe(s, entries)
    return s


def _merge_old(old: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One old entry per id, the current index first; a conflict copy may still add a Box id."""
    by_id: dict[str, dict[str, Any]] = {}
    for e in old:
        mid = str(e.get("id"))
        cur = by_id.get(mid)
        if cur is None:
            by_id[mid] = {k: v for k, v in e.items() if k != "folder_path"}
        elif not cur.get("file_id") and e.get("file_id"):
            cur["file_id"] = e["file_id"]
    return by_id


def _dedupe(s: FolderScan, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per id (the rest become orphans and a duplicate-id error); sorted by filename."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        groups.setdefault(str(e["id"]), []).append(e)
    out: list[dict[str, Any]] = []
    for mid, group in groups.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        group.sort(key=lambda e: str(e.get("filename")))
        keep = max(group, key=_keep_rank)
        out.append(keep)
        others = [e for e in group if e is not keep]
        s.duplicates.append(
            {
                "id": mid,
                "indexed": IndexEntry(s.folder, keep).path,
                "paths": [join(s.folder, str(e.get("filename"))) for e in group],
            }
        )
        for e in others:
            s.orphans.append(
                {
                    "filename": str(e.get("filename")),
                    "path": join(s.folder, str(e.get("filename"))),
                    "reason": f"duplicate id {mid} (indexed: {keep.get('filename')})",
                    "kept_entry": None,
                }
            )
    out.sort(key=lambda e: str(e.get("filename")))
    return out


def rescan_folder(ws: Workspace, idx: FolderIndex) -> FolderScan:
    """Repair one folder index in memory (the write path, under the caller's lock)."""
    s = scan(ws, idx.folder)
    if s.incomplete:
        return s  # a short listing would drop entries of files it did not show: keep the index
    idx.release()
    idx.data.clear()
    idx.data.update(s.index_data())
    return s
