"""Full-text search over imported Box documents, for recall's "Box Brain (source-backed)" section.

Read-only and offline: sqlite3 only (no mcp/httpx import), the store opened read-only, nothing
created when no store exists. Imported recall is global for the user (the store is the user's):
hits of every source show in every workspace, except a source set to `only_workspace`, whose hits
show only in the workspace it was synced from. `since`/`until` (epoch seconds) keep documents
whose Box modified time falls in the range; one without a known modified time is left out then.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from box_memory.format.safeio import UnreadableFile, check_regular

SECTION = "Box Brain (source-backed)"
LIMIT = 8
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    [
        "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "how", "in",
        "is", "it", "of", "on", "or", "that", "the", "this", "to", "was", "we", "were", "what", "when",
        "where", "which", "who", "why", "with"
    ]
)  # fmt: skip


def _terms(query: str) -> list[str]:
    words = [w for w in _WORD.findall(query.lower()) if len(w) > 1 or w.isdigit()]
    kept = [w for w in words if w not in _STOP]
    return list(dict.fromkeys(kept or words))[:24]


def _in_range(modified: str | None, since: float | None, until: float | None) -> bool:
    from box_memory.format.model import parse_time

    t = parse_time(modified)
    if t is None:
        return False
    ts = t.timestamp()
    return (since is None or ts >= since) and (until is None or ts <= until)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5.0)
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error:
        db = sqlite3.connect(path, timeout=5.0)  # WAL side files missing and not creatable read-only
    db.row_factory = sqlite3.Row
    return db


def search(
    query: str,
    *,
    limit: int = LIMIT,
    workspace: str | None = None,
    path: Path | None = None,
    since: float | None = None,
    until: float | None = None,
) -> list[dict[str, Any]]:
    """At most `limit` imported documents matching `query`, best first, each with its Box URL."""
    if path is None:
        from box_memory.paths import user_dirs

        path = user_dirs().brain_db
    terms = _terms(query)
    if not terms or limit < 1 or not path.exists():
        return []
    match = " OR ".join(f'"{t}"' for t in terms)
    scope = (
        "(coalesce(json_extract(s.settings, '$.only_workspace'), 0) = 0"
        " OR s.workspace = '' OR s.workspace = ?)"
        if workspace
        else "1 = 1"
    )
    fetch = limit if since is None and until is None else max(limit * 8, 64)
    args: list[Any] = [match, *([workspace] if workspace else []), fetch]
    # `scope` is one of two constant strings; every value is bound.
    sql = (
        "SELECT i.box_id, i.name, i.path, i.url, i.status, i.modified_at, i.indexed_at, s.id AS source_id, "  # noqa: S608
        "s.kind, s.root, bm25(entries_fts, 6.0, 2.0, 1.0) AS rank, "
        "snippet(entries_fts, 2, '', '', '…', 30) AS excerpt "
        "FROM entries_fts JOIN items i ON i.id = entries_fts.rowid JOIN sources s ON s.id = i.source_id "
        f"WHERE entries_fts MATCH ? AND {scope} AND i.status IN ('indexed', 'metadata_only') "
        "ORDER BY rank LIMIT ?"
    )
    try:
        check_regular(path)  # a FIFO or a device there: no brain hits, rather than a hang
        db = _connect(path)
    except (sqlite3.Error, OSError, UnreadableFile):
        return []
    try:
        rows = list(db.execute(sql, args))
        exact: list[sqlite3.Row] = []
        if query.strip().isdigit():
            exact = list(
                db.execute(
                    "SELECT i.box_id, i.name, i.path, i.url, i.status, i.modified_at, i.indexed_at, "  # noqa: S608
                    "s.id AS source_id, s.kind, s.root, -1000.0 AS rank, substr(e.body, 1, 200) AS excerpt "
                    "FROM items i JOIN entries e ON e.item_id = i.id JOIN sources s ON s.id = i.source_id "
                    f"WHERE i.box_id = ? AND {scope}",
                    [query.strip(), *([workspace] if workspace else [])],
                )
            )
    except sqlite3.Error:
        return []  # no brain tables yet, or a store from a newer version: recall goes on without it
    finally:
        db.close()
    hits: list[dict[str, Any]] = []
    seen: set[tuple[int, str]] = set()
    for r in [*exact, *rows]:
        key = (r["source_id"], r["box_id"])
        if key in seen:
            continue
        seen.add(key)
        if (since is not None or until is not None) and not _in_range(r["modified_at"], since, until):
            continue
        label = f"box:{r['root']}" if r["kind"] == "box" else f"path:{r['root']}"
        url, local = r["url"], None
        if r["kind"] == "local":
            # A local (Box Drive) document has no Box URL: give its absolute path and a file:// URL
            # so a person can open it (the id of a local item is its path under the source root).
            local = str(Path(r["root"]) / r["box_id"])
            url = url or Path(local).as_uri()
        hits.append(
            {
                "section": SECTION,
                "box_id": r["box_id"],
                "name": r["name"],
                "path": r["path"],
                "url": url,
                "local_path": local,
                "status": r["status"],
                "modified_at": r["modified_at"],
                "indexed_at": r["indexed_at"],
                "source": label,
                "source_id": r["source_id"],
                "score": round(-float(r["rank"]), 3),
                "excerpt": " ".join((r["excerpt"] or "").split()),
            }
        )
    return hits[:limit]
