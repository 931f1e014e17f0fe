"""The `index-rebuild` service: rebuild (or check) the indexes, then report stale companions.

`rebuild.py` knows indexes only; the companion staleness report is asked for here, so the index
layer never imports the companion layer (which writes through it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from box_memory.errors import InvalidFile
from box_memory.maintenance.regenerate import rebuild, target_folders
from box_memory.params import Param
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace
from box_memory.write.companion_state import stale_companions


@dataclass
class RebuildRequest:
    """The MCP `index_rebuild` tool's parameters (the command's FOLDER and options)."""

    folder: Annotated[
        str | None, Param("Only this folder (e.g. memories/, teams/eng/memories/ or teams/eng).")
    ] = None
    team: Annotated[str | None, Param("Only this team's folders.")] = None
    check: Annotated[bool, Param("Write nothing; report drift (exit_code 6 when found).")] = False
    companions_only: Annotated[bool, Param("Only the companion folders.")] = False


def index_rebuild(
    ws: Workspace,
    folder: str | None = None,
    *,
    team: str | None = None,
    check: bool = False,
    companions_only: bool = False,
) -> Result:
    """Exit 6 for what a rebuild cannot settle (duplicate ids) and, with `check`, for drift."""
    # Finding edits made without the lock is the point: no folder listing kept from before.
    ws.store.drop_listings(fresh=True)
    report = rebuild_report(ws, folder, team=team, check=check, companions_only=companions_only)
    warnings: list[str] = []
    errors: list[dict[str, str]] = []
    for d in report["duplicate_ids"]:
        errors.append(
            {
                "code": "duplicate_id",
                "message": f"duplicate id {d['id']}: {', '.join(d['paths'])}"
                + (f" (indexed: {d['indexed']})" if d.get("indexed") else ""),
            }
        )
    for orphan in report["orphans"]:
        kept = f"; kept its last indexed entry {orphan['kept_entry']}" if orphan.get("kept_entry") else ""
        warnings.append(f"orphan {orphan['path']}: {orphan['reason']}{kept}")
    for c in report["slug_conflicts"]:
        warnings.append(f"slug conflict in {c['folder']}: '{c['slug']}' is active in {', '.join(c['paths'])}")
    for c in report["conflict_copies"]:
        where = f"; archived to {c['archived_to']}" if c.get("archived_to") else ""
        err = f" (unreadable: {c['error']})" if c.get("error") else ""
        warnings.append(f"index conflict copy {c['path']} ({c['entries']} entries merged){err}{where}")
    for p in report["interrupted_supersedes"]:
        verb = "completed" if p.get("repaired") else "would complete"
        warnings.append(f"interrupted supersede: {verb} {p['id']} -> superseded by {p['superseded_by']}")
    for f in report["supersede_conflicts"]:
        warnings.append(f"supersede conflict on {f['id']}: {f.get('reason') or f}")
    for c in report["stale_companions"]:
        warnings.append(f"{c.get('state', 'stale')} companion {c.get('path')} (binary {c.get('binary')})")
    for a in report["archived"]:
        if a.get("kind") == "not_regular":
            done = (
                f"moved aside to {a['archived_to']}"
                if a.get("archived_to")
                else f"not moved ({a.get('error')})"
            )
            warnings.append(f"{a['path']} was not a regular file: {done}; a fresh index was written")
    for f in report["folders"]:
        if f["index"] == "not a regular file" and check:
            warnings.append(f"{f['index_error']}")
    warnings.extend(f"{msg} (not rebuilt)" for msg in report["outside_workspace"])
    warnings.extend(report["notes"])
    quietly: list[str] = []
    denied = report.get("permission_denied") or []
    if denied:
        from box_memory.recall.unreadable import own_unreadable, unreadable_warning

        said = unreadable_warning(denied) + " (their index entries left as they were)"
        if own_unreadable(denied):
            # This user's own memories could not be read: the check is not complete, never "ok".
            warnings.append(said)
            report["complete"] = False
        else:
            quietly.append(said)
    if report["outside_workspace"]:
        report["complete"] = False
    report.setdefault("complete", True)
    if check and not report["complete"]:
        errors.append(
            {
                "code": "incomplete_check",
                "message": "the check could not read everything (see the warnings): "
                "it cannot say the indexes match the files",
            }
        )
    exit_code = 6 if errors or (check and report["drift"]) else 0
    return Result(
        report,
        warnings=warnings,
        errors=errors,
        exit_code=exit_code,
        status="error" if exit_code else "ok",
        quiet_warnings=quietly,
    )


def rebuild_report(
    ws: Workspace,
    folder: str | None = None,
    *,
    team: str | None = None,
    check: bool = False,
    companions_only: bool = False,
) -> dict[str, Any]:
    """The rebuild's report with `stale_companions` (and a note when they could not be checked)."""
    report = rebuild(ws, folder, team=team, check=check, companions_only=companions_only)
    full = folder is None and team is None and not companions_only
    # The folders as the rebuild saw them (it re-reads the team list under the lock).
    targets = target_folders(ws, folder, team, companions_only)
    report["stale_companions"], note = _companion_report(ws, targets, scoped=not full and not companions_only)
    if note:
        report["notes"].append(note)
    return report


def _companion_report(
    ws: Workspace, targets: list[str], *, scoped: bool
) -> tuple[list[dict[str, Any]], str | None]:
    """Stale and orphaned companions (hashes the binaries, through the hash cache)."""
    try:
        found = [dict(c) for c in stale_companions(ws)]
    except InvalidFile as e:  # a broken index (reported above); --check cannot repair it first
        return [], f"companion staleness not checked: {e}"
    if scoped:
        found = [c for c in found if any(str(c.get("path", "")).startswith(t + "/") for t in targets)]
    return found, None
