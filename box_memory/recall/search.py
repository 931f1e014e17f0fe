"""Recall: query shapes, routes, the scoring ladder, excerpts (cli.md, `recall`).

Reads the workspace's indexes and memory files through the local recall cache
(`recall_cache.py`); never writes to the workspace and never calls the network on a local one.

Route: memory id -> Box file id -> `[[wikilink]]` -> slug -> structured filter -> free text over
titles, slugs and tags -> body full-text (BM25). Free-text scoring per entry: the whole query
equals the title 10, the slug (or the query's slugified form) 8, a tag (or its normalised form) 6;
otherwise the best partial field over the query tokens - a token inside the title 4, the slug 3, a
tag 2 (case-insensitive substring) - plus 0.1 per further distinct token matching anywhere (body
included), at most +0.9; body-only matches 1 + 0.9 * bm25 / best bm25 of the result.

A question - a query of COVER (3) or more tokens - is ranked by how much of it a memory holds
instead (spec deviation: cli.md describes the ladder only). Each token weighs 1 + log2(entries /
entries holding it in their bodies, or in their fields if more do), so rare words count more; a
memory holding tokens of weight w out of the query's total W (in its title, slug, tags or body)
is at level round(LEVELS * w / W) and scores
1 + 0.4 * level + 0.1 * field (title 3, slug 2, tag 1, body 0): 1.0 to 5.3, always below the exact
tiers. In fields such a token matches a whole word, or from four letters the start of one ("go" is
not in "good"); in bodies a whole (stemmed) word, as FTS5 matches it.

One total order everywhere (`hit_order`): score, then the newest `updated_at` (undated last), then
not superseded, then the later id, then the folder. Every step that keeps only the best `limit`
candidates keeps, with them, every candidate tying the last one kept on what that step can see
(score and time), so `--limit N` is always exactly the first N of the unlimited answer.

Query tokens are the query's words (`\\w+`, case-folded) minus a short list of English stopwords
and single letters (unless nothing else is left): without that, "what did we decide about auth"
would match every title containing "we" or "at" as a substring.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Annotated, Any

import orjson

from box_memory.errors import BoxMemoryError, InvalidInput, NotFound
from box_memory.format.ids import is_memory_id, is_slug, normalize_tag, slugify, validate_team
from box_memory.format.model import HIDDEN_STATUSES, KINDS, LIVE, STATUSES, parse_time
from box_memory.params import Param
from box_memory.recall.cache import (
    ENTRY_COLS,
    ENTRY_FIELDS,
    WORD_RE,
    RecallCache,
    folded,
    split_body,
    uts_below,
    with_cache,
)
from box_memory.result import Result
from box_memory.store.base import as_metadata_search, logical_folder_paths
from box_memory.workspace.resolve import Workspace

DEFAULT_LIMIT = 10
MAX_LIMIT = 200  # hits one MCP recall call may ask for (the command takes any number)
BRAIN_LIMIT = 8
EXCERPT_CHARS = 200
WINDOW = 1024  # entries in the first rid range free-text scoring reads (then 1.5x, 2.25x...)
SMALL = 16 * WINDOW  # up to this many entries, free-text scoring reads them all in one run
MANY = 6  # ...and as many common (not rare) query words
RARE = 1000  # a query token in at most this many (and 1%) of the bodies and of the field postings
# is scored up front
MAX_TOKENS = 32  # one bit each in the match mask; SQLite caps compound SELECTs at 500 terms
COVER = 3  # a query of this many words or more is ranked by how much of it a memory holds
LEVELS = 10  # ...in this many steps of its words' weight (the partial scores 1.0..5.3)

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
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


@dataclass
class RecallRequest:
    """What to recall. `include_superseded=None` lets the workspace setting decide. The `Param`
    fields are the MCP `recall` tool's parameters (its schema is derived from them)."""

    query: Annotated[
        str,
        Param(
            "mem_ id, Box file id, [[Title]], slug, kind:/tag:/team:/status: filters, or free text;"
            " may be empty when a filter (kind, tags, team, status, since, until) is given."
        ),
    ] = ""
    kind: Annotated[str | None, Param("Only this kind.", choices=KINDS)] = None
    tags: Annotated[list[str], Param("Only memories with all of these tags.")] = field(default_factory=list)
    team: Annotated[str | None, Param("Only this team.")] = None
    status: Annotated[str | None, Param("Only this status.", choices=STATUSES)] = None
    since: Annotated[str | None, Param("updated_at on or after this date (ISO 8601).")] = None
    until: Annotated[str | None, Param("updated_at on or before this date (ISO 8601).")] = None
    limit: Annotated[int, Param("At most this many hits.", ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT
    include_superseded: Annotated[
        bool | None,
        Param(
            "Also show superseded, archived and expired memories (flagged); "
            "null follows the workspace setting."
        ),
    ] = None
    full: Annotated[
        bool,
        Param(
            "Also return the best match's whole file (data.full.content): use it for "
            "'what did we decide about X' questions to get the answer in one call."
        ),
    ] = False
    brain: Annotated[bool, Param("Include Box Brain (source-backed) hits.")] = True


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


class Row(tuple):  # type: ignore[type-arg]
    """One cached index entry, as selected by ENTRY_COLS (a tuple: cheap to build by the thousand)."""

    __slots__ = ()
    rid: int
    id: str
    folder: str
    path: str
    title: str
    slug: str
    kind: str
    status: str
    team: str
    tags: str
    updated_at: str
    updated_ts: float | None
    expires_ts: float | None
    superseded_by: str | None
    hidden: int
    file_id: str | None


for _i, _name in enumerate(ENTRY_FIELDS):
    setattr(Row, _name, property(itemgetter(_i)))


class Hit:
    __slots__ = ("matched_on", "row", "score")

    def __init__(self, row: Row, score: float, matched_on: str) -> None:
        self.row = row
        self.score = score
        self.matched_on = matched_on


# --- parsing --------------------------------------------------------------------------------


def tokens_of(text: str) -> list[str]:
    words = list(dict.fromkeys(WORD_RE.findall(text.casefold())))
    kept = [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
    return kept or words


def _date(value: str, *, end_of_day: bool) -> float:
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
        f.since = _date(req.since, end_of_day=False)
    if req.until:
        f.until = _date(req.until, end_of_day=True)
    return " ".join(rest), f


# --- the search -----------------------------------------------------------------------------
# SQL text is assembled from fixed fragments (column lists, generated placeholder names); every
# value a query holds is a bound parameter. That is what the `noqa: S608` lines below rely on.


class Search:
    """One recall over an up-to-date cache."""

    def __init__(self, cache: RecallCache, filters: Filters, include_hidden: bool, limit: int) -> None:
        self.cache = cache
        self.db = cache.conn
        self.filters = filters
        self.include_hidden = include_hidden or filters.asks_hidden()
        self.limit = limit
        self.now = time.time()
        self.warnings: list[str] = []
        self.ranges_read = 0  # runs of the free-text scoring statement (`_newest_first`)

    def rows(self, where: str, params: dict[str, Any], *, filtered: bool = True) -> list[Row]:
        """Entries matching `where` (named parameters), and the filters unless `filtered=False`."""
        if filtered:
            fsql, fparams = self.filters.where(self.include_hidden, self.now)
            where, params = f"({where}) AND {fsql}", {**params, **fparams}
        sql = f"SELECT {ENTRY_COLS} FROM entries e WHERE {where}"  # noqa: S608
        return [Row(r) for r in self.db.execute(sql, params)]

    def is_hidden(self, r: Row) -> bool:
        return bool(r.hidden) or (r.expires_ts is not None and r.expires_ts <= self.now)

    def flag(self, r: Row) -> str | None:
        if r.status in HIDDEN_STATUSES:
            return r.status
        if r.expires_ts is not None and r.expires_ts <= self.now:
            return "expired"
        return None

    def current_of(self, r: Row) -> str:
        """The current memory of `r`'s supersede chain (its own id when nothing supersedes it)."""
        cur, seen = r, {r.id}
        while cur.superseded_by and cur.superseded_by not in seen:
            nxt = self.rows("e.id = :id", {"id": cur.superseded_by}, filtered=False)
            if not nxt:
                return cur.superseded_by
            cur = _prefer(nxt)
            seen.add(cur.id)
        return cur.id

    # --- direct routes ------------------------------------------------------------------

    def direct(self, found: list[Row], route: str, what: str) -> list[Hit]:
        """One memory named exactly (id, file id, wikilink, slug): hidden ones lead to their current."""
        r = _prefer(found)
        if self.include_hidden or not self.is_hidden(r):
            return [Hit(r, 10.0, route)] if self._passes(r) else []
        cur_id = self.current_of(r)
        cur = self.rows("e.id = :id", {"id": cur_id}, filtered=False) if cur_id != r.id else []
        if cur and not self.is_hidden(_prefer(cur)):
            c = _prefer(cur)
            self.warnings.append(
                f"{what} is {self.flag(r)}{self._id_note(what, r)}; showing the current memory {c.id} "
                "(--include-superseded shows the old one)"
            )
            return [Hit(c, 10.0, route)] if self._passes(c) else []
        self.warnings.append(
            f"{what} is {self.flag(r)}{self._id_note(what, r)}; pass --include-superseded to show it"
        )
        return []

    @staticmethod
    def _id_note(what: str, r: Row) -> str:
        """` (mem_...)` unless `what` already names the id (`memory mem_...`)."""
        return "" if r.id in what else f" ({r.id})"

    def _passes(self, r: Row) -> bool:
        return bool(self.rows("e.rid = :rid", {"rid": r.rid}))

    def by_id(self, mem_id: str) -> list[Row]:
        return self.rows("e.id = :id", {"id": mem_id}, filtered=False)

    def by_file_id(self, file_id: str) -> list[Row]:
        return self.rows("e.file_id = :fid", {"fid": file_id}, filtered=False)

    def by_title(self, title: str) -> list[Row]:
        """Exact title first, then case-insensitive (as `by_wikilink` is read)."""
        same = self.rows("e.title_cf = :t", {"t": folded(title)}, filtered=False)
        return [r for r in same if r.title == title] or same

    def by_slug(self, slug: str) -> list[Row]:
        return self.rows("e.slug_cf = :slug", {"slug": folded(slug)}, filtered=False)

    def chain(self, r: Row) -> list[Row]:
        """The whole supersede chain through `r`, oldest first."""
        first, seen = r, {r.id}
        while prev := self.rows("e.superseded_by = :id", {"id": first.id}, filtered=False):
            p = _prefer(prev)
            if p.id in seen:
                break
            seen.add(p.id)
            first = p
        out: list[Row] = []
        cur: Row | None = first
        visited: set[str] = set()
        while cur is not None and cur.id not in visited:
            visited.add(cur.id)
            out.append(cur)
            nxt = (
                self.rows("e.id = :id", {"id": cur.superseded_by}, filtered=False)
                if cur.superseded_by
                else []
            )
            cur = _prefer(nxt) if nxt else None
        return out

    # --- filter listing -----------------------------------------------------------------

    def listing(self) -> list[Hit]:
        """A structured query alone: every match, newest first.

        Walking the (covering) updated-time index stops after `limit` matches, which is quick
        unless a tag filter keeps few entries: then the tag's own entries are read and sorted.
        """
        fsql, params = self.filters.where(self.include_hidden, self.now)
        rare = False
        if self.filters.tags:
            for t in self.filters.tags:
                n = self.db.execute(
                    "SELECT count(*) FROM tags WHERE tag = :t OR (tag > :lo AND tag < :hi)",
                    {"t": t, "lo": t + "/", "hi": t + "0"},
                ).fetchone()[0]
                rare = rare or n * 50 < self.cache.entry_count()
        if not rare:  # keep the planner on the time index: the tag test becomes a per-row probe
            fsql = fsql.replace("e.rid IN (SELECT rid FROM tags", "+e.rid IN (SELECT rid FROM tags")
        sql = (
            f"SELECT {ENTRY_COLS} FROM entries e WHERE {fsql} "  # noqa: S608
            f"ORDER BY e.updated_ts DESC, {ORDER_TAIL} LIMIT :lim"
        )
        params["lim"] = self.limit
        return [Hit(Row(r), 0.0, "filter") for r in self.db.execute(sql, params)]

    # --- free text ----------------------------------------------------------------------

    def free_text(self, text: str, skip: set[int]) -> list[Hit]:
        """Title/slug/tag matches scored by the ladder in SQL, then body-only hits if room is left."""
        tokens = tokens_of(text)
        if len(tokens) > MAX_TOKENS:
            self.warnings.append(f"only the first {MAX_TOKENS} words of the query are searched")
            tokens = tokens[:MAX_TOKENS]
        hits = self._field_hits(text, tokens, skip)
        if len(hits) < self.limit and tokens:
            hits += self._body_only(tokens, skip | {h.row.rid for h in hits}, self.limit - len(hits))
        return hits

    def _field_hits(self, text: str, tokens: list[str], skip: set[int]) -> list[Hit]:
        """The best `limit` entries by the title/slug/tag ladder.

        Exact matches (whole query = title 10 / slug 8 / tag 6) come from their indexes. Partial
        ones come from `postings` alone: for each token, the title/slug/tag words containing it
        (a scan of the small word list) give every entry where the token is inside a field, with
        that field's weight (title 4, slug 3, tag 2); the +0.1 per further token looks at the
        body only for a token no field of that entry holds. Scores are compared as integer
        tenths, so equal scores tie exactly and go to the newest (entries stamped in the same
        millisecond at the cut-off are taken in cache order).
        """
        qn = folded(text)
        keys = {
            "qn": qn,
            "qslug": slugify(text) if _ASCII_ALNUM.search(text) else qn,
            "qtag": _safe_tag(text) or qn,
        }
        exact: list[Hit] = []
        # Only the `limit` best of them, in the final order (score, newest, not superseded, id):
        # a common tag as the query matches thousands. With `limit` of them nothing partial can
        # rank (every exact score is above every partial one), so the rest is not scored.
        fsql, fparams = self.filters.where(self.include_hidden, self.now)
        sql = (
            f"SELECT {ENTRY_COLS} FROM entries e WHERE (e.title_cf = :qn OR e.slug_cf IN (:qn, :qslug) "  # noqa: S608
            "OR e.rid IN (SELECT rid FROM tags WHERE tag IN (:qn, :qtag))) "
            f"AND e.rid NOT IN (SELECT value FROM json_each(:xskip)) AND {fsql} "
            "ORDER BY CASE WHEN e.title_cf = :qn THEN 0 WHEN e.slug_cf IN (:qn, :qslug) THEN 1 ELSE 2 END, "
            f"e.updated_ts DESC, {ORDER_TAIL} LIMIT :xlim"
        )
        for r in (
            Row(t)
            for t in self.db.execute(sql, {**keys, **fparams, "xskip": _json_ints(skip), "xlim": self.limit})
        ):
            if folded(r.title) == qn:
                exact.append(Hit(r, 10.0, "title"))
            elif folded(r.slug) in (qn, keys["qslug"]):
                exact.append(Hit(r, 8.0, "slug"))
            else:
                exact.append(Hit(r, 6.0, "tag"))
        if not tokens or len(exact) >= self.limit:
            return exact
        p: dict[str, Any] = {"skip": _json_ints(skip | {h.row.rid for h in exact}), "lim": self.limit}
        psql, pparams = self.filters.where(self.include_hidden, self.now, on="postings")
        p.update(pparams)
        parts: list[str] = []
        word_lists: list[list[str]] = []
        cover = len(tokens) >= COVER
        for i, t in enumerate(tokens):
            p[f"b{i}"] = _phrase(t)
            words = [w for (w,) in self.db.execute(*_vocab_sql(t, cover))]
            word_lists.append(words)
            if len(words) == 1:  # one (word, rid) posting per entry: no grouping needed
                p[f"w{i}"] = words[0]
                parts.append(
                    f"SELECT p.rid, p.field, p.uts, {1 << i} AS bit FROM postings p "  # noqa: S608
                    f"WHERE p.word = :w{i} AND {{pin}} AND {psql}"
                )
            elif words:
                p[f"w{i}"] = orjson.dumps(words).decode()
                parts.append(
                    f"SELECT p.rid, max(p.field) AS field, p.uts, {1 << i} AS bit FROM postings p "  # noqa: S608
                    f"WHERE p.word IN (SELECT value FROM json_each(:w{i})) AND {{pin}} AND {psql} "
                    "GROUP BY p.rid"
                )
        weights: list[int] = []
        if cover:
            # Every body holding a word is a candidate too (field 1), and each word counts by its
            # rarity: a memory holding "lgbtq" and "support" outranks one holding "caroline" and "go".
            vsql, vparams = self.filters.where(self.include_hidden, self.now)
            p.update(vparams)
            n = max(self.cache.entry_count(), 1)
            for i in range(len(tokens)):
                parts.append(  # its time and visibility are read once per entry, below
                    f"SELECT rowid AS rid, 1 AS field, NULL AS uts, {1 << i} AS bit "  # noqa: S608
                    f"FROM fts WHERE fts MATCH :b{i} AND {{pin_body}}"
                )
                df = max(
                    self.db.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH :b LIMIT :m)",
                        {"b": p[f"b{i}"], "m": n // 2 + 1},
                    ).fetchone()[0],
                    self.db.execute(
                        "SELECT count(*) FROM (SELECT DISTINCT rid FROM postings "
                        "WHERE word IN (SELECT value FROM json_each(:w)) LIMIT :m)",
                        {"w": orjson.dumps(word_lists[i]).decode(), "m": n // 2 + 1},
                    ).fetchone()[0],
                )
                weights.append(_weight(n, df))
        if not parts:
            return exact
        where = "rid NOT IN (SELECT value FROM json_each(:skip))"
        if self.filters.entry_level():
            esql, eparams = self.filters.where(self.include_hidden, self.now, on="entry-only")
            p.update(eparams)
            where += f" AND EXISTS (SELECT 1 FROM entries e WHERE e.rid = per.rid AND {esql})"  # noqa: S608

        def statement(pin: str, body: str) -> str:
            """The scoring statement over the entries `pin` admits (`{col}`: a rid column);
            `body`: token {i}'s body test."""
            if cover:  # bodies are in `hit`: the mask has every word the memory holds
                total = sum(weights)
                held = " + ".join(f"((mask & {1 << i}) > 0) * {w}" for i, w in enumerate(weights))
                tenths = f"10 + 4 * ((({held}) * {2 * LEVELS} + {total}) / {2 * total}) + best - 1"
            elif len(tokens) > 1:  # the body is read only for a token no field of the entry holds
                found = " + ".join(
                    f"((mask & {1 << i}) > 0 OR {body.format(i=i)})" for i in range(len(tokens))
                )
                tenths = f"best * 10 + min(9, ({found}) - 1)"
            else:
                tenths = "best * 10"
            hit = " UNION ALL ".join(parts).format(
                pin=pin.format(col="p.rid"), pin_body=pin.format(col="fts.rowid")
            )
            if not cover:
                return f"""
                    WITH hit AS ({hit}),
                    per AS MATERIALIZED
                      (SELECT rid, max(field) AS best, uts, sum(bit) AS mask FROM hit GROUP BY rid)
                    SELECT rid, best, {tenths} AS tenths, uts FROM per
                    WHERE {where}"""  # noqa: S608
            # A word in both the title and the body is one bit: the distinct bits sum to their OR.
            return f"""
                WITH hit AS ({hit}),
                per AS MATERIALIZED
                  (SELECT rid, max(field) AS best, sum(DISTINCT bit) AS mask FROM hit GROUP BY rid)
                SELECT per.rid AS rid, best, {tenths} AS tenths, e.updated_ts AS uts
                FROM per JOIN entries e ON e.rid = per.rid
                WHERE per.{where} AND {vsql}"""  # noqa: S608

        def reach(held: list[int]) -> int:
            """The most tenths an entry holding only the tokens `held` can score."""
            if not held:
                return -1
            if cover:
                w = sum(weights[i] for i in held)
                return 10 + 4 * ((w * 2 * LEVELS + sum(weights)) // (2 * sum(weights))) + 3
            return 40 + min(9, len(held) - 1)

        seed, rare = self._rare_first(tokens, word_lists, p, statement)
        common = [i for i in range(len(tokens)) if i not in rare]
        top = self._newest_first(
            statement(
                "{col} BETWEEN :lo AND :hi",
                "rid IN (SELECT rowid FROM fts WHERE fts MATCH :b{i} AND rowid BETWEEN :lo AND :hi)",
            ),
            p,
            # An entry holding none of the rare tokens finds at most the others.
            reach(common),
            seed,
            len(common) >= MANY,  # a small cache or MANY common words: one run
        )
        full = {
            r.rid: r
            for r in self.rows(
                "e.rid IN (SELECT value FROM json_each(:r))",
                {"r": _json_ints(t[0] for t in top)},
                filtered=False,
            )
        }
        on = {4: "title", 3: "slug", 2: "tag", 1: "body"}
        return exact + [Hit(full[rid], tenths / 10, on[best]) for rid, best, tenths, _ in top if rid in full]

    def _rare_first(
        self,
        tokens: list[str],
        word_lists: list[list[str]],
        p: dict[str, Any],
        statement: Callable[[str, str], str],
    ) -> tuple[list[tuple[Any, ...]], list[int]]:
        """Score the entries that hold a rare query token first: (their best rows, which of the
        tokens are rare). A token is rare when at most RARE bodies and RARE field postings (and at
        most 1% of the entries) hold it; every other entry then finds at most the remaining
        tokens, which lowers the level older entries are bounded by (the slug of a memory: its
        one unusual word is in few entries).

        Their body tests go through the rare tokens' own (short) doclists: `t AND (rare...)` for an
        entry whose body holds a rare token, one rowid lookup per entry for the few that hold one
        only in a field.
        """
        if len(tokens) < 2 or self.cache.entry_count() <= SMALL:
            return [], []
        limit = min(RARE, self.cache.entry_count() // 100)
        rare: list[int] = []
        for i, words in enumerate(word_lists):
            n_body = self.db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH :b LIMIT :m)",
                {"b": p[f"b{i}"], "m": limit + 1},
            ).fetchone()[0]
            n_field = self.db.execute(
                "SELECT count(*) FROM (SELECT 1 FROM postings "
                "WHERE word IN (SELECT value FROM json_each(:w)) LIMIT :m)",
                {"w": orjson.dumps(words).decode(), "m": limit + 1},
            ).fetchone()[0]
            if n_body <= limit and n_field <= limit:
                rare.append(i)
        if not rare:
            return [], []
        any_rare = " OR ".join(p[f"b{i}"] for i in rare)
        in_body = {r for (r,) in self.db.execute("SELECT rowid FROM fts WHERE fts MATCH :q", {"q": any_rare})}
        in_field = {
            r
            for (r,) in self.db.execute(
                "SELECT rid FROM postings WHERE word IN (SELECT value FROM json_each(:w))",
                {"w": orjson.dumps([w for i in rare for w in word_lists[i]]).decode()},
            )
        }
        q = {**p, "q": _json_ints(in_body | in_field), "qf": _json_ints(in_field - in_body)}
        for i in range(len(tokens)):
            q[f"bq{i}"] = f"{p[f'b{i}']} AND ({any_rare})"
        sql = statement(
            "{col} IN (SELECT value FROM json_each(:q))",
            "(rid IN (SELECT rowid FROM fts WHERE fts MATCH :bq{i}) OR rid IN "
            "(SELECT rowid FROM fts WHERE fts MATCH :b{i} AND rowid IN (SELECT value FROM json_each(:qf))))",
        )
        return self.best(sql, q), rare

    def _newest_first(
        self, sql: str, p: dict[str, Any], top_level: int, seed: list[tuple[Any, ...]], many: bool
    ) -> list[tuple[Any, ...]]:
        """Run the scoring statement `sql` over rid ranges, newest first, until no older entry can
        make the cut; the `limit` best (rid, best, tenths, uts) rows and those tying the last of them
        on (tenths, uts), as one run over all entries.

        A rid orders entries by updated time (`recall_cache.RID_SHIFT`), and every posting and body
        match of an entry carries its rid, so a range's run scores its entries exactly. Once the
        limit-th best so far outranks what any entry below the range could score - the top level
        (`top_level` tenths) at an updated time under `uts_below` - the rest is not read. Ranges
        grow by half from WINDOW entries; a query whose best matches are old reads them all.
        """
        hi = self.db.execute("SELECT max(rid) FROM entries").fetchone()[0]
        got = _cut(seed, self.limit)
        if top_level < 0:
            return got
        left = self.cache.entry_count()
        # A small cache is read in one run; so is any cache when the top level needs MANY common
        # words at once (few entries hold them all, so the ranges would read everything anyway).
        span = WINDOW if left > SMALL and not many else left
        while hi is not None:
            # A range leaving less than half its size behind takes the rest too (one run fewer).
            below = None
            if left - span >= span // 2:
                below = self.db.execute(
                    "SELECT rid FROM src WHERE rid <= :hi ORDER BY rid DESC LIMIT 1 OFFSET :m",
                    {"hi": hi, "m": span},
                ).fetchone()
            lo = below[0] + 1 if below else -(1 << 63)
            got += self.best(sql, {**p, "lo": lo, "hi": hi})
            self.ranges_read += 1
            got = _cut(list({r[0]: r for r in got}.values()), self.limit)
            if below is None:
                break
            if len(got) >= self.limit:
                tenths, uts = got[self.limit - 1][2], got[self.limit - 1][3]
                bound = uts_below(lo)
                if tenths > top_level or (
                    tenths == top_level and uts is not None and (bound is None or uts >= bound)
                ):
                    break
            hi, left, span = lo - 1, left - span, span * 3 // 2
        return got

    def _body_only(self, tokens: list[str], skip: set[int], k: int) -> list[Hit]:
        """Body-only matches by BM25, scaled to 1..1.9 against the best of them."""
        fsql, params = self.filters.where(self.include_hidden, self.now)
        sql = (
            f"SELECT bm25(fts) AS r, {ENTRY_COLS} FROM fts JOIN entries e ON e.rid = fts.rowid "  # noqa: S608
            f"WHERE fts MATCH :q AND e.rid NOT IN (SELECT value FROM json_each(:skip)) AND {fsql} "
            "ORDER BY r LIMIT :k"
        )
        params.update(q=" OR ".join(_phrase(t) for t in tokens), skip=_json_ints(skip), k=k + 1)
        got = [(-r[0], Row(r[1:])) for r in self.db.execute(sql, params)]
        top = max((g for g, _ in got), default=0.0)

        def score(g: float) -> float:
            return round(1 + (0.9 * g / top if top > 0 else 0.0), 6)

        if len(got) > k and score(got[k - 1][0]) == score(got[k][0]):
            # Ties at the cut (equal bm25, or scores equal once rounded): take every body match
            # scoring at least as well, so the final order - not bm25's - decides between them.
            low = (score(got[k - 1][0]) - 1 - 1e-6) * top / 0.9 if top > 0 else -math.inf
            params.update(k=-1, low=low)
            sql = sql.replace("ORDER BY r LIMIT :k", "AND -bm25(fts) >= :low ORDER BY r LIMIT :k")
            got = [(-r[0], Row(r[1:])) for r in self.db.execute(sql, params)]
        hits = [Hit(r, score(g), "body") for g, r in got]
        if len(hits) > k:
            last = hits[k - 1].score
            hits = [h for h in hits if h.score >= last]
        return hits

    def best(self, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """The `limit` best rows of a scoring statement (rid, best, tenths, uts) by tenths and time,
        with every row tying the last of them on both: which of those ranks first is for
        `hit_order` to say (by id), not for the order rows happen to come in."""
        lim = self.limit
        rows = self.db.execute(
            f"{sql} ORDER BY tenths DESC, uts DESC LIMIT :lim", {**params, "lim": lim + 1}
        ).fetchall()
        if len(rows) > lim and _rank(rows[lim - 1])[:3] == _rank(rows[lim])[:3]:
            tied = self.db.execute(
                f"SELECT * FROM ({sql}) WHERE tenths = :tt AND uts IS :tu",  # noqa: S608
                {**params, "tt": rows[lim - 1][2], "tu": rows[lim - 1][3]},
            ).fetchall()
            rows = list({r[0]: r for r in [*rows, *tied]}.values())
        return _cut(rows, lim)

    # --- output -------------------------------------------------------------------------

    def bodies(self, rids: list[int]) -> dict[int, str]:
        """The hits' bodies for their excerpts, read back from their memory files (the cache keeps
        no copy). A file that is not on this machine - a Box Drive placeholder, a Box file missing
        from the content cache - is not fetched for an excerpt, nor is one that cannot be read."""
        store = self.cache.ws.store
        out: dict[int, str] = {}
        for rid, path in self.db.execute(
            "SELECT rid, path FROM entries WHERE rid IN (SELECT value FROM json_each(:rids))",
            {"rids": _json_ints(rids)},
        ):
            raw = store.read_if_local(path)
            if raw is not None:
                out[rid] = split_body(raw)[1]
        return out


def _cut(rows: list[tuple[Any, ...]], limit: int) -> list[tuple[Any, ...]]:
    """Scoring rows in `_rank` order: the first `limit`, and every later one tying the last of
    them on (tenths, uts)."""
    rows = sorted(rows, key=_rank)
    if len(rows) <= limit:
        return rows
    last = _rank(rows[limit - 1])[:3]
    end = limit
    while end < len(rows) and _rank(rows[end])[:3] == last:
        end += 1
    return rows[:end]


# The tail of every SQL ORDER BY that cuts hits, after score and time: as `hit_order`.
ORDER_TAIL = "e.superseded_by IS NOT NULL, e.id DESC, e.folder"


def hit_order(hits: list[Hit]) -> list[Hit]:
    """The one order of recall hits: best score; then newest `updated_at`, undated last; then not
    superseded (supersede bookkeeping gives the old memory its successor's time); then the later
    (ULID) id; then the folder ((folder, id) is unique: a total order)."""
    out = sorted(hits, key=lambda h: h.row.folder)
    out.sort(key=lambda h: h.row.id, reverse=True)
    out.sort(
        key=lambda h: (
            -h.score,
            h.row.updated_ts is None,
            -(h.row.updated_ts or 0.0),
            bool(h.row.superseded_by),
        )
    )
    return out


def _rank(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """(rid, best, tenths, uts) in the scoring statement's order: tenths, then newest (undated
    last), then rid."""
    return (-row[2], row[3] is None, -(row[3] or 0.0), row[0])


def _vocab_sql(token: str, whole_words: bool) -> tuple[str, tuple[str, ...]]:
    """The field words a query token matches: any word containing it, or, for a question
    (`whole_words`), the token itself and - from four letters - the words it begins ("go" is not
    in "good"; "deploy" is in "deployment")."""
    if not whole_words:
        return "SELECT word FROM vocab WHERE instr(word, ?) > 0", (token,)
    if len(token) < 4:
        return "SELECT word FROM vocab WHERE word = ?", (token,)
    return "SELECT word FROM vocab WHERE word >= ? AND word < ?", (token, token + "\U0010ffff")


def _weight(n: int, df: int) -> int:
    """A query word's weight by how many of the `n` entries hold it: 1 for a common word, up to
    about log2(n) for a word one entry holds."""
    return 1 + max(0, int(math.log2(n / (df + 1))))


def _json_ints(values: Any) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def _phrase(token: str) -> str:
    """An FTS5 string literal: whatever the token holds, it is matched as text, not syntax."""
    return '"' + token.replace('"', '""') + '"'


def _safe_tag(text: str) -> str | None:
    try:
        return normalize_tag(text)
    except InvalidInput:
        return None


def _prefer(rows: list[Row]) -> Row:
    """The memory a name means when several share it: live first, then the newest (as the index maps)."""
    return max(rows, key=lambda r: (r.status in LIVE, r.updated_at, r.id))


def _tags(r: Row) -> list[str]:
    tags = orjson.loads(r.tags)
    return [str(t) for t in tags] if isinstance(tags, list) else []


# --- excerpts -------------------------------------------------------------------------------


def excerpt(body: str, title: str, terms: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """~200 characters of the body around the first match (else its opening), with match spans."""
    lines = body.strip().splitlines()
    if lines and lines[0].lstrip("# ").strip() == title.strip() and lines[0].startswith("#"):
        lines = lines[1:]
    flat = " ".join(" ".join(lines).split())
    if not flat:
        return "", []
    pats = [re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if t]
    # Whole tokens only: `use` does not mark the start of `user-facing`.
    rx = re.compile(r"(?<!\w)(?:" + "|".join(pats) + r")(?!\w)", re.IGNORECASE) if pats else None
    m = rx.search(flat) if rx else None
    if m is None and terms:
        # Stemmed body matches ("decide" found "decided"): fall back to the word's stem.
        stems = [re.escape(t[: max(3, len(t) - 3)]) for t in terms if len(t) > 3]
        if stems:
            rx = re.compile(r"\b(?:" + "|".join(stems) + r")\w*", re.IGNORECASE)
            m = rx.search(flat)
    start = 0
    if m is not None and m.start() > EXCERPT_CHARS // 3:
        start = m.start() - EXCERPT_CHARS // 3
        sp = flat.find(" ", start)
        start = sp + 1 if 0 <= sp < m.start() else start
    end = start + EXCERPT_CHARS
    if end < len(flat):
        sp = flat.rfind(" ", start + EXCERPT_CHARS // 2, end)
        end = sp if sp > 0 else end
    text = flat[start:end]
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    marks = [(a.start() + len(prefix), a.end() + len(prefix)) for a in rx.finditer(text)] if rx else []
    return prefix + text + suffix, marks


def _spans_out(spans: list[tuple[int, int]]) -> list[list[int]]:
    """Highlights as JSON gives them: [start, end) offsets in characters (Unicode code points)
    into the hit's `excerpt`, in order and never overlapping - what a terminal shows in colour."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if b > a and (not out or a >= out[-1][1]):
            out.append([a, b])
    return out


def mark_terms(text: str, terms: list[str]) -> list[list[int]]:
    """The spans of `terms` in an excerpt (whole tokens, any case; else a stem of each word, as a
    stemmed full-text match found it)."""
    pats = [re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if t]
    if not text or not pats:
        return []
    rx = re.compile(r"(?<!\w)(?:" + "|".join(pats) + r")(?!\w)", re.IGNORECASE)
    spans = [(m.start(), m.end()) for m in rx.finditer(text)]
    if not spans:
        stems = [re.escape(t[: max(3, len(t) - 3)]) for t in terms if len(t) > 3]
        if stems:
            rx = re.compile(r"\b(?:" + "|".join(stems) + r")\w*", re.IGNORECASE)
            spans = [(m.start(), m.end()) for m in rx.finditer(text)]
    return _spans_out(spans)


# --- the entry point ------------------------------------------------------------------------

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
    """The "Box Brain (source-backed)" section (brain-sync.md): imported Box documents.

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
        res.data["brain"] = brain_hits(ws, text, filters=filters) if req.brain else []
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
        from box_memory.write.companions import companion_states, stale_warning

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
        r = _prefer(found)
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
            if s.is_hidden(_prefer(found)) and not s.include_hidden:
                # An old slug: its chain leads to the current memory (free text scores the rest).
                hits = s.direct(found, "slug", f"slug {text}")
                for h in hits:
                    h.score = 8.0
        hits += s.free_text(text, {h.row.rid for h in hits})
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
            "highlights": _spans_out(spans),
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
