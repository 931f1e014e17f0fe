"""What `serve` keeps between its own writes: each write folder's names as its last write left them.

A write lists its folder, compares the names with its index (the drift check) and builds the set
of taken slugs and file names (`FolderSlots`): ~10 ms under the lock at 4,000 memories, on every
write. A long-lived server that made the last write into a folder already holds all of that, as
that write left it. It is handed back to the next write, under the lock, only when both of these
say nothing else changed the folder since:

- the folder's index is the very object the last write saved and kept (`workspace.index.
  keep_parsed`): its file still has the signature it had after that save;
- an inotify watch on the folder (`recall.watch.FolderWatch`), set before the listing the kept
  names come from, had no event since that write but the write's own: its temp files, its index
  and the memory files it created (each checked to be there). Anything else in the folder (a
  file another program added, removed, renamed or rewrote, the folder moved), a queue overflow or
  a read error, and the names are dropped: the next write lists and checks as always, and watches
  again from before that listing.

The listing the local store keeps of the folder for its case-folded name check (`LocalStore.
_listing`, valid while the folder's time is unchanged) is declared current the same way
(`listing_still`): the write's own index save changed the folder's time, and the next write would
otherwise list the folder again for that check.

Where a watch cannot be trusted (not Linux, not a local filesystem: `FolderWatch.start`) nothing
is kept. The CLI keeps nothing (one write per process). Temp files (`TMP_PREFIX`) are not names a
write looks at: their events are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from box_memory.format.model import TMP_PREFIX
from box_memory.recall.watch import FolderWatch
from box_memory.store.base import as_kept_listings
from box_memory.workspace.index import FolderIndex
from box_memory.workspace.resolve import INDEX_NAME, Workspace
from box_memory.write.commit import FolderSlots


@dataclass
class _Kept:
    data: dict[str, Any]  # the index data the names go with (identity, not equality)
    slots: FolderSlots
    checked: bool  # the drift check ran when these names were listed


@dataclass
class KeptFolders:
    """The `write.commit.FolderKeeper` of one server (one workspace folder at a time)."""

    root: str | None = None
    watch: FolderWatch | None = None
    kept: dict[str, _Kept] = field(default_factory=dict)  # by the folder's absolute path
    # The folders open in the current commit: their entries list and its length before the write.
    _open: dict[str, tuple[list[dict[str, Any]], int, bool]] = field(default_factory=dict)
    reused: int = 0  # writes that took kept names (for `--verbose` and the tests)

    def _watching(self, ws: Workspace) -> FolderWatch | None:
        local = ws.store.local_root
        if local is None:
            return None
        root = str(local)
        if root != self.root:
            self.close()
            self.root, self.watch = root, FolderWatch.start(root)
        return self.watch

    def _path(self, folder: str) -> str:
        return os.path.join(str(self.root), folder) if folder else str(self.root)  # noqa: PTH118

    def _forget_changed(self, events: dict[str, set[str] | None] | None, ours: set[str]) -> None:
        """Drop the kept names of every folder outside `ours` that had an event other than a temp
        file's (every folder when the watch lost events)."""
        if events is None:
            self.kept.clear()
            return
        for path, names in events.items():
            if path in ours or path not in self.kept:
                continue
            if names is None or any(not n.startswith(TMP_PREFIX) for n in names):
                del self.kept[path]

    def reuse(self, ws: Workspace, idx: FolderIndex) -> FolderSlots | None:
        watch = self._watching(ws)
        if watch is None:
            return None
        self._forget_changed(watch.changed(), set())
        path = self._path(idx.folder)
        kept = self.kept.pop(path, None)  # handed over: kept again only once this write is saved
        if not watch.watch(path):  # from before the listing the next kept names will come from
            return None
        checked = bool(ws.config.settings.get("rebuild_index_on_drift"))
        if kept is None or kept.data is not idx.data or (checked and not kept.checked):
            return None
        self.reused += 1
        return kept.slots

    def opened(self, ws: Workspace, idx: FolderIndex) -> None:
        if self.watch is None or ws.store.local_root is None or str(ws.store.local_root) != self.root:
            return
        path = self._path(idx.folder)
        if self.watch.watching(path):
            checked = bool(ws.config.settings.get("rebuild_index_on_drift"))
            self._open[path] = (idx.entries, len(idx.entries), checked)

    def committed(self, ws: Workspace, opened: dict[str, tuple[FolderIndex, FolderSlots]]) -> None:
        watch, began, self._open = self.watch, self._open, {}
        if watch is None or not began:
            return
        listings = as_kept_listings(ws.store)
        # Taken before the events are read: a change after them shows as a newer folder time.
        marks = {f: listings.listing_mark(f) for f in opened} if listings is not None else {}
        events = watch.changed()
        paths = {self._path(folder): (idx, slots) for folder, (idx, slots) in opened.items()}
        self._forget_changed(events, set(paths))
        if events is None:
            return
        for path, (idx, slots) in paths.items():
            if path not in began:
                continue
            entries, before, checked = began[path]
            if idx.entries is not entries:
                continue  # entries set anew (a repair, a removal): listed again next time
            created = {str(e.get("filename")) for e in entries[before:]}
            names = events.get(path, set())
            if names is None or any(
                n not in created and n != INDEX_NAME and not n.startswith(TMP_PREFIX) for n in names
            ):
                continue  # an event not of this write's own making
            if not all(os.path.lexists(os.path.join(path, n)) for n in created):  # noqa: PTH118
                continue
            self.kept[path] = _Kept(idx.data, slots, checked)
            if listings is not None:
                listings.listing_still(marks.get(idx.folder))

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()
        self.root, self.watch, self.kept, self._open = None, None, {}, {}
