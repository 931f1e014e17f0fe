"""Box Brain hits in recall: the "Box Brain (source-backed)" section and the `brain_search` tool."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from box_memory.recall.excerpt import mark_terms
from box_memory.recall.query import Filters, tokens_of
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

if TYPE_CHECKING:  # the annotations name it; `params.request_hints` supplies it at run time
    from box_memory.params import Param

BRAIN_LIMIT = 8


#: The label each imported hit carries beside its section, in the Box Brain's own word.
BRAIN_LABEL = "box_brain"


BRAIN_MAX = 50  # hits one MCP brain_search call may ask for


@dataclass
class BrainSearchRequest:
    """The MCP `brain_search` tool's parameters."""

    query: Annotated[str, Param("Words to find in imported Box documents.", min_length=1)]
    limit: Annotated[int, Param("At most this many hits.", ge=1, le=BRAIN_MAX)] = BRAIN_LIMIT


def brain_search(ws: Workspace, req: BrainSearchRequest) -> Result:
    """Imported Box documents only: the same seam recall's Box Brain section reads, so both
    always agree."""
    hits = brain_hits(ws, req.query, req.limit)
    return Result({"query": req.query, "limit": req.limit, "count": len(hits), "hits": hits})


def brain_hits(
    ws: Workspace, query: str, limit: int = BRAIN_LIMIT, filters: Filters | None = None
) -> list[dict[str, Any]]:
    """The "Box Brain (source-backed)" section (docs/spec/brain-sync.md): imported Box documents.

    At most `limit` hits, each with its Box URL, from the local brain store (sqlite3 only: no
    network import). Global for the user: every source's hits, except a source set to
    `only_workspace` synced from another workspace. No store -> no hits.

    Recall filters apply where they mean something: `--since`/`--until` on the document's Box
    modified time. An imported document has no memory kind, tag, status or team, so any of those
    filters leaves the section empty (it cannot match them) rather than listing unrelated files.
    """
    from box_memory.brain.search import search

    if filters is not None and filters.entry_level():
        return []
    since = filters.since if filters is not None else None
    until = filters.until if filters is not None else None
    hits = search(query, limit=limit, workspace=ws.describe(), since=since, until=until)
    terms = tokens_of(query)
    return [
        {
            "section": h.get("section"),
            "label": BRAIN_LABEL,
            **h,
            "highlights": mark_terms(h.get("excerpt") or "", terms),
        }
        for h in hits
    ]
