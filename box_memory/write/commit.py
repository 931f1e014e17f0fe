"""The one locked commit every write enters: `commit(ws, placements)` takes the workspace lock,
opens each folder's index once, lets each placement (a memory, a companion, an imported item)
name its file under the lock, and writes the file, the superseded file's bookkeeping, the folder
indexes and the rollup. A single write saves at once; a batch saves at checkpoints.

`memories` and `companions` each define a placement; neither imports the other.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Protocol

from box_memory.errors import (
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    FileBusy,
    HeldMemory,
    InvalidInput,
    TooLargeForBox,
)
from box_memory.format import frontmatter
from box_memory.format.ids import next_free_slug
from box_memory.format.model import IndexEntry, Memory, index_entry
from box_memory.format.names import conflict_copies
from box_memory.store.base import AlreadyExists, join
from box_memory.workspace.index import (
    FolderIndex,
    crash_point,
    drift,
    load_index,
    near_upload_limit,
    refresh_rollup,
    rollup_may_lag,
    save_index,
)
from box_memory.workspace.resolve import INDEX_NAME, Workspace
from box_memory.write.checks import check_readable, memory_filename

BATCH_SAVE_EVERY = 2000  # a long batch saves its indexes this often (index-rebuild covers a crash)
# A parsed index of 40,000 entries is millions of objects; while it is alive, every collection of
# the cycle collector that the write's own allocations trigger walks all of them (measured: 200,000
# small lists cost 0.19 s CPU beside such an index, 0.025 s without). Past this many entries the
# commit freezes what is allocated so far (`gc.freeze`: the index holds no cycles, refcounting
# still frees it) and unfreezes at the end, so a long-lived process (`serve`) keeps collecting.
FREEZE_ABOVE = 2000
# The commits of this process that froze and have not ended (a server's run side by side, in its
# worker threads): the last one to end unfreezes, when `_thaw` - decided by the first, as nothing
# was frozen before it, or the process is a long-lived server. A server was started by the CLI's
# `main`, which freezes what its imports loaded: asking `gc.get_freeze_count()` on every commit
# walked the whole frozen heap (~19 ms a write in a 10k `serve` under load, holding the GIL),
# and its answer kept every server write from unfreezing, so the cycles made between writes were
# never collected.
_freeze_lock = threading.Lock()
_freezers = 0
_thaw = False


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


def check_supersedable(mem: Memory) -> Memory:
    """Held memories are never modified; a superseded one already has its successor."""
    if mem.status == "held":
        raise HeldMemory(f"memory {mem.id} is under legal hold (status held) and is never modified")
    if mem.status == "superseded":
        raise InvalidInput(
            f"memory {mem.id} is already superseded by {mem.superseded_by}; supersede that one"
        )
    return mem


def unmerged_copies(idx: FolderIndex, names: list[str]) -> list[str]:
    """Conflict copies in a folder listing that the index has not taken in: every index copy
    (index-rebuild merges and archives them) and memory copies it neither lists nor records as
    orphans (another machine's version, written before Box Drive synced this one)."""
    copies = conflict_copies(names)
    if not copies:
        return []  # the usual case: no set of every indexed name is built
    known = {str(e.get("filename")) for e in idx.entries}
    known |= {str(o.get("filename")) for o in idx.data.get("orphans") or [] if isinstance(o, dict)}
    return [n for n in copies if n.endswith(".json") or n not in known]


def copies_warning(folder: str, copies: list[str]) -> str:
    shown = ", ".join(copies[:3]) + (f" and {len(copies) - 3} more" if len(copies) > 3 else "")
    return (
        f"{folder}/ holds sync conflict copies from another machine ({shown}); "
        "run `box-memory index-rebuild` to merge them"
    )


def check_index_room(ws: Workspace, folder: str) -> None:
    """TooLargeForBox when `folder`'s index is too close to the store's upload limit to take one
    more entry: a write then would save its memory and fail to index it, and no repair could."""
    if ws.store.upload_limit() is None:  # a local folder: no stat spent
        return
    st = ws.store.stat(join(folder, INDEX_NAME))
    limit = near_upload_limit(ws, st.size) if st is not None else None
    if st is None or limit is None:
        return
    raise TooLargeForBox(
        f"{folder}/{INDEX_NAME} is {st.size / 1e6:.1f} MB and one more entry could take it past the "
        f"{limit / 1e6:g} MB Box takes in one upload; nothing was written. Switch the workspace to "
        'the monthly layout (set "memory_layout": "monthly" in the settings of _box-memory.json, '
        "or `box-memory init NAME --parent ID --memory-layout monthly`): new memories then go to "
        "month folders with small indexes"
    )


def load_for_write(
    ws: Workspace, folder: str, warnings: list[str], idx: FolderIndex | None = None, *, raw_ok: bool = False
) -> tuple[FolderIndex, list[str]]:
    """The folder's index for a write (caller holds the lock; `idx`: it loaded it already),
    repaired first if it drifted, and the folder's names (listed once: the drift check and the
    free names share the listing). `raw_ok`: its entries may stay unparsed (`load_index`)."""
    idx = load_index(ws, folder, raw_ok=raw_ok) if idx is None else idx
    names = ws.store.list_names(folder)
    if ws.config.settings.get("rebuild_index_on_drift") and (
        reasons := drift(ws, idx, quick=True, names=names)
    ):
        from box_memory.maintenance.folder_scan import rescan_folder

        scanned = rescan_folder(ws, idx)  # same repair as index-rebuild: records orphans, keeps Box ids
        if scanned.incomplete:
            warnings.append(
                f"index of {folder}/ not repaired: its listing may be incomplete ({scanned.incomplete})"
            )
            return idx, names
        idx.mark_dirty()  # entries replaced wholesale: every map is rebuilt on save
        warnings.append(f"repaired drifted index of {folder}/ before writing ({'; '.join(reasons)})")
        names = ws.store.list_names(folder)  # the repair may have moved copies aside
    return idx, names


@dataclass
class FolderSlots:
    """Slugs taken in one folder (index entries), file names on disk, and entries by slug.

    Built once per folder under the lock; a batch keeps it current as it writes, so each write
    does not re-list the folder or scan every entry. A file on disk that the index does not know
    takes only its file name, not the slug: the memory keeps the slug it was asked for and its
    file takes the next free suffix (the plugin's "slug stable"; Box answers such a clash 409).
    """

    taken: set[str]
    _by_slug: dict[str, dict[str, Any]] | None
    copies: list[str] = field(default_factory=list)  # sync conflict copies the index does not hold
    names: set[str] = field(default_factory=set)  # case-folded: Box, macOS and Windows fold case
    # An index whose entries are unparsed (`FolderIndex.raw`): `taken` holds only the slugs added
    # since; what it does not hold is asked of the index, which is parsed when it cannot tell.
    _idx: FolderIndex | None = None
    _free: set[str] = field(default_factory=set)  # slugs such an index was found not to hold

    @classmethod
    def scan(cls, idx: FolderIndex, listed: list[str]) -> FolderSlots:
        """From the index and the folder's names (`listed`), built with map/zip rather than a
        Python loop per entry: at 40,000 entries this is a write's largest cost after the index's
        own read and parse. An unparsed index whose file names are the listing's memory files
        (`FolderIndex.listing_matches`) adds no name of its own and is not scanned."""
        names = set(map(str.casefold, listed))
        if idx.raw() is not None and idx.listing_matches(listed):
            return cls(set(), None, unmerged_copies(idx, listed), names, idx)
        entries = idx.entries
        slugs = list(map(str, map(dict.get, entries, repeat("slug"))))
        taken = set(map(str.casefold, slugs))
        names.update(map(str.casefold, map(str, filter(None, map(dict.get, entries, repeat("filename"))))))
        by_slug = dict(zip(reversed(slugs), reversed(entries), strict=True))  # the first entry wins
        return cls(taken, by_slug, copies=unmerged_copies(idx, listed), names=names)

    def _parse(self) -> dict[str, dict[str, Any]]:
        """Scan the unparsed index now (parsing it): `taken` and the entries by slug in full."""
        if self._by_slug is None:
            entries = self._idx.entries if self._idx is not None else []
            slugs = list(map(str, map(dict.get, entries, repeat("slug"))))
            self.taken |= set(map(str.casefold, slugs))
            self._by_slug = dict(zip(reversed(slugs), reversed(entries), strict=True))
        return self._by_slug

    @property
    def by_slug(self) -> dict[str, dict[str, Any]]:
        """The first entry of each slug (the entries parsed, if they were not)."""
        return self._parse()

    def _absent(self, slug: str) -> bool:
        """An unparsed index holds no entry of `slug` (case-folded), known without parsing it."""
        if self._by_slug is not None or self._idx is None or slug.casefold() in self.taken:
            return False
        if slug not in self._free:  # (a search of the index's bytes: asked once per slug)
            if self._idx.may_have_slug(slug):
                return False
            self._free.add(slug)
        return True

    def first(self, slug: str) -> dict[str, Any] | None:
        """The first entry of `slug`, without parsing an unparsed index that has none."""
        return None if self._absent(slug) else self._parse().get(slug)

    def free_slug(self, base: str) -> str:
        """`base`, else `base-2`, ... - the first no entry has (`next_free_slug`)."""
        if self._absent(base):
            return base
        self._parse()
        return next_free_slug(base, self.taken)

    def added(self, slug: str, entry: dict[str, Any] | None) -> None:
        """A write added `entry` of `slug` to the index (None: the index's entries are unparsed)."""
        self.taken.add(slug)
        self._free.discard(slug)
        if self._by_slug is not None and entry is not None:
            self._by_slug.setdefault(slug, entry)

    def free_name(self, kind: str, slug: str) -> str:
        """`<kind>__<slug>.md`, or with the next free -2, -3 ... when a file holds that name."""
        name, n = memory_filename(kind, slug), 1
        while name.casefold() in self.names:
            n += 1
            name = memory_filename(kind, f"{slug}-{n}")
        return name


@dataclass
class Transaction:
    """What one `commit` holds under the lock: the folder indexes it opened (each loaded and
    listed once), the warnings so far, and whether it saves each write at once (`batch` False)
    or at checkpoints."""

    ws: Workspace
    batch: bool
    warnings: list[str] = field(default_factory=list)
    open: dict[str, tuple[FolderIndex, FolderSlots]] = field(default_factory=dict)
    pending: int = 0
    froze: bool = False  # this commit moved a large parsed index out of the collector's sight

    def folder(self, folder: str) -> tuple[FolderIndex, FolderSlots]:
        """The folder's index (repaired first if it drifted) and its taken names, opened once
        (or, in a long-lived process, the names its last write left when nothing changed since:
        `keep_folders`)."""
        if folder not in self.open:
            # Refused before anything is read or written when one more entry could take the
            # folder's index past what the store takes in one upload (Box: 50 MB).
            check_index_room(self.ws, folder)
            keeper = None if self.batch else _keeper
            slots = None
            listed: list[str] = []
            if keeper is not None:  # a long-lived server: its kept index, parsed
                idx = load_index(self.ws, folder)
                slots = keeper.reuse(self.ws, idx)
                if slots is None:
                    idx, listed = load_for_write(self.ws, folder, self.warnings, idx)
            else:
                idx, listed = load_for_write(self.ws, folder, self.warnings, raw_ok=not self.batch)
            if idx.count() > FREEZE_ABOVE and not self.froze:
                _freeze()
                self.froze = True
            if slots is None:
                slots = FolderSlots.scan(idx, listed)
            if keeper is not None:
                keeper.opened(self.ws, idx)
            if slots.copies:
                self.warnings.append(copies_warning(folder, slots.copies))
            self.open[folder] = (idx, slots)
        return self.open[folder]

    def holder(self, mem_id: str) -> str | None:
        """The open folder whose index lists `mem_id`."""
        return next((f for f, (idx, _) in self.open.items() if idx.get(mem_id)), None)

    def file(
        self,
        idx: FolderIndex,
        meta: dict[str, Any],
        body: str,
        filename: str,
        *,
        old: Supersede | None = None,
        rename: Callable[[dict[str, Any]], str] | None = None,
        save: bool | None = None,
    ) -> Committed:
        """Commit one memory file (see `commit_file`); a batch defers the index saves."""
        done = commit_file(
            self.ws,
            idx,
            meta,
            body,
            filename,
            old=old,
            rename=rename,
            save=not self.batch if save is None else save,
        )
        self.warnings += done.warnings
        return done

    def flush(self) -> None:
        """Save what a batch deferred: the files first (one sync), then the indexes, the rollup."""
        self.ws.store.checkpoint()
        for folder_idx, _ in self.open.values():
            save_index(self.ws, folder_idx)
        if self.open and not rollup_may_lag(self.ws):
            refresh_rollup(self.ws, {f: i for f, (i, _) in self.open.items()})
        self.pending = 0

    def restart(self) -> None:
        """Save and close every open index (a write about to touch indexes outside this batch's)."""
        self.flush()
        self.open = {}


class FolderKeeper(Protocol):
    """What a long-lived process (`serve`) keeps between its own writes: each folder's names as
    its last write left them (`FolderSlots`), handed back under the lock only when it can tell
    nothing changed the folder since; any doubt, and the write lists and checks as always."""

    def reuse(self, ws: Workspace, idx: FolderIndex) -> FolderSlots | None:
        """The kept names of `idx`'s folder, or None (then list it: it is watched from now on)."""

    def opened(self, ws: Workspace, idx: FolderIndex) -> None:
        """`idx` is open for this commit (its entries as they are now, before the write)."""

    def committed(self, ws: Workspace, opened: dict[str, tuple[FolderIndex, FolderSlots]]) -> None:
        """A commit's writes are all saved (the lock still held): keep what may be kept."""

    def close(self) -> None:
        """Keep nothing more (its watches are closed)."""


_keeper: FolderKeeper | None = None


def keep_folders(keeper: FolderKeeper | None) -> None:
    """From now on (None: no longer), single writes keep their folders' names with `keeper`
    (one at a time: the one it replaces is closed)."""
    global _keeper
    if _keeper is not None and _keeper is not keeper:
        _keeper.close()
    _keeper = keeper


class Placement(Protocol):
    """One write under the lock: it names its file and frontmatter in the open transaction and
    commits through `Transaction.file`; returns what the command reports."""

    def place(self, tx: Transaction) -> dict[str, Any]: ...


ItemReport = Callable[[int, dict[str, Any] | None, BoxMemoryError | None], None]


def commit(
    ws: Workspace,
    placements: Sequence[Placement],
    *,
    writer: str,
    skill: str,
    on_item: ItemReport | None = None,
) -> tuple[list[dict[str, Any]], list[str]]:
    """The one locked commit: every write (memory, companion, import batch) enters here once.

    Without `on_item`, each placement is saved at once and the first error is raised (a command's
    own write). With it, the placements are a batch: `on_item(i, result, error)` is told of each,
    an error skips only that item, and the indexes are saved every BATCH_SAVE_EVERY writes and at
    the end. Returns (the results of a command's own write, empty for a batch; the warnings)."""
    batch = on_item is not None
    results: list[dict[str, Any]] = []
    tx = Transaction(ws, batch=batch)
    # batch(): on a local folder one sync per checkpoint, not 2 per file
    with (
        _unfreeze_after(tx),
        ws.store.lock(writer=writer, skill=skill),
        ws.store.batch() if batch else nullcontext(),
    ):
        try:
            for i, placement in enumerate(placements):
                if on_item is None:
                    results.append(placement.place(tx))
                    continue
                try:
                    res = placement.place(tx)
                except BoxMemoryError as e:
                    on_item(i, None, e)
                    continue
                on_item(i, res, None)  # a batch's results go to on_item only (an import: 20,000)
                tx.pending += 1
                if tx.pending >= BATCH_SAVE_EVERY:
                    tx.flush()
            if _keeper is not None and not batch:
                _keeper.committed(ws, tx.open)
        finally:
            if batch:
                tx.flush()
    return results, tx.warnings


def _freeze() -> None:
    """Freeze for one commit (see FREEZE_ABOVE and `_freezers`)."""
    global _freezers, _thaw
    with _freeze_lock:
        if _freezers == 0:
            # `gc.unfreeze` cannot tell whose objects are whose: a process that froze its own
            # keeps them frozen, unless it is a server, which must go on collecting.
            _thaw = _keeper is not None or gc.get_freeze_count() == 0
        _freezers += 1
        gc.freeze()


@contextmanager
def _unfreeze_after(tx: Transaction) -> Iterator[None]:
    """Give what the commits froze back to the cycle collector when the last of them ends."""
    global _freezers
    try:
        yield
    finally:
        if tx.froze:
            with _freeze_lock:
                _freezers -= 1
                if _freezers == 0 and _thaw:
                    gc.unfreeze()


# --- one memory file --------------------------------------------------------------------------


def _mark_superseded(old: Supersede, meta: dict[str, Any]) -> bytes:
    """The superseded memory's new bytes: status superseded, by `meta["id"]`, on the same clock."""
    old.mem.meta["status"] = "superseded"
    old.mem.meta["superseded_by"] = meta["id"]
    old.mem.meta["updated_at"] = meta["updated_at"]  # one clock: history reads in order
    frontmatter.drop_alias(old.mem.meta, str(meta.get("title") or ""))
    return frontmatter.render(old.mem.meta, old.mem.body).encode("utf-8")


def _create(
    ws: Workspace,
    folder: str,
    meta: dict[str, Any],
    body: str,
    filename: str,
    data: bytes,
    old: Supersede | None,
    old_raw: bytes,
    rename: Callable[[dict[str, Any]], str] | None,
) -> tuple[str, str, str | None, int]:
    """Create the memory file (`data`, rendered from meta and body), never overwriting:
    (path, filename, file id, size)."""
    path = join(folder, filename)
    if old is not None and old.archive_to and path == old.located.path:
        # The new memory takes the old one's name: keep a memory at that name at every instant.
        # The superseded copy goes to the archive first, then one atomic replace swaps the bytes.
        ws.store.write_bytes(old.archive_to, old_raw)
        crash_point("write:old-archived")
        return path, filename, ws.store.write_bytes(path, data), len(data)
    if old is not None and old.archive_to and ws.store.exists(path):
        raise AlreadyExists(f"{path} already exists")
    while True:
        try:
            return path, filename, ws.store.create_bytes(path, data), len(data)
        except AlreadyExists:
            if rename is None:
                raise
            filename = rename(meta)
            path = join(folder, filename)
            data = frontmatter.render(meta, body).encode("utf-8")


def _retire(ws: Workspace, old: Supersede, old_idx: FolderIndex, old_raw: bytes, path: str) -> None:
    """The superseded memory's bookkeeping: rewritten in place (its index entry follows), or, for
    a companion, rewritten and moved to the archive (out of the index)."""
    if old.archive_to:
        if path != old.located.path:
            ws.store.write_bytes(old.located.path, old_raw)
            crash_point("write:old-rewritten")
            ws.store.move(old.located.path, old.archive_to)
        old_idx.remove(old.mem.id)
        return
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


def save_changed(ws: Workspace, changed: dict[str, FolderIndex]) -> None:
    """Save each changed folder index, then the rollup (unless it may lag)."""
    for folder_idx in changed.values():
        save_index(ws, folder_idx)
        crash_point("write:index-saved")
    if not rollup_may_lag(ws):
        refresh_rollup(ws, changed)
    crash_point("write:rollup-saved")


def commit_file(
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
    """One memory file under the held lock: create `idx.folder/filename` create-or-fail (on a
    clash `rename` may change `meta` and name another file, else AlreadyExists), mark `old`
    superseded by `meta["id"]` (moved to `old.archive_to` when given, so the new memory can take
    its name), then (with `save`) save every changed index and refresh the rollup."""
    from box_memory.recall.cache import after_write, before_write

    changed: dict[str, FolderIndex] = {idx.folder: idx}
    old_idx, old_raw = idx, b""
    aliased = frontmatter.with_alias(meta)
    if aliased is not meta:  # in place: the caller reads back the meta it passed
        meta.clear()
        meta.update(aliased)
    if old is not None:
        if old.located.folder != idx.folder:
            old_idx = changed[old.located.folder] = load_index(ws, old.located.folder)
        old_raw = _mark_superseded(old, meta)
        check_readable(old_raw, old.located.path)
    data = frontmatter.render(meta, body).encode("utf-8")
    check_readable(data, join(idx.folder, filename))
    # The recall cache is updated for this write at the end (a batch leaves it to the next refresh).
    before = before_write(ws, changed) if save else {}
    # Crash safety: every step below leaves each file whole, old or new. The new memory exists
    # before anything points at it or marks the old one superseded (index-rebuild completes an
    # interrupted supersede), and before any index entry for it.
    path, filename, file_id, size = _create(ws, idx.folder, meta, body, filename, data, old, old_raw, rename)
    crash_point("write:file-created")
    try:
        idx.upsert(index_entry(Memory(meta, body, path), filename=filename, file_id=file_id, size_bytes=size))
        if old is not None:
            _retire(ws, old, old_idx, old_raw, path)
        if save:
            save_changed(ws, changed)
            after_write(ws, before, changed, {str(meta["id"])} | ({old.mem.id} if old is not None else set()))
    except (BackendUnavailable, BoxToolError, FileBusy, OSError) as e:  # FileBusy: held open
        # The memory itself is committed: report it as written. What follows it (indexes, the
        # rollup, the superseded memory's bookkeeping) is derived and repaired by the next write or
        # `index-rebuild`, so its failure is a warning, not an error that would invite a retry.
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        warning = (
            f"{path} is saved, but updating the indexes failed ({why}); the next write or "
            "`box-memory index-rebuild` repairs them"
        )
        return Committed(path, filename, file_id, [warning])
    return Committed(path, filename, file_id)
