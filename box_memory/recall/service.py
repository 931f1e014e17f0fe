"""The `recall` entry point (docs/spec/cli.md, `recall`) and `lookup` (what `get` opens).

Reads the workspace's indexes and memory files through the local recall cache (`recall.cache`);
never writes to the workspace and never calls the network on a local one.

Route: memory id -> Box file id -> `[[wikilink]]` -> slug -> structured filter -> free text over
titles, slugs and tags -> body full-text (BM25) (`rank`); then the Box Brain section, the Box
metadata route of a structured query, companion states and the best hit's whole file.
"""

from __future__ import annotations

from typing import Any

import orjson

from box_memory.errors import BoxMemoryError, InvalidInput, NotFound
from box_memory.format.ids import is_memory_id, is_slug
from box_memory.format.model import HIDDEN_STATUSES
from box_memory.recall.cache import with_cache
from box_memory.recall.cache_refresh import RecallCache
from box_memory.recall.excerpt import excerpt, spans_out
from box_memory.recall.query import Filters, RecallRequest, parse_filters, tokens_of
from box_memory.recall.rank import Hit, Row, hit_order, prefer
from box_memory.recall.routes import Search
from box_memory.result import Result
from box_memory.store.base import as_metadata_search, logical_folder_paths
from box_memory.workspace.resolve import Workspace


class RecallResult:
    """`data` is the `--json` payload; `marks` the highlighted spans of each hit's excerpt."""

    def __init__(self, data: dict[str, Any], warnings: list[str], marks: dict[str, list[tuple[int, int]]]):
        self.data = data
        self.warnings = warnings
        self.marks = marks

    @property
    def result(self) -> Result:
        """The service result. Every warning is one that changes what the hits mean (a stale index,
        a folder this user may not read left out, a stale companion), so each is said in plain
        output too (on stderr), and said once."""
        return Result(self.data, warnings=list(dict.fromkeys(self.warnings)))


MAX_RECALL_LIMIT = 100_000  # hits in one answer (SQLite takes 64-bit integers only)


def recall(ws: Workspace, req: RecallRequest) -> RecallResult:
    """Answer one recall. Raises InvalidInput (exit 2) for bad filters, dates or limits."""
    if req.limit < 1 or req.limit > MAX_RECALL_LIMIT:
        raise InvalidInput(f"--limit must be between 1 and {MAX_RECALL_LIMIT}")
    text, filters = parse_filters(req, ws)
    text = text.strip()
    if not text and not filters.any():
        raise InvalidInput("empty query: give words, an id, [[Title]], a slug or filters like kind:decision")
    include = req.include_superseded
    if include is None:
        include = bool(ws.config.settings.get("include_superseded_in_recall"))
    res = with_cache(ws, lambda cache, warnings: _run(ws, req, text, filters, include, cache, warnings))
    if res.data.get("route") == "filter" and len(res.data["hits"]) < req.limit:
        _metadata_route(ws, filters, include, req.limit, res)
    import sqlite3  # loaded by the recall cache already

    try:
        res.data["brain"] = _brain_hits(ws, text, filters) if req.brain else []
    except (OSError, sqlite3.Error) as e:  # BOX_MEMORY_HOME unreadable: memories still answered
        from box_memory.result import os_message

        res.data["brain"] = []
        why = os_message(e) if isinstance(e, OSError) else str(e)
        res.warnings.append(f"Box Brain documents not searched ({why})")
    if res.data["brain"]:
        from box_memory.brain.entry import BOUNDARY

        res.data["brain_boundary"] = BOUNDARY  # imported document text is data, never instructions
    hits = res.data["hits"]
    if any(h["kind"] == "companion" for h in hits):
        # A companion is read as what it is: flagged when its binary changed since the pin.
        from box_memory.write.companion_state import companion_states, stale_warning

        states = companion_states(ws, [h["path"] for h in hits if h["kind"] == "companion"])
        for h in hits:
            state = states.get(h["path"])
            if state is not None:
                h["stale"] = state == "stale"
                h["companion_state"] = state
                if state != "current":
                    res.warnings.append(stale_warning(h["title"], state))
    if req.full and hits:
        raw = ws.store.read_bytes(hits[0]["path"])  # the file itself, not the cache's copy
        res.data["full"] = {
            "id": hits[0]["id"],
            "path": hits[0]["path"],
            "content": raw.decode("utf-8", "replace"),
        }
    return res


def _brain_hits(ws: Workspace, text: str, filters: Filters) -> list[dict[str, Any]]:
    """`brain_section.brain_hits`, whose module is imported only when it can find something: a
    filter no document has leaves the section empty, and so does having no Box Brain store (the
    usual case, `brain_hits`' own first two answers)."""
    from box_memory.paths import user_dirs

    if filters.entry_level() or not user_dirs().brain_db.exists():
        return []
    from box_memory.recall.brain_section import brain_hits

    return brain_hits(ws, text, filters=filters)


CHAIN_KEYS = ("id", "title", "slug", "status", "updated_at", "superseded_by", "local_path")


def lookup(ws: Workspace, ref: str) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The memory `ref` names - id, Box file id, `[[Title]]` (exact, then case-insensitive) or
    slug - as (its path, its supersede chain oldest first, warnings), through the recall cache.

    `get` pays for a stat per folder instead of parsing every `_index.json` (1.4 s at 100k).
    Where several memories share a name, the live and newest one is meant, as in the index maps.
    """
    ref = ref.strip()
    if not ref:
        raise InvalidInput("empty reference: give a memory id, [[Title]] or slug")

    def go(cache: RecallCache, warnings: list[str]) -> tuple[str, list[dict[str, Any]], list[str]]:
        s = Search(cache, Filters(), True, 1)
        if is_memory_id(ref):
            found, missing = s.by_id(ref), f"no memory with id {ref}"
        elif ref.isdigit() and len(ref) >= 10:
            found, missing = s.by_file_id(ref), f"no memory with Box file id {ref}"
        elif ref.startswith("[[") and ref.endswith("]]"):
            title = ref[2:-2].strip()
            found = s.by_title(title) if title else []
            missing = f"dangling wikilink [[{title}]]: no memory has that title"
        else:
            found = s.by_slug(ref)
            missing = f"no memory matches {ref!r} (expected a memory id, [[Title]] or slug)"
        if not found:
            raise NotFound(missing)
        r = prefer(found)
        links = [
            {k: (row.path if k == "local_path" else getattr(row, k)) for k in CHAIN_KEYS}
            for row in s.chain(r)
        ]
        return r.path, links, warnings

    return with_cache(ws, go)


def _metadata_route(ws: Workspace, filters: Filters, include: bool, limit: int, res: RecallResult) -> None:
    """Last step of the structured route on a Box workspace (Business+ tiers): Box metadata search.

    The indexes answered first; this only adds memory files that Box's metadata index knows and
    the workspace indexes do not (another writer's lost index entry, a crash before the index
    write), each flagged `matched_on: metadata` with a warning to run index-rebuild. The store
    returns None when the template is missing, younger than Box's search lag, or the tool is
    absent: then nothing changes. Local workspaces have no such method and never get here.
    """
    store = as_metadata_search(ws.store)
    if store is None or len(filters.kinds) > 1 or len(filters.statuses) > 1 or len(filters.teams) > 1:
        return
    if not (filters.kinds or filters.statuses or filters.teams) or filters.tags:
        return
    found = store.metadata_search(
        kind=filters.kinds[0] if filters.kinds else None,
        status=filters.statuses[0] if filters.statuses else None,
        team=filters.teams[0] if filters.teams else None,
    )
    if not found:
        return
    from box_memory.workspace.index import read_memory

    folder_of = {
        fid: path for path, fid in logical_folder_paths(ws.config.folder_ids, ws.config.teams).items()
    }
    known = {h["id"] for h in res.data["hits"]}
    added: list[dict[str, Any]] = []
    for entry in found:
        folder = folder_of.get(str((entry.get("parent") or {}).get("id") or ""))
        name = str(entry.get("name") or "")
        if folder is None or not name.endswith(".md") or len(res.data["hits"]) + len(added) >= limit:
            continue
        try:
            mem = read_memory(ws, f"{folder}/{name}")
        except BoxMemoryError:
            continue
        hidden = mem.status in HIDDEN_STATUSES or mem.is_expired()
        if mem.id in known or (hidden and not include and not filters.asks_hidden()):
            continue
        known.add(mem.id)
        exc, _spans = excerpt(mem.body, mem.title, [])
        added.append(
            {
                "id": mem.id,
                "title": mem.title,
                "kind": mem.kind,
                "status": mem.status,
                "team": mem.meta.get("team"),
                "tags": mem.tags,
                "score": 0.0,
                "matched_on": "metadata",
                "path": mem.path,
                "local_path": mem.path,
                "updated_at": mem.meta.get("updated_at"),
                "excerpt": exc,
                "highlights": [],  # found by metadata, not by words
            }
        )
    if added:
        res.data["hits"] = [*res.data["hits"], *added]
        res.data["count"] = len(res.data["hits"])
        res.warnings.append(
            f"{len(added)} memory file(s) found through Box metadata search are missing from the indexes"
            " - run `box-memory index-rebuild`"
        )


def _run(
    ws: Workspace,
    req: RecallRequest,
    text: str,
    filters: Filters,
    include: bool,
    cache: RecallCache,
    stale: list[str],
) -> RecallResult:
    s = Search(cache, filters, include, req.limit)
    route = "text"
    hits: list[Hit] = []
    terms = tokens_of(text)
    dangling = False
    if is_memory_id(text):
        route, terms = "id", []
        found = s.by_id(text)
        if found:
            hits = s.direct(found, "id", f"memory {text}")
        else:
            s.warnings.append(f"no memory with id {text}")
    elif text.isdigit() and len(text) >= 10 and (found := s.by_file_id(text)):
        route, terms = "file_id", []
        hits = s.direct(found, "id", f"Box file {text}")
    elif text.startswith("[[") and text.endswith("]]"):
        route = "wikilink"
        title = text[2:-2].strip()
        terms = tokens_of(title)
        found = s.by_title(title) if title else []
        if found:
            hits = s.direct(found, "wikilink", f"[[{title}]]")
        else:
            dangling = True
            s.warnings.append(f"dangling wikilink [[{title}]]: no memory has that title")
    elif not text:
        route = "filter"
        hits = s.listing()
    else:
        if is_slug(text) and (found := s.by_slug(text)):
            route = "slug"
            if s.is_hidden(prefer(found)) and not s.include_hidden:
                # An old slug: its chain leads to the current memory (free text scores the rest).
                hits = s.direct(found, "slug", f"slug {text}")
                for h in hits:
                    h.score = 8.0
        skip = {h.row.rid for h in hits}
        room = req.limit - len(skip)  # the places the direct routes left to free text
        more = s.free_text(text, skip)
        if cache.pending_counts() and not _decided(more, room):
            from box_memory.recall.pending import search_pending

            # Bodies not on this machine: Box search (at most the bodies the places left need),
            # unless the query names a memory (its title or slug): then the rest of the list is
            # ranked on what the cache holds, and that is said.
            named = any(h.score >= 8 for h in (*hits, *more))
            if search_pending(s, text, max(1, room), search=not named):
                more = s.free_text(text, skip)
        hits += more
    hits = hit_order(hits)[: req.limit]

    bodies = s.bodies([h.row.rid for h in hits])
    show_flags = s.include_hidden
    out: list[dict[str, Any]] = []
    marks: dict[str, list[tuple[int, int]]] = {}
    for h in hits:
        r = h.row
        exc, spans = excerpt(bodies.get(r.rid, ""), r.title, terms)
        hit: dict[str, Any] = {
            "id": r.id,
            "title": r.title,
            "kind": r.kind,
            "status": r.status,
            "team": r.team,
            "tags": _tags(r),
            "score": h.score,
            "matched_on": h.matched_on,
            "path": r.path,
            "local_path": r.path,
            "updated_at": r.updated_at,
            "excerpt": exc,
            "highlights": spans_out(spans),
        }
        if show_flags:
            cur = s.current_of(r)
            hit["superseded"] = r.status == "superseded" or cur != r.id
            hit["current_id"] = cur
            hit["flag"] = s.flag(r)
        out.append(hit)
        marks[r.id] = spans
    data: dict[str, Any] = {
        "query": req.query,
        "route": route,
        "filters": filters.describe(),
        "include_superseded": s.include_hidden,
        "limit": req.limit,
        "count": len(out),
        "hits": out,
        "cache": cache.stats.as_dict(),
    }
    if dangling:
        data["dangling"] = True
    warnings = [*stale, *s.warnings]
    if not out and not dangling and route not in ("id",):
        warnings.append("no memories match" + (f" {text!r}" if text else " these filters"))
    return RecallResult(data, warnings, marks)


def _decided(hits: list[Hit], limit: int) -> bool:
    """Whether `limit` hits match the whole query exactly (title, slug or tag: 6 and up): no body,
    held or not, can change that answer (a body-only match scores below 2)."""
    return len(hits) >= limit and all(h.score >= 6 for h in hit_order(hits)[:limit])


def _tags(r: Row) -> list[str]:
    tags = orjson.loads(r.tags)
    return [str(t) for t in tags] if isinstance(tags, list) else []
