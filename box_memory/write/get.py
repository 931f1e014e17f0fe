"""Reading one memory back (`get`): found through the recall cache, or among the superseded
companions kept in the archive, with its supersede chain on request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from box_memory.errors import BoxMemoryError, NotFound
from box_memory.format.ids import is_memory_id
from box_memory.params import Param
from box_memory.result import Result
from box_memory.store.base import join
from box_memory.workspace.index import read_memory
from box_memory.workspace.resolve import Workspace

ARCHIVED_COMPANIONS = "_archive/companions"


def archived_companions(ws: Workspace) -> dict[str, str]:
    """Superseded companions moved aside (`<binary>.<id>.md`): id -> path. They are kept, not
    indexed, so `get` and `--history` look here for ids the indexes do not know."""
    out: dict[str, str] = {}
    for name in ws.store.list_names(ARCHIVED_COMPANIONS):
        stem = name[:-3] if name.endswith(".md") else ""
        mem_id = stem.rsplit(".", 1)[-1] if "." in stem else ""
        if is_memory_id(mem_id):
            out[mem_id] = join(ARCHIVED_COMPANIONS, name)
    return out


def _archived_links(ws: Workspace, archive: dict[str, str]) -> dict[str, dict[str, Any]]:
    """History rows for archived memories, keyed by id (read only when a history needs them)."""
    rows: dict[str, dict[str, Any]] = {}
    for mem_id, path in archive.items():
        try:
            m = read_memory(ws, path)
        except BoxMemoryError:
            continue
        rows[mem_id] = {
            **{k: m.meta.get(k) for k in ("id", "title", "slug", "status", "created_at", "updated_at")},
            "superseded_by": m.superseded_by,
            "local_path": path,
        }
    return rows


@dataclass
class GetRequest:
    """The MCP `get` tool's parameters."""

    ref: Annotated[str, Param("Memory id, [[Title]], slug or Box file id.", min_length=1)]
    history: Annotated[bool, Param("Also return the whole supersede chain.")] = False


def _history(
    ws: Workspace, mem_id: str, links: list[dict[str, Any]], archive: dict[str, str]
) -> list[dict[str, Any]]:
    """The whole chain, oldest first: superseded companions live in the archive, not the indexes,
    so they go in front; each member carries its own creation time (supersede bookkeeping
    rewrites `updated_at`)."""
    archive = archive or archived_companions(ws)
    rows = _archived_links(ws, archive) if archive else {}
    back = {str(r["superseded_by"]): i for i, r in rows.items() if r.get("superseded_by")}
    prefix: list[dict[str, Any]] = []
    head = links[0]["id"] if links else mem_id
    while head in back and back[head] not in {x["id"] for x in prefix}:
        head = back[head]
        prefix.insert(0, rows[head])
    links = prefix + links
    for link in links:
        if "created_at" not in link:
            try:
                link["created_at"] = read_memory(ws, str(link["local_path"])).meta.get("created_at")
            except BoxMemoryError:
                link["created_at"] = None
    return links


def _located(ws: Workspace, ref: str) -> tuple[str, list[dict[str, Any]], list[str], dict[str, str]]:
    """(path, chain links, warnings, archive) for REF: through the recall cache, else the archive."""
    from box_memory.recall.service import lookup

    try:
        path, links, warnings = lookup(ws, ref)
        return path, links, warnings, {}
    except NotFound:
        archive = archived_companions(ws) if is_memory_id(ref.strip()) else {}
        if ref.strip() not in archive:
            raise
        return archive[ref.strip()], [], [], archive


def _companion_state(ws: Workspace, path: str, title: str, result: dict[str, Any]) -> list[str]:
    from box_memory.write.companion_state import companion_states, stale_warning

    state = companion_states(ws, [path]).get(path)
    if state is None:
        return []
    result["stale"] = state == "stale"
    result["companion_state"] = state
    return [stale_warning(title, state)] if state != "current" else []


def get_memory(ws: Workspace, ref: str, *, history: bool = False) -> Result:
    """One memory read from its file, found through the recall cache (see `recall.lookup`); a
    superseded one is returned with a warning naming the current memory."""
    from box_memory.recall.service import lookup

    loc_path, links, warnings, archive = _located(ws, ref)
    mem = read_memory(ws, loc_path)
    result: dict[str, Any] = {"id": mem.id, "path": loc_path, "frontmatter": mem.meta, "body": mem.body}
    if loc_path.startswith(ARCHIVED_COMPANIONS + "/"):
        result["archived"] = True
        if mem.superseded_by:  # the chain continues in the indexes
            try:
                links = lookup(ws, mem.superseded_by)[1]
            except NotFound:
                links = []
    if history:
        links = _history(ws, mem.id, links, archive)
    current = links[-1] if links else None
    if current is not None and current["id"] != mem.id:
        result["current_id"] = current["id"]
    if history:
        result["history"] = links
    if mem.kind == "companion" and not result.get("archived"):
        warnings = [*warnings, *_companion_state(ws, loc_path, mem.title, result)]
    if result.get("current_id"):
        warnings = [*warnings, f"memory {mem.id} is superseded; the current memory is {result['current_id']}"]
    return Result(result, warnings=warnings)
