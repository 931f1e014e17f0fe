"""Teams: `teams/<name>/` subtrees with their own indexes, tracked in `_box-memory.json`.

A team is a config entry plus folders. Creating one makes the folders and empty indexes first
and adds the config entry last (under the lock), so a crash in between leaves untracked folders
that a second `team create` adopts. Removing one never deletes a file: the config entry goes
first, then `teams/<name>/` moves to `_archive/teams/<name>/`; a second `team remove` finishes
an interrupted one. Folder ACLs in Box, not these folders, are the real isolation boundary.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from box_memory.errors import InvalidInput, NotFound
from box_memory.format.ids import validate_team
from box_memory.format.model import IndexEntry, now_iso
from box_memory.format.names import fold
from box_memory.maintenance.init import ensure_scope_folders
from box_memory.maintenance.status import binaries, read_indexes
from box_memory.result import Result
from box_memory.store.base import AlreadyExists, join
from box_memory.workspace.index import LIVE, FolderIndex, refresh_rollup
from box_memory.workspace.resolve import Workspace, load_config

ARCHIVE = "_archive/teams"
ISOLATION_NOTE = (
    "Box folder ACLs are what keep a team's memories private; the `team:` field is only a label. "
    "Set access on teams/{name}/ in Box."
)
TEAM_README = """# Team {name}

This is the `{name}` team's box-memory subtree: `memories/`, `files/` and their `_index.json`.
Memories here are scoped to this team. Access is controlled by Box folder permissions on this
folder, not by the `team:` field in a memory.
"""


def _check_name(name: str) -> str:
    name = name.strip()
    try:
        return validate_team(name)
    except InvalidInput:
        from box_memory.format.ids import is_slug, slugify

        if is_slug(name) and len(name) <= 64:
            raise  # well formed, but a name Box Drive or Windows cannot hold

        hint = slugify(name)
        raise InvalidInput(
            f"invalid team name {name!r}: use lowercase kebab-case (a-z, 0-9, '-')"
            + (f", e.g. {hint!r}" if hint != "memory" else "")
        ) from None


def _team_folder_ids(ws: Workspace, name: str) -> dict[str, Any]:
    return {k: v for k, v in ws.config.folder_ids.items() if k.startswith(f"team_{name}_")}


def create_team(ws: Workspace, name: str) -> Result:
    """Create `teams/<name>/` (memories, files, + companions in folder layout) and track it."""
    name = _check_name(name)
    with ws.store.lock(writer="box-memory", skill="team-create"):
        ws.config = load_config(ws.store)  # another writer may have changed the teams since
        existed = name in ws.config.teams
        same = [e.name for e in ws.store.list_dir("teams") if fold(e.name) == fold(name)]
        clash = next((n for n in same if n != name), None)
        if clash is not None:
            raise AlreadyExists(
                f"teams/{clash}/ already exists, and on Box, macOS and Windows it is the same folder "
                f"as teams/{name}/; rename it or use another team name"
            )
        created = ensure_scope_folders(ws, name)
        readme = join("teams", name, "README.md")
        if not ws.store.exists(readme):
            try:
                ws.store.create_bytes(readme, TEAM_README.format(name=name).encode())
                created.append(readme)
            except AlreadyExists:
                pass
        if not existed:
            from box_memory.audit.timeline import record_team_event

            ws.config.data["teams"] = [*ws.config.teams, name]
            record_team_event(ws.config.data, "team-create", name)
            ws.save_config()  # the commit point: the team exists once the config lists it
        refresh_rollup(ws)
    report = {
        "team": name,
        "existed": existed,
        "created": created,
        "folders": [f + "/" for f in _own_folders(ws, name)],
        "teams": ws.config.teams,
        "note": ISOLATION_NOTE.format(name=name),
    }
    return Result(report)


def _own_folders(ws: Workspace, name: str) -> list[str]:
    """The team's own subtree folders (`teams/<name>/...`), whether or not they exist yet."""
    out = [ws.memories_folder(name), ws.files_folder(name)]
    if ws.config.companion_layout == "folder" or ws.store.exists(ws.companions_folder(name)):
        out.append(ws.companions_folder(name))
    return out


def _summary(ws: Workspace, name: str, indexes: list[FolderIndex]) -> dict[str, Any]:
    mine = [i for i in indexes if ws.folder_team(i.folder) == name]
    entries = [e for i in mine for e in i.entries]
    files = 0
    for scope in ws.scopes():
        folder = ws.files_folder(scope)
        if ws.folder_team(folder) == name:
            files += len(binaries(ws, folder))
    return {
        "team": name,
        "default": name == ws.config.settings.get("default_team"),
        "memories": sum(1 for e in entries if e.get("kind") != "companion"),
        "companions": sum(1 for e in entries if e.get("kind") == "companion"),
        "active": sum(1 for e in entries if e.get("status") == "active"),
        "files": files,
        "folders": [i.folder + "/" for i in mine],
        "exists": ws.store.exists(join("teams", name)) or name == ws.config.settings.get("default_team"),
    }


def _has_files(ws: Workspace, path: str, depth: int = 3) -> bool:
    """Any file under `path`? Box MCP cannot delete, so a moved team leaves empty folders behind."""
    for e in ws.store.list_dir(path):
        if not e.is_dir or (depth > 0 and _has_files(ws, join(path, e.name), depth - 1)):
            return True
    return False


def list_teams(ws: Workspace) -> Result:
    """Every tracked team with counts, plus team folders on disk that the config does not list."""
    indexes, problems = read_indexes(ws)
    rows = [_summary(ws, t, indexes) for t in ws.config.teams]
    on_disk = {e.name for e in ws.store.list_dir("teams") if e.is_dir}  # NFC names (LocalStore)
    tracked = {fold(t) for t in ws.config.teams}
    untracked = sorted(t for t in on_disk if fold(t) not in tracked and _has_files(ws, join("teams", t)))
    folders = [f"teams/{t}/" for t in untracked]
    warnings = [
        f"{f} is not in the config (finish with `box-memory team create` or `team remove`)" for f in folders
    ]
    return Result({"teams": rows, "untracked_folders": folders, "problems": problems}, warnings=warnings)


def inspect_team(ws: Workspace, name: str) -> Result:
    """One team: counts by status and kind, most recent memories, top tags, files and companions."""
    name = _check_name(name)
    if name not in ws.config.teams:
        raise NotFound(f"no team {name!r} in this workspace (see `box-memory team ls`)")
    indexes, problems = read_indexes(ws)
    summary = _summary(ws, name, indexes)
    entries = [e for i in indexes if ws.folder_team(i.folder) == name for e in i.entries]
    live = [e for e in entries if e.get("status") in LIVE]
    companion_for = {str(e.get("companion_for")) for e in entries if e.get("companion_for")}
    companion_names = {str(e.get("filename"))[: -len(".md")] for e in entries if e.get("kind") == "companion"}
    files = []
    for scope in ws.scopes():
        folder = ws.files_folder(scope)
        if ws.folder_team(folder) != name:
            continue
        for b in binaries(ws, folder):
            path = join(folder, b)
            files.append({"path": path, "companion": path in companion_for or b in companion_names})
    report = {
        **summary,
        "by_status": dict(sorted(Counter(str(e.get("status")) for e in entries).items())),
        "by_kind": dict(sorted(Counter(str(e.get("kind")) for e in entries).items())),
        "recent": [
            {k: e.get(k) for k in ("id", "title", "kind", "status", "updated_at", "local_path")}
            for e in sorted(live, key=lambda e: str(e.get("updated_at") or ""), reverse=True)[:5]
        ],
        "top_tags": [
            {"tag": t, "count": n}
            for t, n in Counter(str(t) for e in live for t in e.get("tags") or []).most_common(5)
        ],
        "files_list": files,
        "problems": [p for p in problems if ws.folder_team(p["folder"].rstrip("/")) == name],
    }
    return Result(report)


def team_conflicts(ws: Workspace, *, include_all: bool = False) -> Result:
    """Slugs and titles that appear in more than one team (live memories unless `include_all`)."""
    indexes, problems = read_indexes(ws)
    by_slug: dict[str, list[dict[str, Any]]] = {}
    by_title: dict[str, list[dict[str, Any]]] = {}
    for idx in indexes:
        team = ws.folder_team(idx.folder)
        for e in idx.entries:
            if not include_all and e.get("status") not in LIVE:
                continue
            item = {
                "team": team,
                "id": e.get("id"),
                "title": e.get("title"),
                "slug": e.get("slug"),
                "status": e.get("status"),
                "updated_at": e.get("updated_at"),
                "path": IndexEntry(idx.folder, e).path,
            }
            by_slug.setdefault(str(e.get("slug")), []).append(item)
            by_title.setdefault(str(e.get("title", "")).casefold(), []).append(item)

    def several_teams(group: list[dict[str, Any]]) -> bool:
        return len({g["team"] for g in group}) > 1

    slugs: list[dict[str, Any]] = [
        {"slug": s, "memories": g} for s, g in sorted(by_slug.items()) if several_teams(g)
    ]
    flagged = {m["id"] for c in slugs for m in c["memories"]}
    titles = [
        {"title": g[0]["title"], "memories": g}
        for _, g in sorted(by_title.items())
        if several_teams(g) and not all(m["id"] in flagged for m in g)
    ]
    teams_in_conflict = {m["team"] for c in slugs + titles for m in c["memories"]}
    report = {
        "slugs": slugs,
        "titles": titles,
        "teams_without_conflicts": [t for t in ws.config.teams if t not in teams_in_conflict],
        "problems": problems,
    }
    return Result(report)


def remove_team(ws: Workspace, name: str) -> Result:
    """Stop tracking a team and move `teams/<name>/` to `_archive/teams/<name>/`; delete nothing."""
    name = _check_name(name)
    with ws.store.lock(writer="box-memory", skill="team-remove"):
        ws.config = load_config(ws.store)
        if name == ws.config.settings.get("default_team"):
            raise InvalidInput(f"team {name!r} is the workspace's default team and cannot be removed")
        tracked = name in ws.config.teams
        src = join("teams", name)
        present = _has_files(ws, src)
        if not tracked and not present:
            raise NotFound(f"no team {name!r} in this workspace (see `box-memory team ls`)")
        dropped_ids = _team_folder_ids(ws, name)
        if tracked:
            ws.config.data["teams"] = [t for t in ws.config.teams if t != name]
            ids = dict(ws.config.folder_ids)
            for k in dropped_ids:
                ids.pop(k, None)
            if "folder_ids" in ws.config.data:
                ws.config.data["folder_ids"] = ids
            from box_memory.audit.timeline import record_team_event

            # The folder moves to _archive/teams/<name>/ next (or <name>.<time>/ on a clash).
            record_team_event(ws.config.data, "team-remove", name, archived_to=f"{ARCHIVE}/{name}/")
            ws.save_config()  # the commit point; a crash after it leaves the folder to archive
        archived_to = None
        if present:
            archived_to = join(ARCHIVE, name)
            try:
                ws.store.move(src, archived_to)
            except AlreadyExists:  # also a name differing only in case (the same folder on Box)
                archived_to = join(ARCHIVE, f"{name}.{now_iso().replace(':', '').replace('-', '')}")
                ws.store.move(src, archived_to)
        refresh_rollup(ws)
    report = {
        "team": name,
        "was_tracked": tracked,
        "archived_to": (archived_to + "/") if archived_to else None,
        "dropped_folder_ids": dropped_ids,
        "teams": ws.config.teams,
    }
    return Result(report)
