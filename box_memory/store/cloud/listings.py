"""Folder listings kept between commands, reused only while the workspace root shows no change.

Every writer that follows the format takes `_box-memory.lock` before it changes any `_index.json`
(format spec section 7), and on Box taking or releasing it uploads a version of the lock file,
which sits in the workspace root. So when a fresh listing of the root is identical, entry for entry
(name, type, id, etag and sha1 of everything in it), to the root the kept listings were read
under, no such writer has run since, and those listings of the other folders are still what Box
would answer: a warm command lists the root and nothing else. Edits that skip the lock (a file
changed by hand in the Box web app) show once the kept listing is older than
`BOX_MEMORY_LISTING_TRUST_S` (default 60 s; 0 turns this off), and `index-rebuild`, whose job is
to find such edits, never reuses a listing.

The same rule carries listings across a lease (the lock is taken, the root re-listed: unchanged
means nothing was written in between) and across the tool calls of a long-lived server. On disk
(`listings.json` next to the text cache) it is derived and private, safe to delete: a missing or
unreadable file only costs the listings.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

import orjson

from box_memory.format.safeio import UnreadableFile, read_regular

__all__ = ["Kept", "ListingSnapshot", "root_signature"]

VERSION = 1
_SIGNED = ("type", "id", "etag", "sha1")

Items = dict[str, dict[str, Any]]
# Listings of folders other than the root, each with the time it was read from Box, valid under
# the root whose signature they were read with.
Kept = tuple[list[list[Any]], dict[str, tuple[float, Items]]]


def root_signature(items: Items) -> list[list[Any]]:
    """What must be unchanged for kept listings to hold: each root entry's name, type, id, etag
    and sha1 (Box gives a file a new etag and sha1 with every version)."""
    return sorted(
        [name, *(None if it.get(k) is None else str(it.get(k)) for k in _SIGNED)]
        for name, it in items.items()
    )


def usable(kept: Kept | None, root: Items, trust_s: float) -> dict[str, tuple[float, Items]]:
    """The kept listings that still hold under the freshly listed `root` and are younger than
    `trust_s` seconds; nothing when the root changed."""
    if kept is None or trust_s <= 0 or kept[0] != root_signature(root):
        return {}
    now = time.time()
    return {fid: (at, items) for fid, (at, items) in kept[1].items() if 0 <= now - at < trust_s}


class ListingSnapshot:
    """`listings.json` in the workspace's cache folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "listings.json"

    def load(self) -> Kept | None:
        try:  # bounded, regular files only: a FIFO or /dev/zero there is a miss, not a hang
            data = orjson.loads(read_regular(self.path, "index"))
        except (OSError, orjson.JSONDecodeError, UnreadableFile):
            return None
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return None
        root, folders = data.get("root"), data.get("folders")
        if not isinstance(root, list) or not isinstance(folders, dict):
            return None
        kept: dict[str, tuple[float, Items]] = {}
        for fid, value in folders.items():
            if (
                isinstance(value, list)
                and len(value) == 2
                and isinstance(value[0], (int, float))
                and isinstance(value[1], dict)
                and all(isinstance(v, dict) for v in value[1].values())
            ):
                kept[str(fid)] = (float(value[0]), value[1])
        return root, kept

    def save(self, kept: Kept) -> None:
        folders = {fid: [at, items] for fid, (at, items) in kept[1].items()}
        data = {"version": VERSION, "root": kept[0], "folders": folders}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.path.parent / f".tmp-{secrets.token_hex(6)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(orjson.dumps(data))
            tmp.replace(self.path)
        except OSError:
            pass  # only costs the listings next time
