"""`status`: a read-only snapshot of a workspace: counts, index health, recent memories, next steps.

It reads the folder indexes (not the rollup, which may lag) and never writes. Health checks are
cheap by default (one folder listing per index); `check_indexes` adds the full `index-rebuild
--check` comparison, which parses every memory file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any

from box_memory.errors import InvalidFile, NotFound, Unreadable
from box_memory.format.model import parse_time
from box_memory.format.safeio import OutsideWorkspace, ReadFailed, UnreadableFile
from box_memory.params import Param
from box_memory.result import Result
from box_memory.store.base import join
from box_memory.workspace.index import LIVE, FolderIndex, drift, load_index, near_upload_limit, parse_index
from box_memory.workspace.resolve import INDEX_NAME, Workspace, load_config

RECENT = 5
TOP_TAGS = 5
# A folder index past this many bytes makes each write into it cost about twice a write into a
# small folder (bench/write_bytes_bench.py: ~0.27 s CPU at 1,000 memories, ~0.5 s at 10,000 with
# a 7.6 MB index, the index's own read, parse and rewrite growing ~25 ms per MB after that):
# `status` then suggests the monthly memory layout, where a write rewrites one month's index.
# 8 MiB is ~11,000 memories, far below the read cap of an index (LIMITS["index"], 128 MiB).
SUGGEST_MONTHLY_BYTES = 8 * 1024 * 1024


def binaries(ws: Workspace, folder: str) -> list[str]:
    """Binary files in a files/ folder (not companions, indexes or hidden files)."""
    return sorted(
        e.name
        for e in ws.store.list_dir(folder)
        if not e.is_dir and not e.name.endswith(".md") and not e.name.startswith(("_index", "."))
    )


def read_indexes(
    ws: Workspace, unreadable: list[str] | None = None
) -> tuple[list[FolderIndex], list[dict[str, Any]]]:
    """Every folder index that exists and parses, plus the problems found on the way.

    A folder this user may not read (a team boundary) is no problem: it goes to `unreadable`.
    """
    good: list[FolderIndex] = []
    problems: list[dict[str, Any]] = []
    for folder in ws.index_folders():
        try:
            idx = load_index(ws, folder)
        except OutsideWorkspace as e:  # never read through: a problem, named by its link
            problems.append({"folder": folder + "/", "problem": "outside_workspace", "detail": str(e)})
            continue
        except Unreadable:
            if unreadable is not None:
                unreadable.append(folder + "/")
            continue
        except InvalidFile as e:
            kind = (
                "unreadable"  # busy: a warning only
                if isinstance(e, ReadFailed)
                else "not a regular file"
                if isinstance(e, UnreadableFile)
                else "unparseable"
            )
            problems.append({"folder": folder + "/", "problem": kind, "detail": str(e)})
            continue
        if not idx.existed:
            if ws.store.exists(folder):
                problems.append({"folder": folder + "/", "problem": "missing", "detail": "no _index.json"})
            continue
        good.append(idx)
    return good, problems


def _box_drive(ws: Workspace) -> dict[str, Any] | None:
    """Whether a local workspace is inside the Box Drive folder (None for a cloud workspace)."""
    root = ws.store.local_root
    if root is None:
        return None
    from pathlib import Path

    from box_memory.paths import box_drive_root_of, box_drive_roots

    found = box_drive_root_of(Path(root))
    return {
        "inside": found is not None,
        "root": str(found) if found is not None else None,
        "found": bool(box_drive_roots()),  # Box Drive is on this machine at all
    }


def _rollup_state(ws: Workspace, indexes: list[FolderIndex]) -> dict[str, Any]:
    try:
        roll = parse_index(ws.store.read_bytes(INDEX_NAME), INDEX_NAME)
    except NotFound:
        return {"state": "missing"}
    except InvalidFile as e:
        state = (
            "unreadable"
            if isinstance(e, ReadFailed)
            else "not a regular file"
            if isinstance(e, UnreadableFile)
            else "unparseable"
        )
        return {"state": state, "detail": str(e)}
    t = parse_time(roll.get("updated_at"))
    times = [x for x in (parse_time(i.updated_at) for i in indexes) if x is not None]
    newest = max(times, default=None)
    total = sum(len(i.entries) for i in indexes)
    lagging = (t is None or (newest is not None and newest > t)) or roll.get("entry_count") != total
    return {"state": "lagging" if lagging else "ok", "updated_at": roll.get("updated_at"), "entries": total}


@dataclass
class StatusRequest:
    """The MCP `status` tool's parameters."""

    check_indexes: Annotated[bool, Param("Also compare every index with its files.")] = False


def status(
    ws: Workspace, *, check_indexes: bool = False, refresh: bool = False, cache: bool = False
) -> Result:
    """The `status` service: the snapshot, its warnings, and (`refresh`) the Box tier detected
    again and saved; `cache` adds the recall cache's file and size."""
    refreshed: dict[str, Any] | None = None
    notes: list[str] = []
    if refresh:
        from box_memory.store import as_tier_detection

        tiered = as_tier_detection(ws.store)
        if tiered is None:
            notes.append("--refresh: a local workspace has no Box tier to detect")
        else:
            with ws.store.lock(writer="box-memory", skill="status"):
                refreshed = tiered.redetect_tier()
            ws = Workspace(ws.store, load_config(ws.store))  # the config as written
    data = workspace_status(ws, check_indexes=check_indexes)
    if refreshed is not None:
        data["tier_refresh"] = refreshed
        if refreshed["changed"]:
            notes.append(f"Box tier now {refreshed['tier']} (was {refreshed['previous_tier']}); saved")
    if cache:
        from box_memory.recall.cache import cache_info

        data["recall_cache"] = cache_info(ws)
    from box_memory.recall.unreadable import UNREADABLE

    quiet = [w for w in quiet_warnings(data) if w.startswith(UNREADABLE)]
    loud = [w for w in quiet_warnings(data) if not w.startswith(UNREADABLE)]
    return Result(data, warnings=[*notes, *_warnings(data), *loud], quiet_warnings=quiet)


def quiet_warnings(d: dict[str, Any]) -> list[str]:
    """Shown with --verbose and always in --json: folders this user may not read."""
    from box_memory.recall.unreadable import unreadable_warning

    return [unreadable_warning(d["unreadable"])] if d.get("unreadable") else []


def _warnings(d: dict[str, Any]) -> list[str]:
    h = d["index_health"]
    out = [f"{f['folder']}: {'; '.join(f['drift'])}" for f in h["folders"] if f["drift"]]
    out += [
        p["detail"]
        if p["problem"] in ("outside_workspace", "not a regular file")
        else f"{p['folder']}_index.json is {p['problem']}: {p['detail']}"
        for p in h["problems"]
    ]
    out += [
        f"sync conflict copy {c} from another machine (index-rebuild merges it; nothing is deleted)"
        for c in h["conflict_copies"]
    ]
    if h["rollup"]["state"] not in ("ok", "lagging"):
        out.append(f"rollup _index.json is {h['rollup']['state']}")
    check = d.get("index_check")
    if check and check["drift"]:
        out.append(
            f"index check: {check['added']} added, {check['removed']} removed, {check['changed']} changed"
        )
    comp = d.get("companions") or {}
    if comp.get("stale") or comp.get("orphaned"):
        out.append(
            f"{comp['stale']} stale and {comp['orphaned']} orphaned companion(s): "
            + ", ".join(f"{i['path']} ({i['state']})" for i in comp["items"][:5])
        )
    if check and check["duplicate_ids"]:
        out.append(f"index check: {len(check['duplicate_ids'])} duplicate memory id(s)")
    return out


def workspace_status(ws: Workspace, *, check_indexes: bool = False) -> dict[str, Any]:
    """Everything `status` reports, as data."""
    from box_memory.format import names
    from box_memory.write.commit import unmerged_copies

    if check_indexes:  # asked to compare indexes with their files: every folder listed anew
        ws.store.drop_listings(fresh=True)

    from box_memory.recall.unreadable import own_unreadable

    unreadable: list[str] = []
    indexes, problems = read_indexes(ws, unreadable)
    entries = [(idx, e) for idx in indexes for e in idx.entries]
    by_status = Counter(str(e.get("status")) for _, e in entries)
    by_kind = Counter(str(e.get("kind")) for _, e in entries)

    teams: dict[str, dict[str, Any]] = {}
    for t in ws.config.teams:
        teams[t] = {"memories": 0, "companions": 0, "files": 0, "active": 0}
    for idx in indexes:
        team = ws.folder_team(idx.folder)
        row = teams.setdefault(team, {"memories": 0, "companions": 0, "files": 0, "active": 0})
        for e in idx.entries:
            row["companions" if e.get("kind") == "companion" else "memories"] += 1
            row["active"] += e.get("status") == "active"
    for scope in ws.scopes():
        files_folder = ws.files_folder(scope)
        teams.setdefault(ws.folder_team(files_folder), {"memories": 0, "companions": 0, "files": 0})
        try:
            teams[ws.folder_team(files_folder)]["files"] += len(binaries(ws, files_folder))
        except OutsideWorkspace as e:
            if not any(p["detail"] == str(e) for p in problems):  # said once, with its index
                problems.append(
                    {"folder": files_folder + "/", "problem": "outside_workspace", "detail": str(e)}
                )
        except Unreadable:
            if files_folder + "/" not in unreadable:
                unreadable.append(files_folder + "/")
    for folder in unreadable:
        row = teams.setdefault(
            ws.folder_team(folder.rstrip("/")), {"memories": 0, "companions": 0, "files": 0, "active": 0}
        )
        row["unreadable"] = True

    health: list[dict[str, Any]] = []
    conflict_copies: list[str] = []
    memory_copies: list[str] = []  # every memory conflict copy, merged or not (both versions kept)
    for idx in indexes:
        listing = ws.store.list_dir(idx.folder)
        reasons = drift(ws, idx)
        files = [e.name for e in listing if not e.is_dir]
        # Index copies and memory copies the index has not taken in (index-rebuild does both).
        copies = [join(idx.folder, n) for n in unmerged_copies(idx, files)]
        conflict_copies += copies
        memory_copies += [join(idx.folder, n) for n in names.conflict_copies(files) if n.endswith(".md")]
        orphans = [o for o in idx.data.get("orphans") or [] if isinstance(o, dict)]
        index_bytes = next((e.size for e in listing if e.name == INDEX_NAME and not e.is_dir), 0)
        health.append(
            {
                "folder": idx.folder + "/",
                "entries": len(idx.entries),
                "index_bytes": index_bytes,
                "updated_at": idx.updated_at,
                "drift": reasons,
                "orphans": len(orphans),
                "conflict_copies": copies,
            }
        )
    conflict_copies += names.conflict_copies([e.name for e in ws.store.list_dir("") if not e.is_dir])
    rollup = _rollup_state(ws, indexes)
    drifted = [h["folder"] for h in health if h["drift"]]

    live = [e for _, e in entries if e.get("status") in LIVE]
    recent = sorted(live, key=lambda e: str(e.get("updated_at") or ""), reverse=True)[:RECENT]
    tags = Counter(str(t) for e in live for t in e.get("tags") or [])

    data: dict[str, Any] = {
        "workspace": {
            "name": ws.name,
            "root": ws.describe(),
            "backend": ws.store.kind,  # what this workspace is opened through, not who made it
            "tier": ws.config.data.get("tier") or "unknown",
            "schema_version": ws.config.data.get("schema_version"),
            "created_at": ws.config.data.get("created_at"),
            "updated_at": ws.config.data.get("updated_at"),
            "default_team": ws.config.settings.get("default_team"),
            "companion_layout": ws.config.companion_layout,
            "memory_layout": ws.config.memory_layout,
            "box_drive": _box_drive(ws),
            "include_superseded_in_recall": bool(ws.config.settings.get("include_superseded_in_recall")),
            "rebuild_index_on_drift": bool(ws.config.settings.get("rebuild_index_on_drift")),
        },
        "totals": {
            "entries": len(entries),
            "memories": sum(1 for _, e in entries if e.get("kind") != "companion"),
            "companions": by_kind.get("companion", 0),
            "files": sum(t.get("files", 0) for t in teams.values()),
        },
        "by_status": dict(sorted(by_status.items())),
        "by_kind": dict(sorted(by_kind.items())),
        "teams": teams,
        "index_health": {
            "folders": health,
            "problems": problems,
            "drifted": drifted,
            "rollup": rollup,
            "conflict_copies": conflict_copies,
            "memory_conflict_copies": memory_copies,
            "lock": ws.store.lock_state(),
            # A lagging rollup is allowed (refreshed lazily; readers fall back to the folders).
            # Never while this user's own memories or files cannot be read (only another team's
            # folder may be: a team boundary).
            "ok": not (drifted or problems or conflict_copies or own_unreadable(unreadable))
            and rollup["state"] in ("ok", "lagging"),
        },
        "recent": [
            {k: e.get(k) for k in ("id", "title", "kind", "status", "team", "updated_at", "local_path")}
            for e in recent
        ],
        "top_tags": [{"tag": t, "count": n} for t, n in tags.most_common(TOP_TAGS)],
        # Folders this user may not read: skipped, not counted as missing or empty.
        "unreadable": unreadable,
    }
    if check_indexes:
        from box_memory.maintenance.index_rebuild import rebuild_report

        report = rebuild_report(ws, check=True)
        data["index_check"] = {
            "drift": report["drift"],
            "added": len(report["diff"]["added"]),
            "removed": len(report["diff"]["removed"]),
            "changed": len(report["diff"]["changed"]),
            "orphans": report["orphans"],
            "duplicate_ids": report["duplicate_ids"],
            "slug_conflicts": report["slug_conflicts"],
            "interrupted_supersedes": report["interrupted_supersedes"],
            "stale_companions": report["stale_companions"],
            "rollup": report["rollup"],
        }
        data["index_health"]["ok"] = data["index_health"]["ok"] and not (
            report["drift"] or report["duplicate_ids"]
        )
    data["companions"] = _companion_health(ws, indexes)
    data["layout_advice"] = layout_advice(ws, health)
    data["next"] = next_steps(data)
    return data


def layout_advice(ws: Workspace, health: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Under the flat layout, the largest memories folder index when it is past
    SUGGEST_MONTHLY_BYTES: every write into it rewrites it whole. None otherwise."""
    if ws.config.memory_layout == "monthly":
        return None
    memory_folders = {f + "/" for scope in ws.scopes() for f in ws.memory_folders(scope)}
    big = [
        h
        for h in health
        if h["folder"] in memory_folders
        and (h["index_bytes"] > SUGGEST_MONTHLY_BYTES or near_upload_limit(ws, h["index_bytes"]) is not None)
    ]
    if not big:
        return None
    top = max(big, key=lambda h: h["index_bytes"])
    limit = near_upload_limit(ws, top["index_bytes"])
    root = ws.store.local_root
    how = (
        f"box-memory init --path {root} --memory-layout monthly"
        if root is not None
        else 'set "memory_layout": "monthly" in the settings of _box-memory.json'
    )
    return {
        "folder": top["folder"],
        "index_bytes": top["index_bytes"],
        "entries": top["entries"],
        "threshold_bytes": SUGGEST_MONTHLY_BYTES,
        "switch": how,
        # Box takes one upload of at most 50 MB: past that a write into the folder is refused.
        "writes_refused": limit is not None,
        "upload_limit_bytes": ws.store.upload_limit(),
        "message": (
            f"{top['folder']}_index.json is {top['index_bytes'] / 1e6:.1f} MB ({top['entries']:,} "
            + (
                f"entries), too close to the {limit / 1e6:g} MB Box takes in one upload: writes "
                "into that folder are refused until the workspace uses the monthly memory layout, "
                f"where new memories go to month folders, nothing moves ({how})"
                if limit is not None
                else "entries) and every write into that folder rewrites it: the monthly memory "
                f"layout keeps a write's cost to one month's memories, nothing moves ({how})"
            )
        ),
    }


def _companion_health(ws: Workspace, indexes: list[FolderIndex]) -> dict[str, Any]:
    """Stale and orphaned companions, counted on every status: cheap through the hash cache
    (a binary is hashed only when its size or mtime, or Box etag/sha1, changed since)."""
    from box_memory.write.companion_state import stale_report

    rows, checked, problems = stale_report(ws, cached=True, indexes=indexes)
    return {
        "checked": checked,
        "stale": sum(1 for r in rows if r["state"] == "stale"),
        "orphaned": sum(1 for r in rows if r["state"] == "orphaned"),
        "items": [
            {"id": r["id"], "path": r["path"], "binary": r["binary"], "state": r["state"]} for r in rows
        ],
        "problems": problems,
    }


def next_steps(data: dict[str, Any]) -> list[str]:
    """What to run next, most useful first."""
    out: list[str] = []
    health = data["index_health"]
    check = data.get("index_check") or {}
    lock = health.get("lock")
    if lock and lock.get("stale"):
        out.append("a stale write lock is present; the next write takes it over (or run index-rebuild)")
    if health["drifted"] or health["problems"] or health["conflict_copies"] or check.get("drift"):
        target = health["drifted"][0] if len(health["drifted"]) == 1 and not health["problems"] else ""
        out.append(f"box-memory index-rebuild {target}".rstrip())
    elif health["rollup"]["state"] != "ok":
        out.append(f"box-memory index-rebuild  (the rollup is {health['rollup']['state']})")
    if check.get("duplicate_ids"):
        out.append("resolve duplicate memory ids by hand (see index-rebuild --check), then index-rebuild")
    comp = data.get("companions") or {}
    if check.get("stale_companions") or comp.get("stale") or comp.get("orphaned"):
        out.append("box-memory companion --stale  (then regenerate the stale companions)")
    from box_memory.recall.unreadable import own_unreadable

    denied = own_unreadable(data.get("unreadable") or [])
    if denied:
        out.insert(0, f"give this user read access to {', '.join(denied[:3])} (permission denied)")
    elif not data["totals"]["entries"]:
        out.append('box-memory write "..." --title "..."  (save the first memory)')
    else:
        out.append('box-memory recall "<query>"')
    advice = data.get("layout_advice")
    if advice:
        out.append(f"{advice['switch']}  (writes: {advice['folder']} has {advice['entries']:,} memories)")
    if not check:
        out.append("box-memory status --check-indexes  (full comparison of indexes and files)")
    return out
