"""Free-text ranking over the recall cache: the title/slug/tag ladder, question ranking, BM25 bodies.

Free-text scoring per entry: the whole query equals the title 10, the slug (or the query's
slugified form) 8, a tag (or its normalised form) 6; otherwise the best partial field over the
query tokens - a token inside the title 4, the slug 3, a tag 2 (case-insensitive substring) - plus
0.1 per further distinct token matching anywhere (body included), at most +0.9; body-only matches
1 + 0.9 * bm25 / best bm25 of the result.

A question - a query of COVER (3) or more tokens - is ranked by how much of it a memory holds
instead (spec deviation: cli.md describes the ladder only). Each token weighs 1 + log2(entries /
entries holding it in their bodies, or in their fields if more do), so rare words count more; a
memory holding tokens of weight w out of the query's total W (in its title, slug, tags or body)
is at level round(LEVELS * w / W) and scores
1 + 0.4 * level + 0.1 * field (title 3, slug 2, tag 1, body 0): 1.0 to 5.3, always below the exact
tiers. In fields such a token matches a whole word, or from four letters the start of one ("go" is
not in "good"); in bodies a whole (stemmed) word, as FTS5 matches it. A question is read in two
passes: the entries a field of which holds one of its words (the postings), newest first as the
ladder reads them; then, of the others, only the bodies that can still reach the limit-th of
those (`Ladder._bodies_only`).

Every step that keeps only the best `limit` candidates keeps every candidate tying the last one
kept on score and time (`hit_order`, below, decides between them).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Collection
from operator import itemgetter
from typing import Any

import orjson

from box_memory.errors import InvalidInput
from box_memory.format.ids import normalize_tag, slugify
from box_memory.format.model import LIVE
from box_memory.recall.cache_db import ENTRY_COLS, ENTRY_FIELDS, folded, json_ints, uts_below
from box_memory.recall.cache_refresh import RecallCache
from box_memory.recall.query import Filters, tokens_of

WINDOW = 1024  # entries in the first rid range free-text scoring reads (then 1.5x, 2.25x...)
SMALL = 16 * WINDOW  # up to this many entries, free-text scoring reads them all in one run
MANY = 6  # ...and as many common (not rare) query words
RARE = 1000  # a query token in at most this many (and 1%) of the bodies and of the field postings
# is scored up front
MAX_TOKENS = 32  # one bit each in the match mask; SQLite caps compound SELECTs at 500 terms
COVER = 3  # a query of this many words or more is ranked by how much of it a memory holds
LEVELS = 10  # ...in this many steps of its words' weight (the partial scores 1.0..5.3)
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")


# --- the rows and the order of hits ---------------------------------------------------------
# Recall's view of a cached index entry: the row, the hit, and the one order of hits.
#
# One total order everywhere (`hit_order`): score, then the newest `updated_at` (undated last), then
# not superseded, then the later id, then the folder. Every step that keeps only the best `limit`
# candidates keeps, with them, every candidate tying the last one kept on what that step can see
# (score and time), so `--limit N` is always exactly the first N of the unlimited answer.


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


def prefer(rows: list[Row]) -> Row:
    """The memory a name means when several share it: live first, then the newest (as the index maps)."""
    return max(rows, key=lambda r: (r.status in LIVE, r.updated_at, r.id))


# --- scoring statements ----------------------------------------------------------------------
# SQL text is assembled from fixed fragments (column lists, generated placeholder names); every
# value a query holds is a bound parameter. That is what the `noqa: S608` lines below rely on.


class Ladder:
    """Free-text ranking of one recall over an up-to-date cache (`routes.Search` adds the routes)."""

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
            for t in self.db.execute(sql, {**keys, **fparams, "xskip": json_ints(skip), "xlim": self.limit})
        ):
            if folded(r.title) == qn:
                exact.append(Hit(r, 10.0, "title"))
            elif folded(r.slug) in (qn, keys["qslug"]):
                exact.append(Hit(r, 8.0, "slug"))
            else:
                exact.append(Hit(r, 6.0, "tag"))
        if not tokens or len(exact) >= self.limit:
            return exact
        p: dict[str, Any] = {"skip": json_ints(skip | {h.row.rid for h in exact}), "lim": self.limit}
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
        counts: list[tuple[int, int]] | None = None
        if cover:
            # Each word counts by its rarity: a memory holding "lgbtq" and "support" outranks one
            # holding "caroline" and "go".
            vsql, vparams = self.filters.where(self.include_hidden, self.now)
            p.update(vparams)
            n = max(self.cache.entry_count(), 1)
            counts = [self._holders(p[f"b{i}"], word_lists[i], n // 2 + 1) for i in range(len(tokens))]
            weights = [_weight(n, max(c)) for c in counts]
        elif not parts:
            return exact
        where = "rid NOT IN (SELECT value FROM json_each(:skip))"
        if self.filters.entry_level():
            esql, eparams = self.filters.where(self.include_hidden, self.now, on="entry-only")
            p.update(eparams)
            where += f" AND EXISTS (SELECT 1 FROM entries e WHERE e.rid = per.rid AND {esql})"  # noqa: S608
        total = sum(weights)

        def statement(
            pin: str, body: str, bodies: Collection[int] = (), fields: bool = True, pin_body: str = ""
        ) -> str:
            """The scoring statement over the entries `pin` admits (`{col}`: a rid column);
            `body`: token {i}'s body test. A question's `bodies` are the tokens whose body matches
            are candidates too, so their test is the mask (`pin_body`, if given, admits those
            matches instead of `pin`); without `fields`, only entries no field of which holds a
            query word are scored."""
            if not cover:
                bodies = ()
            found = [
                f"((mask & {1 << i}) > 0" + ("" if i in bodies else f" OR {body.format(i=i)}") + ")"
                for i in range(len(tokens))
            ]
            if cover:
                held = " + ".join(f"{f} * {w}" for f, w in zip(found, weights, strict=True))
                tenths = f"10 + 4 * ((({held}) * {2 * LEVELS} + {total}) / {2 * total}) + best - 1"
            elif len(tokens) > 1:  # the body is read only for a token no field of the entry holds
                tenths = f"best * 10 + min(9, ({' + '.join(found)}) - 1)"
            else:
                tenths = "best * 10"
            hit = " UNION ALL ".join([*(parts if fields else []), *(_body_part(i) for i in bodies)]).format(
                pin=pin.format(col="p.rid"), pin_body=(pin_body or pin).format(col="fts.rowid")
            )
            if not bodies:  # postings carry each entry's time and visibility
                return f"""
                    WITH hit AS ({hit}),
                    per AS MATERIALIZED
                      (SELECT rid, max(field) AS best, uts, sum(bit) AS mask FROM hit GROUP BY rid)
                    SELECT rid, best, {tenths} AS tenths, uts FROM per
                    WHERE {where}"""  # noqa: S608
            # A word in both the title and the body is one bit: the distinct bits sum to their OR.
            only = "" if fields else f" AND NOT EXISTS ({_IN_FIELD})"
            return f"""
                WITH hit AS ({hit}),
                per AS MATERIALIZED
                  (SELECT rid, max(field) AS best, sum(DISTINCT bit) AS mask FROM hit GROUP BY rid)
                SELECT per.rid AS rid, best, {tenths} AS tenths, e.updated_ts AS uts
                FROM per JOIN entries e ON e.rid = per.rid
                WHERE per.{where} AND {vsql}{only}"""  # noqa: S608

        def reach(held: list[int]) -> int:
            """The most tenths an entry holding only the tokens `held` can score."""
            if not held:
                return -1
            if cover:
                return _tenths(sum(weights[i] for i in held), total) + 3
            return 40 + min(9, len(held) - 1)

        ranges = "{col} BETWEEN :lo AND :hi"
        in_range = (  # token {i}'s body test, through the doclists of parameters {b}0, {b}1...
            "per.rid IN (SELECT rowid FROM fts WHERE fts MATCH :{b}{{i}} AND rowid BETWEEN :lo AND :hi)"
        )
        seed, rare = self._rare_first(tokens, word_lists, p, statement, counts)
        common = [i for i in range(len(tokens)) if i not in rare]
        # The entries a field of which holds a query word, newest first; an entry holding none of
        # the rare tokens finds at most the others. (A question's body-only entries come next.)
        top = (
            self._newest_first(
                statement(ranges, in_range.format(b="b"), bodies=()),
                p,
                reach(common),
                seed,
                len(common) >= MANY,  # a small cache or MANY common words: one run
            )
            if parts
            else _cut(seed, self.limit)
        )
        if cover:
            top = self._bodies_only(top, tokens, word_lists, common, weights, p, statement, ranges, in_range)
        full = {
            r.rid: r
            for r in self.rows(
                "e.rid IN (SELECT value FROM json_each(:r))",
                {"r": json_ints(t[0] for t in top)},
                filtered=False,
            )
        }
        on = {4: "title", 3: "slug", 2: "tag", 1: "body"}
        return exact + [Hit(full[rid], tenths / 10, on[best]) for rid, best, tenths, _ in top if rid in full]

    def _bodies_only(
        self,
        top: list[tuple[Any, ...]],
        tokens: list[str],
        word_lists: list[list[str]],
        common: list[int],
        weights: list[int],
        p: dict[str, Any],
        statement: Callable[..., str],
        ranges: str,
        in_range: str,
    ) -> list[tuple[Any, ...]]:
        """A question's best rows once the entries no field of which holds a query word are
        scored too: `top` is the best of every other entry (and of every entry holding a rare token).

        Such an entry scores 10 + 4 * level (tenths) of the weight its body holds, so only one
        whose body holds an essential token can still reach the limit-th row of `top`: the
        lightest common tokens are left out while even all of them together stay below it (no
        body holding only those can rank), and the bodies of the others are read, newest first.
        Every token the candidates hold besides those is found through the candidates' own
        doclists (`t AND (essential...)`).
        """
        total = sum(weights)
        bar = top[self.limit - 1][2] if len(top) >= self.limit else -1
        lightest = sorted(common, key=lambda i: (weights[i], i))
        light, essential = 0, []
        for k, i in enumerate(lightest):
            if _tenths(light + weights[i], total) >= bar:
                essential = lightest[k:]
                break
            light += weights[i]
        if not essential:
            return top
        any_essential = " OR ".join(p[f"b{i}"] for i in essential)
        q = {**p, "fw": orjson.dumps(sorted({w for words in word_lists for w in words})).decode()}
        for i in range(len(tokens)):
            q[f"be{i}"] = f"{p[f'b{i}']} AND ({any_essential})"
        return self._newest_first(
            statement(ranges, in_range.format(b="be"), bodies=essential, fields=False),
            q,
            _tenths(sum(weights[i] for i in common), total),  # the best a body alone can do
            top,
            len(essential) >= MANY,
        )

    def _rare_first(
        self,
        tokens: list[str],
        word_lists: list[list[str]],
        p: dict[str, Any],
        statement: Callable[..., str],
        counts: list[tuple[int, int]] | None,
    ) -> tuple[list[tuple[Any, ...]], list[int]]:
        """Score the entries that hold a rare query token first: (their best rows, which of the
        tokens are rare). A token is rare when at most RARE bodies and RARE entries' fields (and at
        most 1% of the entries) hold it; every other entry then finds at most the remaining
        tokens, which lowers the level older entries are bounded by (the slug of a memory: its
        one unusual word is in few entries). `counts`: each token's (bodies, entries with a field)
        holding it, when known (counted up to more than `RARE` at least).

        Their body tests go through the rare tokens' own (short) doclists: `t AND (rare...)` for an
        entry whose body holds a rare token, one rowid lookup per entry for the few that hold one
        only in a field.
        """
        if len(tokens) < 2 or self.cache.entry_count() <= SMALL:
            return [], []
        limit = min(RARE, self.cache.entry_count() // 100)
        if counts is None:
            counts = [self._holders(p[f"b{i}"], words, limit + 1) for i, words in enumerate(word_lists)]
        rare = [i for i, (n_body, n_field) in enumerate(counts) if n_body <= limit and n_field <= limit]
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
        q = {**p, "q": json_ints(in_body | in_field), "qf": json_ints(in_field - in_body)}
        for i in range(len(tokens)):
            q[f"bq{i}"] = f"{p[f'b{i}']} AND ({any_rare})"
        sql = statement(
            "{col} IN (SELECT value FROM json_each(:q))",
            "(per.rid IN (SELECT rowid FROM fts WHERE fts MATCH :bq{i}) OR per.rid IN "
            "(SELECT rowid FROM fts WHERE fts MATCH :b{i} AND rowid IN (SELECT value FROM json_each(:qf))))",
            bodies=rare,
            pin_body="1",  # a rare token's few body matches are all candidates already
        )
        return self.best(sql, q), rare

    def _holders(self, phrase: str, words: list[str], cap: int) -> tuple[int, int]:
        """How many bodies match `phrase` and how many entries have a field holding one of
        `words`, each counted up to `cap`."""
        body = self.db.execute(
            "SELECT count(*) FROM (SELECT 1 FROM fts WHERE fts MATCH :b LIMIT :m)", {"b": phrase, "m": cap}
        ).fetchone()[0]
        if not words:
            return body, 0
        if len(words) == 1:  # one posting per (word, entry)
            sql, w = "SELECT count(*) FROM (SELECT 1 FROM postings WHERE word = :w LIMIT :m)", words[0]
        else:
            sql = (
                "SELECT count(*) FROM (SELECT DISTINCT rid FROM postings "
                "WHERE word IN (SELECT value FROM json_each(:w)) LIMIT :m)"
            )
            w = orjson.dumps(words).decode()
        return body, self.db.execute(sql, {"w": w, "m": cap}).fetchone()[0]

    def _newest_first(
        self, sql: str, p: dict[str, Any], top_level: int, seed: list[tuple[Any, ...]], many: bool
    ) -> list[tuple[Any, ...]]:
        """Run the scoring statement `sql` over rid ranges, newest first, until no older entry can
        make the cut; the `limit` best (rid, best, tenths, uts) rows and those tying the last of them
        on (tenths, uts), as one run over all entries.

        A rid orders entries by updated time (`cache_db.RID_SHIFT`), and every posting and body
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
        params.update(q=" OR ".join(_phrase(t) for t in tokens), skip=json_ints(skip), k=k + 1)
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


def _rank(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """(rid, best, tenths, uts) in the scoring statement's order: tenths, then newest (undated
    last), then rid."""
    return (-row[2], row[3] is None, -(row[3] or 0.0), row[0])


def _body_part(i: int) -> str:
    """Token {i}'s body matches as candidates of a scoring statement (`{pin_body}`: their rids);
    their time and visibility are read once per entry, from `entries`."""
    return (
        f"SELECT rowid AS rid, 1 AS field, NULL AS uts, {1 << i} AS bit "  # noqa: S608
        f"FROM fts WHERE fts MATCH :b{i} AND {{pin_body}}"
    )


# Whether a field of the entry `per.rid` holds a query word (`:fw`, every word any token matches).
_IN_FIELD = "SELECT 1 FROM postings p WHERE p.rid = per.rid AND p.word IN (SELECT value FROM json_each(:fw))"


def _tenths(held: int, total: int) -> int:
    """A question's score in tenths, without its field, for an entry holding words of weight
    `held` out of the query's `total`: 10 + 4 * level."""
    return 10 + 4 * ((held * 2 * LEVELS + total) // (2 * total))


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


def _phrase(token: str) -> str:
    """An FTS5 string literal: whatever the token holds, it is matched as text, not syntax."""
    return '"' + token.replace('"', '""') + '"'


def _safe_tag(text: str) -> str | None:
    try:
        return normalize_tag(text)
    except InvalidInput:
        return None
