"""The timeline's derived cache: the index entries `log` needs, per folder, in a small SQLite file.

Never the source of truth, safe to delete (`user_dirs().cache / "timeline"`). Each call compares
every folder index's signature (one stat locally, the listing on Box: what a warm recall checks)
with the one recorded; only an index that changed is read again, so a warm `log` reads no index
and sorts and filters in SQL, and only the events it shows become records. A cache that cannot be
opened (read-only folder, another schema, corrupt) is replaced, or an in-memory one is used.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from box_memory.format.model import parse_time
from box_memory.workspace.resolve import Workspace

SCHEMA = "2"
_DDL = """
CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID;
CREATE TABLE folders(folder TEXT PRIMARY KEY, sig TEXT, problem TEXT) WITHOUT ROWID;
CREATE TABLE entries(
  folder TEXT NOT NULL, id TEXT NOT NULL, ckey TEXT NOT NULL, ukey TEXT NOT NULL,
  created_at TEXT, updated_at TEXT, title TEXT, kind TEXT, status TEXT, team TEXT, agent TEXT,
  agent_cf TEXT, path TEXT, file_id TEXT, supersedes TEXT, superseded_by TEXT,
  PRIMARY KEY(folder, id));
CREATE INDEX entries_ckey ON entries(ckey);
CREATE INDEX entries_superseded_by ON entries(superseded_by) WHERE superseded_by IS NOT NULL;
CREATE TABLE events(
  key TEXT NOT NULL, at TEXT, event TEXT NOT NULL, has_sup INTEGER NOT NULL,
  folder TEXT NOT NULL, id TEXT NOT NULL, ckey TEXT, ukey TEXT, created_at TEXT, updated_at TEXT,
  title TEXT, kind TEXT, status TEXT, team TEXT, agent TEXT, agent_cf TEXT, path TEXT,
  file_id TEXT, supersedes TEXT, superseded_by TEXT);
CREATE INDEX events_key ON events(key DESC, id DESC);
"""
COLUMNS = (
    "folder", "id", "ckey", "ukey", "created_at", "updated_at", "title", "kind", "status", "team",
    "agent", "agent_cf", "path", "file_id", "supersedes", "superseded_by",
)  # fmt: skip


_UNDATED = "0000-00-00T00:00:00.000"


def time_key(value: object) -> str:
    """A timestamp as a string that sorts in time order: UTC `YYYY-MM-DDTHH:MM:SS.mmm`. What
    box-memory and the plugin write (`...SSZ`, `...SS.mmmZ`) is cut, not parsed (10,000 entries
    per `log`); anything else goes through the lenient parser; undated sorts oldest."""
    text = value if isinstance(value, str) else ("" if value is None else str(value))
    n = len(text)
    if text.endswith("Z") and text[10:11] == "T" and (n == 20 or (n == 24 and text[19] == ".")):
        return text[:19] + (text[19:23] if n == 24 else ".000")
    t = parse_time(text)
    if t is None:
        return _UNDATED
    import datetime as dt

    t = t.astimezone(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def read_folder(
    ws: Workspace, folder: str, *, denied: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """One folder index's entries and the problem with it, if any (`denied`: this user may not
    read it). Lighter than `index.load_index`: the JSON only, no per-field type checks (every
    field shown is turned into text, and an entry without an id is skipped and reported)."""
    import orjson

    from box_memory.errors import InvalidFile, NotFound, Unreadable
    from box_memory.format.model import INDEX_NAME
    from box_memory.format.safeio import ReadFailed
    from box_memory.store.base import join

    where = folder + "/"
    if denied:
        return [], {"folder": where, "problem": "denied"}
    try:
        data = orjson.loads(ws.store.read_bytes(join(folder, INDEX_NAME)))
    except Unreadable:
        return [], {"folder": where, "problem": "denied"}
    except NotFound:
        try:
            there = ws.store.exists(folder)
        except Unreadable:
            return [], {"folder": where, "problem": "denied"}
        return [], ({"folder": where, "problem": "missing", "detail": "no _index.json"} if there else None)
    except orjson.JSONDecodeError as e:
        return [], {"folder": where, "problem": "unparseable", "detail": str(e.args[0])}
    except InvalidFile as e:
        kind = "unreadable" if isinstance(e, ReadFailed) else "unparseable"
        return [], {"folder": where, "problem": kind, "detail": str(e)}
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return [], {"folder": where, "problem": "unparseable", "detail": "not a box-memory index"}
    good = [e for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]
    if len(good) != len(entries):
        detail = f"{len(entries) - len(good)} malformed entries skipped; run `box-memory index-rebuild`"
        return good, {"folder": where, "problem": "malformed", "detail": detail}
    return good, None


def cache_file(ws: Workspace) -> Path:
    from box_memory.paths import user_dirs
    from box_memory.recall.cache_db import cache_path

    return user_dirs().cache / "timeline" / Path(cache_path(ws)).name


def _open(path: str, root: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA synchronous=NORMAL")
        has = db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").fetchone()[0]
        if not has:
            db.execute("BEGIN IMMEDIATE")
            if not db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'meta'").fetchone()[0]:
                for statement in _DDL.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema", SCHEMA), ("root", root)])
            db.execute("COMMIT")
        meta = dict(db.execute("SELECT k, v FROM meta").fetchall())
        if meta.get("schema") != SCHEMA or meta.get("root") != root:
            raise sqlite3.DatabaseError("timeline cache of another schema or workspace")
    except BaseException:
        db.close()
        raise
    return db


@contextlib.contextmanager
def opened(ws: Workspace) -> Iterator[sqlite3.Connection]:
    """The workspace's cache, brought up to date; `problems`/`unreadable` via `folder_state`."""
    root = ws.describe()
    path = cache_file(ws)
    db: sqlite3.Connection | None = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            db = _open(str(path), root)
        except sqlite3.DatabaseError:  # another schema or workspace, or corrupt: start again
            with contextlib.suppress(OSError):
                path.unlink()
            db = _open(str(path), root)
        with contextlib.suppress(OSError):
            path.chmod(0o600)  # holds memory titles: private like the recall cache
    except (OSError, sqlite3.Error):
        db = _open(":memory:", root)
    try:
        refresh(ws, db)
        yield db
    finally:
        db.close()


def refresh(ws: Workspace, db: sqlite3.Connection) -> None:
    """Re-read the indexes whose signature changed (all of them the first time)."""
    from box_memory.format.model import INDEX_NAME
    from box_memory.store.base import join

    folders = ws.index_folders()
    sigs = {f: ws.store.signature(join(f, INDEX_NAME)) for f in folders}
    known = {r[0]: r[1] for r in db.execute("SELECT folder, sig FROM folders")}
    stale = [f for f in folders if sigs[f] is None or known.get(f) != sigs[f] or f not in known]
    gone = [f for f in known if f not in sigs]
    if not stale and not gone:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for f in gone:
            db.execute("DELETE FROM entries WHERE folder = ?", (f,))
            db.execute("DELETE FROM folders WHERE folder = ?", (f,))
        for f in stale:
            _reload(ws, db, f, sigs[f])
        # The events, derived from every entry at once (a chain may cross folders).
        db.execute("DELETE FROM events")
        db.execute(_EVENTS + "INSERT INTO events SELECT * FROM ev")  # noqa: S608 - fixed text
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


def _reload(ws: Workspace, db: sqlite3.Connection, folder: str, sig: str | None) -> None:
    entries, problem = read_folder(ws, folder, denied=sig == "denied")
    db.execute("DELETE FROM entries WHERE folder = ?", (folder,))
    rows = []
    for e in entries:
        raw_sup = e.get("supersedes")
        sup = [str(x) for x in raw_sup] if isinstance(raw_sup, list) else ([str(raw_sup)] if raw_sup else [])
        agent = str(e["agent"]) if e.get("agent") else None
        created = e.get("created_at") or e.get("updated_at")
        rows.append(
            (
                folder,
                e["id"],
                time_key(created),
                time_key(e.get("updated_at") or created),
                str(created) if created is not None else None,
                str(e["updated_at"]) if e.get("updated_at") is not None else None,
                str(e.get("title") or ""),
                str(e.get("kind") or ""),
                str(e.get("status") or ""),
                str(e.get("team") or ws.folder_team(folder)),
                agent,
                agent.casefold() if agent else None,
                str(e.get("local_path") or f"{folder}/{e.get('filename') or ''}"),
                str(e["file_id"]) if e.get("file_id") else None,
                orjson.dumps(sup).decode() if sup else None,
                str(e["superseded_by"]) if e.get("superseded_by") else None,
            )
        )
    db.executemany(_INSERT, rows)
    # A signature of None (nothing to compare) is never trusted: the folder is read every time.
    db.execute(
        "INSERT OR REPLACE INTO folders VALUES (?, ?, ?)",
        (folder, sig, orjson.dumps(problem).decode() if problem else None),
    )


_INSERT = "INSERT OR REPLACE INTO entries VALUES (" + ", ".join("?" * len(COLUMNS)) + ")"  # noqa: S608


def folder_state(db: sqlite3.Connection) -> tuple[list[str], list[dict[str, Any]]]:
    """(folders this user may not read, index problems) as recorded by the last refresh."""
    unreadable: list[str] = []
    problems: list[dict[str, Any]] = []
    for (raw,) in db.execute("SELECT problem FROM folders WHERE problem IS NOT NULL ORDER BY folder"):
        p = orjson.loads(raw)
        if p.get("problem") == "denied":
            unreadable.append(str(p["folder"]))
        else:
            problems.append(p)
    return unreadable, problems


# Each memory's event at its creation (`write`, `supersede`, or `archive` for an archived
# successor) and, for a memory archived in place, its archive at its update. `has_sup`: it names
# what it replaced, or an older entry (indexed before `supersedes` was recorded) names it.
_EVENTS = """
WITH base AS (
  SELECT e.*, (e.supersedes IS NOT NULL OR EXISTS (
      SELECT 1 FROM entries o WHERE o.superseded_by = e.id)) AS has_sup
  FROM entries e),
ev AS (
  SELECT ckey, created_at,
         CASE WHEN has_sup THEN (CASE WHEN status = 'archived' THEN 'archive' ELSE 'supersede' END)
              ELSE 'write' END, has_sup,
         folder, id, ckey, ukey, created_at, updated_at, title, kind, status, team, agent, agent_cf,
         path, file_id, supersedes, superseded_by FROM base
  UNION ALL
  SELECT ukey, updated_at, 'archive', has_sup,
         folder, id, ckey, ukey, created_at, updated_at, title, kind, status, team, agent, agent_cf,
         path, file_id, supersedes, superseded_by FROM base
  WHERE status = 'archived' AND NOT has_sup)
"""


def query(
    db: sqlite3.Connection,
    *,
    since: str | None = None,
    until: str | None = None,
    kind: str | None = None,
    team: str | None = None,
    agent: str | None = None,
    limit: int | None = None,
) -> tuple[list[dict[str, Any]], int, int]:
    """(events newest first, at most `limit`; how many match; how many there are)."""
    where, params = [], []
    for clause, value in (
        ("key >= ?", since),
        ("key <= ?", until),
        ("kind = ?", kind),
        ("team = ?", team),
        ("agent_cf = ?", agent.casefold() if agent else None),
    ):
        if value is not None:
            where.append(clause)
            params.append(value)
    # Only the fixed clauses above are joined into the SQL; every value is a parameter.
    cond = (" WHERE " + " AND ".join(where)) if where else ""
    total = int(db.execute("SELECT count(*) FROM events").fetchone()[0])
    count_sql = "SELECT count(*) FROM events" + cond  # noqa: S608
    matched = int(db.execute(count_sql, params).fetchone()[0]) if where else total
    sql = "SELECT * FROM events" + cond + " ORDER BY key DESC, id DESC"  # noqa: S608
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    cur = db.execute(sql, params)
    names = [d[0] for d in cur.description]
    out = []
    for r in cur.fetchall():
        row = dict(zip(names, r, strict=True))
        if row["supersedes"]:
            sup = [str(x) for x in orjson.loads(row["supersedes"])]
        elif row["has_sup"]:
            sup = [
                x[0]
                for x in db.execute(
                    "SELECT id FROM entries WHERE superseded_by = ? ORDER BY id", (row["id"],)
                )
            ]
        else:
            sup = []
        out.append({**row, "supersedes": sup})
    return out, matched, total
