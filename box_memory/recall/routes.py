"""The routes of one recall that name memories (`Search`): id, file id, wikilink, slug; filters.

The direct routes - memory id, Box file id, `[[wikilink]]`, slug - with the supersede chain they
follow, the filter listing, and the bodies read back for excerpts. Free text is `rank.Ladder`'s.
"""

from __future__ import annotations

from typing import Any

from box_memory.format.model import HIDDEN_STATUSES
from box_memory.recall.cache_db import ENTRY_COLS, folded, json_ints, split_body
from box_memory.recall.rank import ORDER_TAIL, Hit, Ladder, Row, prefer
from box_memory.store.base import as_batch_reads, as_unlisted_reads


class Search(Ladder):
    """One recall over an up-to-date cache: the routes that name a memory, the filter listing."""

    # A local (Box Drive) workspace whose placeholders were searched through Box (pending.py):
    # the Box folder's store, whose text cache holds the bodies fetched for the hits' excerpts.
    drive: Any = None

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
            cur = prefer(nxt)
            seen.add(cur.id)
        return cur.id

    # --- direct routes ------------------------------------------------------------------

    def direct(self, found: list[Row], route: str, what: str) -> list[Hit]:
        """One memory named exactly (id, file id, wikilink, slug): hidden ones lead to their current."""
        r = prefer(found)
        if self.include_hidden or not self.is_hidden(r):
            return [Hit(r, 10.0, route)] if self._passes(r) else []
        cur_id = self.current_of(r)
        cur = self.rows("e.id = :id", {"id": cur_id}, filtered=False) if cur_id != r.id else []
        if cur and not self.is_hidden(prefer(cur)):
            c = prefer(cur)
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
            p = prefer(prev)
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
            cur = prefer(nxt) if nxt else None
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

    # --- output -------------------------------------------------------------------------

    def bodies(self, rids: list[int]) -> dict[int, str]:
        """The hits' bodies for their excerpts, read back from their memory files (the cache keeps
        no copy). A file that is not on this machine - a Box Drive placeholder, a Box file missing
        from the content cache - is not fetched for an excerpt, nor is one that cannot be read."""
        store = self.cache.ws.store
        by_id = as_unlisted_reads(store)
        out: dict[int, str] = {}
        found = self.db.execute(
            "SELECT e.rid, e.path, e.file_id, s.sha1 FROM entries e JOIN src s ON s.rid = e.rid "
            "WHERE e.rid IN (SELECT value FROM json_each(:rids))",
            {"rids": json_ints(rids)},
        ).fetchall()
        # A local folder's plain files read together, through one open folder each (the rest -
        # placeholders, links, Box Drive's timed reads - one by one below, as before).
        many = as_batch_reads(store) if len(found) > 1 else None
        batch = many.read_files([r[1] for r in found]) if many is not None else {}
        for rid, path, fid, sha1 in found:
            done = batch.get(path)
            raw = done[1] if done is not None and done[1] is not None else store.read_if_local(path)
            if raw is None and by_id is not None and fid:  # a folder not listed: by id and sha1
                raw = by_id.cached_text(fid, sha1)
            if raw is None and self.drive is not None and fid:  # a placeholder fetched through Box
                raw = self.drive.cached_text(fid, sha1)
            if raw is not None:
                out[rid] = split_body(raw)[1]
        return out
