"""Free text over a cache whose bodies are partly pending (`cache_db`: `pending`).

The ladder runs over what the cache holds: every entry's title, slug and tags, and the bodies it
has. Bodies not fetched from Box are searched with Box search first (`store/cloud/pins.py`, one
`search_files_keyword` call over the query's words, ORed, scoped to the workspace's `.md` files):
its hits are mapped back to entries by Box file id (else by folder and name), the bodies of at
most `limit` of them (less the direct hits) that still match the filters are fetched and added to
the cache (held from then on), and only then is the ladder run - so memories held before and
memories found by Box search come out in the one order.

Box Drive placeholders (online-only files) are never read: that would make Box Drive download
them. When this user has Box credentials (`box-memory auth login`, or `BOX_ACCESS_TOKEN`) and the
workspace's config names its Box folder (`folder_ids.root`, which every workspace made on Box
carries), their text is searched the same way, through Box search scoped to that folder, and the
few bodies the hits need are fetched through Box (by file id, verified by sha1) rather than
through Box Drive; the placeholder itself stays online-only. Otherwise what could not be searched
is said once.
"""

from __future__ import annotations

from typing import Any

import orjson

from box_memory.recall.cache_db import NOT_FETCHED, ONLINE_ONLY
from box_memory.recall.query import tokens_of
from box_memory.recall.routes import Search
from box_memory.store.base import as_unlisted_reads

SEARCH_HITS = 100  # Box search hits asked for (mapped to entries; at most `limit` bodies are read)
LAG_NOTE = "Box search may lag recent writes by minutes"


def search_pending(s: Search, text: str, room: int, *, search: bool = True) -> bool:
    """Before the ladder: fill the bodies Box search finds among the pending ones, at most `room`
    of them (the places the direct routes left), and warn about what stays unsearched. `search`
    False: Box is not asked (the query named a memory), only that is said. Returns whether any
    body was added (the ladder is then run again)."""
    counts = s.cache.pending_counts()
    online, remote = counts.get(ONLINE_ONLY, 0), counts.get(NOT_FETCHED, 0)
    if online:  # a local (Box Drive) workspace: never one with bodies left on Box
        return _online_only(s, text, room, online, search)
    if not remote:
        return False
    if not search:
        s.warnings.append(
            f"the text of {remote} memories is not held on this machine: the memory the query "
            "names was found by its index entry, the rest of the list is ranked on titles, slugs, "
            "tags and the text held here (`box-memory fetch` brings all the text here)"
        )
        return False
    store = as_unlisted_reads(s.cache.ws.store)
    words = tokens_of(text)
    hits = store.search_text(words, SEARCH_HITS) if store is not None and words else None
    if store is None or hits is None:
        s.warnings.append(
            f"the text of {remote} memories is not held on this machine and Box search is not "
            "available: their titles, slugs and tags were searched, their text was not "
            "(`box-memory fetch` brings it here)"
        )
        return False
    s.warnings.append(
        f"{LAG_NOTE}: the text of {remote} memories is not held on this machine, so it was "
        "searched through Box search (their titles, slugs and tags locally; `box-memory fetch` "
        "brings the text here)"
    )
    return _hold_hits(s, store, hits, room, NOT_FETCHED)


def _online_only(s: Search, text: str, room: int, online: int, search: bool) -> bool:
    """Box Drive placeholders: their text searched through Box when it can be asked (the module's
    docstring), else said to be unsearched and why."""
    words = tokens_of(text) if search else []
    box, why = _drive_box(s) if words else (None, "")
    hits = box.search_text(words, SEARCH_HITS) if box is not None else None
    if hits is None:
        if box is not None:
            why = " (Box search did not answer)"
        s.warnings.append(
            f"{online} memories are online-only in Box Drive: their titles, slugs and tags were "
            f"searched, their text was not{why} (`box-memory fetch` downloads them; or make "
            "the folder available offline)"
        )
        return False
    s.warnings.append(
        f"{LAG_NOTE}: {online} memories are online-only in Box Drive, so their text was searched "
        "through Box search (their titles, slugs and tags locally; none was downloaded by Box Drive)"
    )
    return _hold_hits(s, box, hits, room, ONLINE_ONLY)


def _hold_hits(s: Search, store: Any, hits: list[dict[str, Any]], room: int, pending: int) -> bool:
    """The bodies of the `pending` entries Box search found (at most `room`), fetched through
    `store` by file id and held in the cache: whether any was added."""
    rids = _pending_hits(s, hits, room, pending)
    if not rids:
        return False
    got = store.fetch_bodies({fid: sha for _rid, fid, sha in rids})
    return s.cache.hold({rid: got[fid] for rid, fid, _sha in rids if fid in got}) > 0


def _drive_box(s: Search) -> tuple[Any, str]:
    """The Box folder behind this local (Box Drive) workspace as a store that searches it (kept
    as `s.drive` for the excerpts), or None and why not: its Box id from the config, this user's
    Box credentials."""
    ws = s.cache.ws
    root_id = ws.config.folder_ids.get("root") or ws.config.data.get("workspace_root_id")
    if not isinstance(root_id, str | int) or not str(root_id).isdigit():
        return None, " (the workspace's config names no Box folder to search)"
    from box_memory.box.credentials import status
    from box_memory.errors import BoxMemoryError

    try:
        logged_in = status().logged_in
    except BoxMemoryError:
        logged_in = False
    if not logged_in:
        return None, " (no Box credentials to search Box with: `box-memory auth login`)"
    from box_memory.store import open_cloud

    s.drive = open_cloud(str(root_id))
    return s.drive, ""


def _pending_hits(
    s: Search, hits: list[dict[str, Any]], room: int, pending: int
) -> list[tuple[int, str, str | None]]:
    """(rid, Box file id, sha1) of the `pending` entries Box search found, in Box's order, that
    pass the recall's filters: at most `room` of them."""
    by_id = {str(h["file_id"]): h for h in hits if h.get("file_id")}
    by_path = {str(h["path"]): h for h in hits if h.get("path")}
    rows = s.rows(
        "(e.file_id IN (SELECT value FROM json_each(:fids))"
        " OR e.path IN (SELECT value FROM json_each(:paths)))"
        " AND e.rid IN (SELECT rid FROM src WHERE pending = :p)",
        {"fids": _json_strs(by_id), "paths": _json_strs(by_path), "p": pending},
    )
    order = {str(h.get("file_id")): i for i, h in enumerate(hits)}
    found: list[tuple[int, int, str, str | None]] = []
    for r in rows:
        h = by_id.get(str(r.file_id)) if r.file_id else None
        h = h or by_path.get(r.path)
        if h is None:
            continue
        fid = str(h["file_id"])
        sha = h.get("sha1")
        found.append((order.get(fid, len(order)), r.rid, fid, str(sha) if sha else None))
    found.sort()
    return [(rid, fid, sha) for _i, rid, fid, sha in found[:room]]


def _json_strs(values: Any) -> str:
    return orjson.dumps([str(v) for v in values]).decode()
