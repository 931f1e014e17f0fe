"""A write request and its prepared value: every check made once, before the lock, into a frozen
`Prepared` that the locked commit (`write.commit`) takes as it is."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Annotated, Any

from box_memory.errors import InvalidInput
from box_memory.format.ids import is_memory_id, validate_title
from box_memory.format.model import KINDS, WRITABLE_STATUSES, check_confidence, check_kind, check_status
from box_memory.params import Param
from box_memory.workspace.resolve import Workspace
from box_memory.write.checks import (
    as_list,
    as_str,
    check_agent,
    check_content,
    check_tag,
    given_confidence,
    given_expiry,
    given_sources,
    parse_related,
    parse_source,
    split_input,
)


@dataclass
class WriteRequest:
    """A write. The fields with a `Param` are the MCP `write` tool's parameters (its schema is
    derived from them); `links` and `extra_meta` are for importers and integrations."""

    content: Annotated[
        str, Param("The memory text (may start with YAML frontmatter carrying its fields).", min_length=1)
    ]
    title: Annotated[
        str | None,
        Param(
            "Title; required unless the content's frontmatter has one or supersedes is given "
            "(a replacement keeps the replaced memory's title, kind, tags, team and related unless set)."
        ),
    ] = None
    kind: Annotated[
        str | None,
        Param(
            "When absent: the replaced memory's kind with supersedes, else inferred as "
            "decision, task or note (never fact/observation/reference).",
            choices=KINDS,
        ),
    ] = None
    tags: Annotated[list[str], Param("Tags (normalised to lowercase-kebab).")] = field(default_factory=list)
    team: Annotated[str | None, Param("Team folder to write into (default team when absent).")] = None
    status: Annotated[
        str, Param("active, or draft for a memory not yet settled.", choices=WRITABLE_STATUSES)
    ] = "active"
    supersedes: Annotated[str | None, Param("Id (mem_...) of the memory this one replaces.")] = None
    related: Annotated[list[str], Param('Related memories as "[[Title]]".')] = field(default_factory=list)
    confidence: Annotated[float | None, Param("How sure the writer is, 0..1.", ge=0, le=1)] = None
    agent: Annotated[str | None, Param("Agent or person writing.")] = None
    sources: Annotated[list[str], Param("Provenance as TYPE:REF.")] = field(default_factory=list)
    new_slug: Annotated[bool, Param("Keep both when a memory with this title exists already.")] = False
    links: list[dict[str, str]] = field(default_factory=list)
    extra_meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Prepared:
    """A write request after validation, before the lock: what the commit takes, unchanged.

    `title` may be empty and `kind` None when the request supersedes a memory: both are then
    inherited from it under the lock, as are tags, related and the team folder."""

    content: str
    title: str
    kind: str | None
    status: str
    tags: tuple[str, ...]
    related: tuple[str, ...]
    sources: tuple[dict[str, Any], ...]
    confidence: float | None
    team: str | None
    folder: str  # the folder it goes to unless the superseded memory's team decides otherwise
    supersedes: str | None = None
    agent: str | None = None
    new_slug: bool = False
    team_given: bool = False  # the request named a team (else a supersede keeps the old one's)
    links: tuple[dict[str, str], ...] = ()
    extra_meta: tuple[tuple[str, Any], ...] = ()


def merge_input_meta(req: WriteRequest, given: dict[str, Any]) -> WriteRequest:
    """Flags win over the content's own frontmatter; lists from both are combined."""
    extra = dict(req.extra_meta)
    if (expires := given_expiry(given)) is not None:
        extra["expires_at"] = expires
    conf = given_confidence(given)
    links = req.links or [
        link
        for link in as_list(given.get("links", []), "links")
        if isinstance(link, dict) and link.get("url")
    ]
    status = req.status
    if req.status == "active" and "status" in given:
        status = as_str(given["status"], "status")
    return replace(
        req,
        title=req.title or as_str(given.get("title", ""), "title"),
        kind=req.kind or (as_str(given["kind"], "kind") if "kind" in given else None),
        status=status,
        tags=[*(as_str(t, "tags") for t in as_list(given.get("tags", []), "tags")), *req.tags],
        related=[*(as_str(r, "related") for r in as_list(given.get("related", []), "related")), *req.related],
        confidence=req.confidence if req.confidence is not None else conf,
        agent=req.agent or (as_str(given["agent"], "agent") if "agent" in given else None),
        sources=[*given_sources(given), *req.sources],
        links=links,
        extra_meta=extra,
    )


def prepare_write(ws: Workspace, req: WriteRequest) -> Prepared:
    """Every check a write makes before touching the workspace; raises InvalidInput and kin.
    The text is checked once; frontmatter it carries is split off and merged with the flags."""
    given, content = split_input(check_content(req.content))
    if given:
        req = merge_input_meta(req, given)
        if not content.strip():
            raise InvalidInput("content is empty")
    asked = req.title or ""
    if not asked.strip() and not req.supersedes:
        raise InvalidInput("--title is required")
    title = validate_title(asked) if asked.strip() else ""
    kind = check_kind(req.kind) if req.kind else None
    # An archived memory is written only as the successor of the one it retires (Box Brain review).
    status = check_status(req.status, WRITABLE_STATUSES + (("archived",) if req.supersedes else ()))
    tags = tuple(dict.fromkeys(check_tag(t) for t in req.tags))
    check_agent(req.agent)
    related = tuple(parse_related(r) for r in req.related)
    sources = tuple(parse_source(s) for s in req.sources)
    confidence = check_confidence(req.confidence)
    team = ws.require_team(req.team)
    if req.supersedes is not None and not is_memory_id(req.supersedes):
        raise InvalidInput(f"--supersedes needs a memory id (mem_...), got {req.supersedes!r}")
    return Prepared(
        content=content,
        title=title,
        kind=kind,
        status=status,
        tags=tags,
        related=related,
        sources=sources,
        confidence=confidence,
        team=team,
        folder=ws.write_folder(team),
        supersedes=req.supersedes,
        agent=req.agent,
        new_slug=req.new_slug,
        team_given=req.team is not None,
        links=tuple(req.links),
        extra_meta=tuple(req.extra_meta.items()),
    )
