"""Recall query shapes: the request, its structured filters and their parsing, the query's tokens.

Query tokens are the query's words (`\\w+`, case-folded) minus a short list of English stopwords
and single letters (unless nothing else is left): without that, "what did we decide about auth"
would match every title containing "we" or "at" as a substring.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

from box_memory.errors import InvalidInput
from box_memory.format.ids import normalize_tag, validate_team
from box_memory.format.model import HIDDEN_STATUSES, KINDS, STATUSES, parse_time
from box_memory.recall.cache_db import WORD_RE
from box_memory.record import Record
from box_memory.workspace.resolve import Workspace

if TYPE_CHECKING:  # the annotations name it; `params.request_hints` supplies it at run time
    from box_memory.params import Param

DEFAULT_LIMIT = 10
MAX_LIMIT = 200  # hits one MCP recall call may ask for (the command takes any number)


_STOPWORD_LIST = [
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
    "did", "do", "does", "doing", "down", "during", "each", "few", "for", "from", "had", "has",
    "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now",
    "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "you", "your", "yours"
]  # fmt: skip
STOPWORDS = frozenset(_STOPWORD_LIST)
_STRUCT_RE = re.compile(r"^(kind|tag|team|status):(\S+)$", re.IGNORECASE)


class RecallRequest(Record):
    """What to recall. `include_superseded=None` lets the workspace setting decide. The `Param`
    fields are the MCP `recall` tool's parameters (its schema is derived from them and from
    `__init__`'s defaults, `params.request_fields`). Not a dataclass: every recall builds this
    class at start, and `@dataclass` took ~1 ms of it."""

    _fields = (
        "query", "kind", "tags", "team", "status", "since", "until", "limit", "include_superseded",
        "full", "brain",
    )  # fmt: skip

    query: Annotated[
        str,
        Param(
            "mem_ id, Box file id, [[Title]], slug, kind:/tag:/team:/status: filters, or free text;"
            " may be empty when a filter (kind, tags, team, status, since, until) is given."
        ),
    ]
    kind: Annotated[str | None, Param("Only this kind.", choices=KINDS)]
    tags: Annotated[list[str], Param("Only memories with all of these tags.")]
    team: Annotated[str | None, Param("Only this team.")]
    status: Annotated[str | None, Param("Only this status.", choices=STATUSES)]
    since: Annotated[str | None, Param("updated_at on or after this date (ISO 8601).")]
    until: Annotated[str | None, Param("updated_at on or before this date (ISO 8601).")]
    limit: Annotated[int, Param("At most this many hits.", ge=1, le=MAX_LIMIT)]
    include_superseded: Annotated[
        bool | None,
        Param(
            "Also show superseded, archived and expired memories (flagged); "
            "null follows the workspace setting."
        ),
    ]
    full: Annotated[
        bool,
        Param(
            "Also return the best match's whole file (data.full.content): use it for "
            "'what did we decide about X' questions to get the answer in one call."
        ),
    ]
    brain: Annotated[bool, Param("Include Box Brain (source-backed) hits.")]

    def __init__(
        self,
        query: str = "",
        kind: str | None = None,
        tags: Sequence[str] = (),  # () stands for a new empty list (`params.request_fields`)
        team: str | None = None,
        status: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int = DEFAULT_LIMIT,
        include_superseded: bool | None = None,
        full: bool = False,
        brain: bool = True,
    ) -> None:
        self.query = query
        self.kind = kind
        self.tags = list(tags)
        self.team = team
        self.status = status
        self.since = since
        self.until = until
        self.limit = limit
        self.include_superseded = include_superseded
        self.full = full
        self.brain = brain


class Filters:
    """Structured filters; every one given must hold (repeats intersect)."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.statuses: list[str] = []
        self.teams: list[str] = []
        self.tags: list[str] = []
        self.since: float | None = None
        self.until: float | None = None

    def any(self) -> bool:
        return bool(self.kinds or self.statuses or self.teams or self.tags) or (
            self.since is not None or self.until is not None
        )

    def asks_hidden(self) -> bool:
        """An explicit `status:superseded` (or archived) asks for what is hidden by default."""
        return any(s in HIDDEN_STATUSES for s in self.statuses)

    def where(self, include_hidden: bool, now: float, *, on: str = "entries") -> tuple[str, dict[str, Any]]:
        """A WHERE fragment: fixed column names, every value a named parameter.

        on="entries": every filter, over `entries e`. on="postings": what each posting row carries
        (visibility, updated time), over `postings p`. on="entry-only": what needs the entry or its
        tags (kind, status, team, tag), over `entries e`.
        """
        parts: list[str] = []
        params: dict[str, Any] = {}
        prefix = {"entries": "f", "postings": "pf", "entry-only": "ef"}[on]

        def param(value: Any) -> str:
            name = f"{prefix}{len(params)}"
            params[name] = value
            return ":" + name

        if on != "postings":
            for col, values in (("kind", self.kinds), ("status", self.statuses), ("team", self.teams)):
                parts += [f"e.{col} = {param(v)}" for v in dict.fromkeys(values)]
            for t in dict.fromkeys(self.tags):
                # `/` nests: tag:auth also finds auth/jwt (the keys between "auth/" and "auth0").
                eq, lo, hi = param(t), param(t + "/"), param(t + "0")
                parts.append(
                    f"e.rid IN (SELECT rid FROM tags WHERE tag = {eq} "  # noqa: S608
                    f"UNION ALL SELECT rid FROM tags WHERE tag > {lo} AND tag < {hi})"
                )
        if on != "entry-only":
            t, uts = ("p", "p.uts") if on == "postings" else ("e", "e.updated_ts")
            if self.since is not None:
                parts.append(f"{uts} >= {param(self.since)}")
            if self.until is not None:
                parts.append(f"{uts} <= {param(self.until)}")
            if not include_hidden:
                parts.append(f"{t}.hidden = 0 AND ({t}.expires_ts IS NULL OR {t}.expires_ts > {param(now)})")
        return (" AND ".join(parts) or "1"), params

    def entry_level(self) -> bool:
        return bool(self.kinds or self.statuses or self.teams or self.tags)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kinds,
            "tag": self.tags,
            "team": self.teams,
            "status": self.statuses,
            "since": self.since,
            "until": self.until,
        }


# --- parsing --------------------------------------------------------------------------------


def tokens_of(text: str) -> list[str]:
    words = list(dict.fromkeys(WORD_RE.findall(text.casefold())))
    kept = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return kept or words


def parse_date(value: str, *, end_of_day: bool) -> float:
    """An ISO-8601 date or time as a timestamp; with `end_of_day`, a bare date means its last moment."""
    t = parse_time(value)
    if t is None:
        raise InvalidInput(f"invalid date {value!r}: use ISO-8601 (2026-05-22 or 2026-05-22T18:32:00Z)")
    if end_of_day and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
        return t.timestamp() + 86400 - 0.001  # --until 2026-05-22 includes that whole day
    return t.timestamp()


def _add_filter(f: Filters, key: str, value: str, ws: Workspace) -> None:
    key = key.lower()
    if key == "kind":
        if value not in KINDS:
            raise InvalidInput(f"unknown kind {value!r} (expected one of: {', '.join(KINDS)})")
        f.kinds.append(value)
    elif key == "status":
        if value not in STATUSES:
            raise InvalidInput(f"unknown status {value!r} (expected one of: {', '.join(STATUSES)})")
        f.statuses.append(value)
    elif key == "team":
        validate_team(value)
        if value not in ws.config.teams:
            raise InvalidInput(f"unknown team {value!r} (teams: {', '.join(ws.config.teams)})")
        f.teams.append(value)
    else:
        f.tags.append(normalize_tag(value))


def parse_filters(req: RecallRequest, ws: Workspace) -> tuple[str, Filters]:
    """Split inline `kind:` `tag:` `team:` `status:` terms off the query; merge the options."""
    f = Filters()
    rest: list[str] = []
    for term in req.query.split():
        m = _STRUCT_RE.match(term)
        if m:
            _add_filter(f, m.group(1), m.group(2), ws)
        else:
            rest.append(term)
    for key, val in (("kind", req.kind), ("team", req.team), ("status", req.status)):
        if val:
            _add_filter(f, key, val, ws)
    for t in req.tags:
        _add_filter(f, "tag", t, ws)
    if req.since:
        f.since = parse_date(req.since, end_of_day=False)
    if req.until:
        f.until = parse_date(req.until, end_of_day=True)
    return " ".join(rest), f
