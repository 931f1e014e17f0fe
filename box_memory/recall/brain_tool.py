"""The MCP `brain_search` tool: imported Box documents only, through the seam recall's Box Brain
section reads (`brain_section.brain_hits`), so both always agree."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from box_memory.recall.brain_section import BRAIN_LIMIT, BRAIN_MAX, brain_hits
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

if TYPE_CHECKING:  # the annotations name it; `params.request_hints` supplies it at run time
    from box_memory.params import Param


@dataclass
class BrainSearchRequest:
    """The MCP `brain_search` tool's parameters."""

    query: Annotated[str, Param("Words to find in imported Box documents.", min_length=1)]
    limit: Annotated[int, Param("At most this many hits.", ge=1, le=BRAIN_MAX)] = BRAIN_LIMIT


def brain_search(ws: Workspace, req: BrainSearchRequest) -> Result:
    """Imported Box documents only."""
    hits = brain_hits(ws, req.query, req.limit)
    return Result({"query": req.query, "limit": req.limit, "count": len(hits), "hits": hits})
