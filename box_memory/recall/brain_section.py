"""Box Brain hits in recall: the "Box Brain (source-backed)" section (the `brain_search` tool's
request is in `brain_tool`: a recall never builds it)."""

from __future__ import annotations

from typing import Any

from box_memory.paths import user_dirs
from box_memory.recall.excerpt import mark_terms
from box_memory.recall.query import Filters, tokens_of
from box_memory.workspace.resolve import Workspace

BRAIN_LIMIT = 8


#: The label each imported hit carries beside its section, in the Box Brain's own word.
BRAIN_LABEL = "box_brain"


BRAIN_MAX = 50  # hits one MCP brain_search call may ask for


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
    if filters is not None and filters.entry_level():
        return []
    path = user_dirs().brain_db
    if not path.exists():  # no Box Brain store (the usual case): nothing to import or open
        return []
    from box_memory.brain.search import search

    since = filters.since if filters is not None else None
    until = filters.until if filters is not None else None
    hits = search(query, limit=limit, workspace=ws.describe(), path=path, since=since, until=until)
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
