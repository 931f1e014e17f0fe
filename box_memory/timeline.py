"""`log`: the workspace's timeline - writes, supersedes, archives and team changes, newest first.

It answers from the folder indexes alone (each entry carries its times, agent, status and chain
links), never from the memory files, so its cost is one index read per folder: on Box a warm run
reads nothing but listings (unchanged indexes come from the content cache). Team changes come from
the config's `team_history` (recorded by `team create` / `team remove`).

Each memory gives one event, at its `created_at`: `write`, `supersede` (it replaced an older
memory) or `archive` (it retired one: an archived successor); a memory archived in place (status
archived, no successor) adds an `archive` event at its `updated_at`. A memory that was superseded
later says so on its own line (`superseded_by`). Entries indexed before the index carried `agent`
and `supersedes` show no agent (until `index-rebuild`), and their `supersedes` is taken from the
other side of the chain (`superseded_by`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from box_memory.errors import InvalidInput
from box_memory.model import KINDS, parse_time
from box_memory.params import Param
from box_memory.result import Result
from box_memory.workspace import Workspace

DEFAULT_LIMIT = 100
MAX_LIMIT = 100_000
EVENTS = ("write", "supersede", "archive", "team-create", "team-remove")
TEAM_HISTORY = "team_history"  # the config key `team create` / `team remove` append to


MAX_TEAM_HISTORY = 1000  # records kept in the config (team changes are rare)


def record_team_event(config: dict[str, Any], event: str, team: str, **extra: Any) -> None:
    """Append a team change to the config's `team_history` (the caller holds the lock and saves
    the config: the record is written with the change it records). Other readers of the config
    keep the key as they keep any unknown key."""
    from box_memory.model import now_iso

    raw = config.get(TEAM_HISTORY)
    history = [r for r in raw if isinstance(r, dict)] if isinstance(raw, list) else []
    history.append({"event": event, "team": team, "at": now_iso(), **extra})
    config[TEAM_HISTORY] = history[-MAX_TEAM_HISTORY:]


@dataclass
class LogRequest:
    """The `log` command's and MCP tool's parameters."""

    since: Annotated[str | None, Param("Events on or after this date (ISO 8601).")] = None
    until: Annotated[str | None, Param("Events on or before this date (ISO 8601).")] = None
    agent: Annotated[str | None, Param("Only events by this agent (case-insensitive).")] = None
    kind: Annotated[str | None, Param("Only memories of this kind.", choices=KINDS)] = None
    team: Annotated[str | None, Param("Only this team.")] = None
    limit: Annotated[int, Param("At most this many events, newest first.", ge=1, le=MAX_LIMIT)] = (
        DEFAULT_LIMIT
    )


def box_url(file_id: object) -> str | None:
    """The Box web link of a file id (a cloud workspace's memories; Box Drive ones have none)."""
    from box_memory.brain.entry import box_file_url

    text = str(file_id or "")
    return box_file_url(text) if text.isdigit() else None


def _bound(value: str | None, *, end: bool) -> float | None:
    if value is None:
        return None
    from box_memory.recall import _date

    return _date(value, end_of_day=end)


def _ts(value: object) -> float | None:
    t = parse_time(value)
    return t.timestamp() if t is not None else None


def _iso_ts(value: object) -> float:
    """Epoch seconds of an index timestamp; 0 (the oldest) when missing or unparseable."""
    t = _ts(value)
    return t if t is not None else 0.0


def memory_events(ws: Workspace) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """Every memory event of the readable folder indexes (unsorted), the folders this user may not
    read, and the indexes that could not be read (status's `read_indexes`)."""
    from box_memory.status import read_indexes

    unreadable: list[str] = []
    indexes, problems = read_indexes(ws, unreadable)
    rows: list[tuple[str, dict[str, Any]]] = [(idx.folder, e) for idx in indexes for e in idx.entries]
    # The chain from the older side too: an entry indexed before `supersedes` was recorded.
    replaced: dict[str, list[str]] = {}
    for _, e in rows:
        succ = e.get("superseded_by")
        if succ:
            replaced.setdefault(str(succ), []).append(str(e.get("id")))
    events: list[dict[str, Any]] = []
    for folder, e in rows:
        mem_id = str(e.get("id") or "")
        raw_sup = e.get("supersedes")
        sup = [str(x) for x in raw_sup] if isinstance(raw_sup, list) else ([str(raw_sup)] if raw_sup else [])
        sup = sup or sorted(replaced.get(mem_id, []))
        status = str(e.get("status") or "")
        path = str(e.get("local_path") or f"{folder}/{e.get('filename') or ''}")
        base = {
            "id": mem_id,
            "title": str(e.get("title") or ""),
            "kind": str(e.get("kind") or ""),
            "status": status,
            "team": str(e.get("team") or ws.folder_team(folder)),
            "agent": str(e["agent"]) if e.get("agent") else None,
            "path": path,
            "folder": folder + "/",
            "file_id": e.get("file_id"),
            "url": box_url(e.get("file_id")),
            "supersedes": sup,
            "superseded_by": str(e["superseded_by"]) if e.get("superseded_by") else None,
        }
        created = e.get("created_at") or e.get("updated_at")
        event = "supersede" if sup else "write"
        if sup and status == "archived":
            event = "archive"
        events.append({"at": str(created or ""), "ts": _iso_ts(created), "event": event, **base})
        if status == "archived" and not sup:
            upd = e.get("updated_at")
            events.append({"at": str(upd or ""), "ts": _iso_ts(upd), "event": "archive", **base})
    return events, unreadable, problems


def team_events(ws: Workspace) -> list[dict[str, Any]]:
    """Team changes recorded in the config (`team_history`), as timeline events."""
    raw = ws.config.data.get(TEAM_HISTORY)
    out: list[dict[str, Any]] = []
    for rec in raw if isinstance(raw, list) else []:
        if not isinstance(rec, dict) or rec.get("event") not in ("team-create", "team-remove"):
            continue
        at = str(rec.get("at") or "")
        out.append(
            {
                "at": at,
                "ts": _iso_ts(at),
                "event": str(rec["event"]),
                "id": None,
                "title": f"team {rec.get('team')}",
                "kind": "team",
                "status": None,
                "team": str(rec.get("team") or ""),
                "agent": str(rec["by"]) if rec.get("by") else None,
                "path": str(rec.get("archived_to") or f"teams/{rec.get('team')}/"),
                "folder": None,
                "file_id": None,
                "url": None,
                "supersedes": [],
                "superseded_by": None,
            }
        )
    return out


def check_request(ws: Workspace, req: LogRequest) -> tuple[float | None, float | None]:
    """Bad filters are refused before anything is read."""
    if req.kind is not None and req.kind not in KINDS:
        raise InvalidInput(f"unknown kind {req.kind!r} (expected one of: {', '.join(KINDS)})")
    if req.team is not None:
        ws.require_team(req.team)
    if not 1 <= req.limit <= MAX_LIMIT:
        raise InvalidInput(f"--limit must be between 1 and {MAX_LIMIT}")
    since, until = _bound(req.since, end=False), _bound(req.until, end=True)
    if since is not None and until is not None and since > until:
        raise InvalidInput(f"--since {req.since} is after --until {req.until}")
    return since, until


def timeline(ws: Workspace, req: LogRequest | None = None) -> Result:
    """The `log` service: events newest first, filtered, at most `limit`."""
    req = req or LogRequest()
    since, until = check_request(ws, req)
    events, unreadable, problems = memory_events(ws)
    if req.kind is None:
        events += team_events(ws)
    agent = req.agent.casefold() if req.agent else None

    def keep(ev: dict[str, Any]) -> bool:
        return (
            (since is None or ev["ts"] >= since)
            and (until is None or ev["ts"] <= until)
            and (req.kind is None or ev["kind"] == req.kind)
            and (req.team is None or ev["team"] == req.team)
            and (agent is None or (ev["agent"] or "").casefold() == agent)
        )

    chosen = [ev for ev in events if keep(ev)]
    chosen.sort(key=lambda ev: (ev["ts"], ev["at"], ev["id"] or ""), reverse=True)
    shown = chosen[: req.limit]
    for ev in shown:
        del ev["ts"]
    warnings = [f"{p['folder']}_index.json is {p['problem']}: {p['detail']}" for p in problems]
    if len(chosen) > len(shown):
        warnings.append(f"{len(chosen) - len(shown)} older event(s) not shown (raise --limit)")
    quiet: list[str] = []
    if unreadable:
        from box_memory.recall_cache import unreadable_warning

        quiet.append(unreadable_warning(unreadable))
    data = {
        "events": shown,
        "matched": len(chosen),
        "total": len(events),
        "filters": {
            "since": req.since,
            "until": req.until,
            "agent": req.agent,
            "kind": req.kind,
            "team": req.team,
            "limit": req.limit,
        },
        "unreadable": unreadable,
    }
    return Result(data, warnings=warnings, quiet_warnings=quiet)
