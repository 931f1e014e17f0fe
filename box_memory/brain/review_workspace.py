"""The Box Brain review's workspace side: the memories it reads; accepting, editing, rejecting.

Accepting a candidate writes one append-only memory; editing changes a proposed one; rejecting
writes nothing else.
"""

from __future__ import annotations

from typing import Any

from box_memory.brain.review_text import Mem
from box_memory.result import Result

MAX_MEMORIES = 5000


# ---------------------------------------------------------------------------------------------
# Workspace side


def workspace_memories(ws: Any) -> list[Mem]:
    """Active memories of a workspace (bodies read through its store; companions left out)."""
    from box_memory.format.model import IndexEntry
    from box_memory.workspace.index import load_all, read_memory

    out: list[Mem] = []
    for idx in load_all(ws):
        for e in idx.entries:
            if e.get("status") != "active" or e.get("kind") == "companion":
                continue
            path = IndexEntry(idx.folder, e).path
            try:
                mem = read_memory(ws, path)
            except Exception:  # noqa: S112 - an unreadable memory is index-rebuild's business
                continue
            sources = mem.meta.get("sources") or []
            out.append(
                Mem(
                    id=mem.id,
                    title=mem.title,
                    kind=mem.kind,
                    body=mem.body,
                    sources=[s for s in sources if isinstance(s, dict)] if isinstance(sources, list) else [],
                )
            )
            if len(out) >= MAX_MEMORIES:
                return out
    return out


def memory_request(cand: dict[str, Any], *, supersedes: str | None, team: str | None) -> Any:
    """The WriteRequest that accepting a candidate makes (append-only; sources carry url+version)."""
    from box_memory.write.prepare import WriteRequest

    lines = [cand["statement"], "", "Evidence:"]
    for ev in cand["evidence"]:
        if "memory_id" in ev:
            lines.append(f'- memory {ev["memory_id"]} ({ev["memory_title"]}): "{ev["excerpt"]}"')
        else:
            lines.append(f'- {ev["file"]} ({ev.get("url") or ev.get("path")}): "{ev["excerpt"]}"')
    lines += [
        "",
        f"Proposed by the Box Brain review ({cand['kind']}, confidence {cand['confidence']:g}): "
        f"{cand['rationale']}",
    ]
    source: dict[str, Any] = {"type": "box_file", "ref": cand.get("box_id")}
    if cand.get("url"):
        source["url"] = cand["url"]
    if cand.get("version"):
        source["version"] = cand["version"]
    kind = cand.get("memory_kind") or "note"
    if kind not in ("decision", "fact", "task", "observation", "reference", "note"):
        kind = "note"
    return WriteRequest(
        content="\n".join(lines),
        title=cand["title"],
        kind=kind,
        # Accepting an archive candidate retires the memory: the superseding memory is archived.
        status="archived" if cand["kind"] == "archive" else "active",
        tags=["box-brain", cand["kind"].replace("_", "-")],
        team=team,
        supersedes=supersedes,
        confidence=float(cand["confidence"]),
        agent="box-memory brain review",
        sources=[f"box_file:{cand.get('box_id')}"],
        extra_meta={"sources": [source]},
    )


# ---------------------------------------------------------------------------------------------
# accept / reject


def accept(store: Any, cand_id: int, ws: Any, *, team: str | None = None) -> Result:
    """Write the candidate as an append-only memory in `ws`; the candidate becomes accepted.

    A conflict supersedes the memory it contradicts. Accepting a newer candidate of the same kind
    about the same file supersedes the memory written for the previous one, when still active.
    """
    from box_memory.errors import InvalidInput, NotFound
    from box_memory.recall.service import lookup
    from box_memory.write.memories import write_memory

    cand = store.candidate(cand_id)
    if cand["status"] != "proposed":
        raise InvalidInput(f"review candidate {cand_id} is already {cand['status']}")
    supersedes = cand.get("supersedes")
    if not supersedes:
        previous = store.accepted_memory_for(cand["kind"], cand.get("box_id"), cand["source_id"])
        if previous:
            try:
                links = lookup(ws, previous)[1]
            except NotFound:
                links = []
            if any(link["id"] == previous and link["status"] == "active" for link in links):
                supersedes = previous
    written = write_memory(ws, memory_request(cand, supersedes=supersedes, team=team))
    store.decide(cand_id, "accepted", written.data["id"])
    return Result({"candidate": store.candidate(cand_id), "memory": written.data}, warnings=written.warnings)


def edit(store: Any, cand_id: int, *, title: str | None = None, statement: str | None = None) -> Result:
    """Change a proposed candidate's title and/or statement before it is accepted."""
    from box_memory.errors import InvalidInput
    from box_memory.format.ids import validate_title

    cand = store.candidate(cand_id)
    if cand["status"] != "proposed":
        raise InvalidInput(
            f"review candidate {cand_id} is already {cand['status']}; only a proposed one is edited"
        )
    new_title = validate_title(title) if title is not None else cand["title"]
    new_statement = statement.strip() if statement is not None else cand["statement"]
    if not new_statement:
        raise InvalidInput("the statement must not be empty")
    if len(new_statement) > 20000:
        raise InvalidInput("the statement is longer than 20000 characters")
    store.update_candidate(cand_id, title=new_title, statement=new_statement)
    return Result({"candidate": store.candidate(cand_id)})


def reject(store: Any, cand_id: int) -> Result:
    """Mark a candidate rejected; nothing is written anywhere else (it is not proposed again)."""
    from box_memory.errors import InvalidInput

    cand = store.candidate(cand_id)
    if cand["status"] != "proposed":
        raise InvalidInput(f"review candidate {cand_id} is already {cand['status']}")
    store.decide(cand_id, "rejected")
    return Result({"candidate": store.candidate(cand_id)})
