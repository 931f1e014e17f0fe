"""Recall's view of a cached index entry: the row, the hit, and the one order of hits.

One total order everywhere (`hit_order`): score, then the newest `updated_at` (undated last), then
not superseded, then the later id, then the folder. Every step that keeps only the best `limit`
candidates keeps, with them, every candidate tying the last one kept on what that step can see
(score and time), so `--limit N` is always exactly the first N of the unlimited answer.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from box_memory.format.model import LIVE
from box_memory.recall.cache_db import ENTRY_FIELDS


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


def json_ints(values: Any) -> str:
    return "[" + ",".join(str(int(v)) for v in values) + "]"


def prefer(rows: list[Row]) -> Row:
    """The memory a name means when several share it: live first, then the newest (as the index maps)."""
    return max(rows, key=lambda r: (r.status in LIVE, r.updated_at, r.id))
