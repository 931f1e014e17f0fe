"""`log`: the workspace's timeline - writes, supersedes, archives and team changes, newest first.

It answers from the folder indexes alone (each entry carries its times, agent, status and chain
links), never from the memory files, through a derived cache of them (`timeline_cache`): a warm
run checks each index's signature (a stat locally, the listing on Box, as a warm recall does) and
reads no index at all. Team changes come from the config's `team_history` (recorded by `team
create` / `team remove`).

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

from box_memory.audit.timeline_cache import time_key
from box_memory.errors import InvalidInput
from box_memory.format.model import KINDS
from box_memory.params import Param
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

__all__ = ["LogRequest", "memory_events", "team_events", "time_key", "timeline"]

DEFAULT_LIMIT = 100
MAX_LIMIT = 100_000
EVENTS = ("write", "supersede", "archive", "team-create", "team-remove")
TEAM_HISTORY = "team_history"  # the config key `team create` / `team remove` append to


MAX_TEAM_HISTORY = 1000  # records kept in the config (team changes are rare)


def record_team_event(config: dict[str, Any], event: str, team: str, **extra: Any) -> None:
    """Append a team change to the config's `team_history` (the caller holds the lock and saves
    the config: the record is written with the change it records). Other readers of the config
    keep the key as they keep any unknown key."""
    from box_memory.format.model import now_iso

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


def _bound(value: str | None, *, end: bool) -> str | None:
    """A --since/--until date as a sort key (see `time_key`)."""
    if value is None:
        return None
    import datetime as dt

    from box_memory.recall.query import parse_date as _date

    t = dt.datetime.fromtimestamp(_date(value, end_of_day=end), dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def event_record(row: dict[str, Any]) -> dict[str, Any]:
    """One event as `log --json` shows it, from a timeline cache row."""
    return {
        "at": row["at"] or "",
        "event": row["event"],
        "id": row["id"],
        "title": row["title"],
        "kind": row["kind"],
        "status": row["status"],
        "team": row["team"],
        "agent": row["agent"],
        "path": row["path"],
        "folder": row["folder"] + "/",
        "file_id": row["file_id"],
        "url": box_url(row["file_id"]),
        "supersedes": row["supersedes"],
        "superseded_by": row["superseded_by"],
    }


def memory_events(ws: Workspace) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """Every memory event as a record, newest first (the report draws from all of them), the
    folders this user may not read and the indexes that could not be used."""
    from box_memory.audit.timeline_cache import folder_state, opened, query

    with opened(ws) as db:
        rows, _, _ = query(db)
        unreadable, problems = folder_state(db)
    return [event_record(r) for r in rows], unreadable, problems


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


def check_request(ws: Workspace, req: LogRequest) -> tuple[str | None, str | None]:
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
    """The `log` service: events newest first, filtered, at most `limit`. The timeline cache
    filters and sorts; only the events shown become records."""
    from box_memory.audit.timeline_cache import folder_state, opened, query

    req = req or LogRequest()
    since, until = check_request(ws, req)
    agent = req.agent.casefold() if req.agent else None
    with opened(ws) as db:
        rows, matched, total = query(
            db, since=since, until=until, kind=req.kind, team=req.team, agent=req.agent, limit=req.limit
        )
        unreadable, problems = folder_state(db)
    shown = [event_record(r) for r in rows]
    teams = team_events(ws)
    total += len(teams)
    if req.kind is None:
        picked = [
            ev
            for ev in teams
            if (since is None or time_key(ev["at"]) >= since)
            and (until is None or time_key(ev["at"]) <= until)
            and (req.team is None or ev["team"] == req.team)
            and (agent is None or (ev["agent"] or "").casefold() == agent)
        ]
        if picked:
            matched += len(picked)
            shown = sorted(
                [*shown, *picked], key=lambda ev: (time_key(ev["at"]), ev["id"] or ""), reverse=True
            )
            shown = shown[: req.limit]
    warnings = [f"{p['folder']}_index.json is {p['problem']}: {p['detail']}" for p in problems]
    if matched > len(shown):
        warnings.append(f"{matched - len(shown)} older event(s) not shown (raise --limit)")
    quiet: list[str] = []
    if unreadable:
        from box_memory.recall.unreadable import unreadable_warning

        quiet.append(unreadable_warning(unreadable))
    data = {
        "events": shown,
        "matched": matched,
        "total": total,
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
