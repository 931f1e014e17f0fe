"""`index-rebuild`: regenerate folder indexes and the rollup from the memory files alone.

The files are the truth; an index only adds what a file cannot say about itself (the Box
`file_id` of a Box Drive copy, keys written by other tools). So a rebuild scans every `.md` file,
then merges in what the current index and any Box Drive conflict copies of it (`_index (1).json`,
`_index.conflict.json`) knew about files that still exist. Nothing is dropped or deleted: files
that cannot be indexed (unparseable, incomplete, a duplicate id) are recorded as orphans in the
index and reported; conflict copies are moved to `_archive/index-conflicts/` once their entries
are merged; an unparseable index is copied there before it is replaced.

The one memory file a rebuild may rewrite is the old side of an interrupted supersede: a write
that died after creating B (`supersedes: [A]`) but before marking A superseded. Completing that
bookkeeping is exactly what the write had committed to; held memories are never touched.

Each folder is read by `folder_scan.scan`; this module compares, repairs and writes.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Any

from box_memory.errors import BoxMemoryError, InvalidFile, InvalidInput, NotFound, Unreadable
from box_memory.format import frontmatter
from box_memory.format.model import IndexEntry, index_entry, now_iso
from box_memory.maintenance.folder_scan import (
    FolderScan,
    Memo,
    is_conflict_copy,
    prefill,
    read_conflict_copy,
    scan,
)
from box_memory.store.base import AlreadyExists, join
from box_memory.workspace.index import (
    FolderIndex,
    build_maps,
    carry_over,
    crash_point,
    entry_changes,
    load_index,
    parse_index,
    read_memory,
    refresh_rollup,
    save_index,
)
from box_memory.workspace.resolve import INDEX_NAME, Workspace, load_config

ARCHIVE_DIR = "_archive/index-conflicts"


# --- comparing ------------------------------------------------------------------------------


def diff_entries(
    current: list[dict[str, Any]], new: list[dict[str, Any]], *, with_folder: bool = False
) -> dict[str, list[Any]]:
    cur_by = {str(e.get("id")): e for e in current}
    new_by = {str(e.get("id")): e for e in new}
    changed = []
    for mid, e in new_by.items():
        c = cur_by.get(mid)
        if c is None:
            continue
        fields = entry_changes(c, e)
        if with_folder and c.get("folder_path") != e.get("folder_path"):
            fields.append("folder_path")
        if fields:
            changed.append({"id": mid, "fields": fields})
    return {
        "added": [m for m in new_by if m not in cur_by],
        "removed": [m for m in cur_by if m not in new_by],
        "changed": changed,
    }


# --- the whole rebuild ----------------------------------------------------------------------


def target_folders(
    ws: Workspace, folder: str | None = None, team: str | None = None, companions_only: bool = False
) -> list[str]:
    """The index folders a rebuild covers: all, one folder (or a prefix like `teams/eng`), a team."""
    folders = ws.index_folders()
    if team is not None:
        ws.require_team(team)
        folders = [f for f in folders if ws.folder_team(f) == team]
    if folder is not None:
        want = folder.replace("\\", "/").strip().strip("/")
        if not want:
            raise InvalidInput("empty folder: give a workspace folder such as memories/")
        want = join(want)
        chosen = [f for f in folders if f == want or f.startswith(want + "/")]
        if not chosen:
            raise InvalidInput(
                f"{folder!r} is not an index folder of this workspace"
                f"{' for team ' + team if team else ''} (e.g. {', '.join(f + '/' for f in folders[:3])})"
            )
        folders = chosen
    if companions_only:
        companion_dirs = {d for s in ws.scopes() for d in (ws.files_folder(s), ws.companions_folder(s))}
        folders = [f for f in folders if f in companion_dirs]
    return folders


def _stamp() -> str:
    return now_iso().replace("-", "").replace(":", "")


def _archive_name(ws: Workspace, folder: str, name: str) -> str:
    base = join(ARCHIVE_DIR, folder) if folder else ARCHIVE_DIR
    dst = join(base, f"{_stamp()}-{name}")
    n = 2
    while ws.store.exists(dst):
        dst = join(base, f"{_stamp()}-{n}-{name}")
        n += 1
    return dst


def _supersede_repairs(scans: list[FolderScan]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Interrupted supersedes (B says it supersedes A, A does not know) and conflicting claims."""
    where: dict[str, tuple[FolderScan, int]] = {}
    for s in scans:
        for i, e in enumerate(s.entries):
            where[str(e["id"])] = (s, i)
    claims: dict[str, set[str]] = {}
    for s in scans:
        for old_id, ids in s.claims.items():
            claims.setdefault(old_id, set()).update(c for c in ids if c in where)
    pending: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    for old_id, claimants in sorted(claims.items()):
        hit = where.get(old_id)
        if hit is None or not claimants:
            continue
        old_scan, pos = hit
        old = old_scan.entries[pos]
        recorded = old.get("superseded_by")
        item: dict[str, Any] = {
            "id": old_id,
            "path": IndexEntry(old_scan.folder, old).path,
            "status": old.get("status"),
            "superseded_by": recorded or (min(claimants) if len(claimants) == 1 else None),
            "claimed_by": sorted(claimants),
            "repaired": False,
        }
        if recorded:
            others = sorted(c for c in claimants if c != recorded)
            if others:
                item["reason"] = (
                    f"superseded by {recorded}, but {', '.join(others)} also claim to supersede it"
                )
                conflicts.append(item)
            continue
        if len(claimants) > 1:
            item["reason"] = f"{', '.join(sorted(claimants))} all claim to supersede it"
            conflicts.append(item)
        elif old.get("status") not in ("active", "draft"):
            item["reason"] = f"status {old.get('status')} is never changed by a rebuild"
            conflicts.append(item)
        else:
            pending.append(item)
    return pending, conflicts


def _complete_supersede(ws: Workspace, scans: list[FolderScan], item: dict[str, Any]) -> None:
    """Mark A superseded by B, exactly as the interrupted write would have (under the lock)."""
    path = str(item["path"])
    mem = read_memory(ws, path)
    if mem.status not in ("active", "draft") or mem.superseded_by:
        return
    mem.meta["status"] = "superseded"
    mem.meta["superseded_by"] = item["superseded_by"]
    mem.meta["updated_at"] = now_iso()
    successor = next((e for s in scans for e in s.entries if e["id"] == item["superseded_by"]), None)
    if successor is not None:  # `[[Title]]` opens the current memory (frontmatter.drop_alias)
        frontmatter.drop_alias(mem.meta, str(successor.get("title") or ""))
    raw = frontmatter.render(mem.meta, mem.body).encode("utf-8")
    file_id = ws.store.write_bytes(path, raw)
    for s in scans:
        for i, e in enumerate(s.entries):
            if e["id"] == mem.id:
                fresh = index_entry(
                    mem, filename=str(e["filename"]), file_id=file_id or e.get("file_id"), size_bytes=len(raw)
                )
                s.entries[i] = carry_over([fresh], [e])[0]
                item["repaired"] = True
                return


def rebuild(
    ws: Workspace,
    folder: str | None = None,
    *,
    team: str | None = None,
    check: bool = False,
    companions_only: bool = False,
) -> dict[str, Any]:
    """Rebuild (or with `check`, only compare) the target folder indexes and the rollup."""
    # A rebuild allocates a few dicts per memory and frees none until the end; the cyclic GC
    # would rescan them all again and again (a third of the time at 100k memories).
    paused = gc.isenabled()
    gc.disable()
    try:
        return _rebuild(ws, folder, team=team, check=check, companions_only=companions_only)
    finally:
        if paused:
            gc.enable()


def _rebuild(
    ws: Workspace, folder: str | None, *, team: str | None, check: bool, companions_only: bool
) -> dict[str, Any]:
    targets = target_folders(ws, folder, team, companions_only)
    full = folder is None and team is None and not companions_only
    if check:
        report = _run(ws, targets, full=full, check=True)
    else:
        # Parse every file before taking the lock, so writers wait only for the files that
        # change meanwhile (re-read under the lock) and the index writes, not for the whole scan.
        memo: Memo = {}
        for f in targets:
            with contextlib.suppress(BoxMemoryError):
                prefill(ws, f, memo)
        with ws.store.lock(writer="box-memory", skill="index-rebuild"):
            # Teams may have changed since the workspace was opened: re-read under the lock.
            ws.config = load_config(ws.store)
            targets = target_folders(ws, folder, team, companions_only)
            report = _run(ws, targets, full=full, check=False, memo=memo)
    return report


def _root_conflicts(ws: Workspace) -> list[dict[str, Any]]:
    out = []
    for ent in sorted(ws.store.list_dir(""), key=lambda x: x.name):
        if not ent.is_dir and is_conflict_copy(ent.name):
            entries, err = read_conflict_copy(ws, ent.name)
            out.append({"path": ent.name, "entries": len(entries), "error": err, "_entries": entries})
    return out


def _run(
    ws: Workspace, targets: list[str], *, full: bool, check: bool, memo: Memo | None = None
) -> dict[str, Any]:
    root_copies = _root_conflicts(ws)
    by_folder: dict[str, list[dict[str, Any]]] = {}
    for c in root_copies:
        for e in c.pop("_entries"):
            by_folder.setdefault(str(e.get("folder_path") or "").strip("/"), []).append(e)

    scans = [scan(ws, f, by_folder.get(f, ()), memo) for f in targets]
    present = [s for s in scans if s.exists]
    pending, forks = _supersede_repairs(present)

    dup_ids = [d for s in present for d in s.duplicates]
    seen: dict[str, tuple[str, str]] = {}
    for s in present:
        for e in s.entries:
            mid = str(e["id"])
            path = IndexEntry(s.folder, e).path
            if mid in seen and seen[mid][0] != s.folder:
                dup_ids.append(
                    {
                        "id": mid,
                        "indexed": None,
                        "paths": [seen[mid][1], path],
                        "reason": f"the same id is indexed in {seen[mid][0]}/ and {s.folder}/",
                    }
                )
            seen.setdefault(mid, (s.folder, path))

    folders_out: list[dict[str, Any]] = []
    total_diff: dict[str, list[Any]] = {"added": [], "removed": [], "changed": []}
    drift = False
    for s in present:
        cur_entries = s.current.entries if s.current is not None else []
        d = diff_entries(cur_entries, s.entries)
        recorded = {
            str(o.get("filename"))
            for o in ((s.current.data.get("orphans") if s.current is not None else None) or [])
            if isinstance(o, dict)
        }
        unrecorded = [o["filename"] for o in s.orphans if o["filename"] not in recorded]
        gone = sorted(recorded - {o["filename"] for o in s.orphans})
        reasons = []
        if s.index_state != "ok":
            reasons.append(f"_index.json is {s.index_state}")
        for key in ("added", "removed", "changed"):
            if d[key]:
                reasons.append(f"{len(d[key])} entr{'y' if len(d[key]) == 1 else 'ies'} {key}")
        if unrecorded:
            reasons.append(f"{len(unrecorded)} orphan file(s) not recorded in the index")
        if gone:
            reasons.append(f"{len(gone)} recorded orphan(s) no longer orphaned")
        if s.incomplete:
            reasons.append(f"listing incomplete ({s.incomplete}): index not rewritten")
        if s.conflict_copies:
            reasons.append(
                f"{len(s.conflict_copies)} conflict cop{'y' if len(s.conflict_copies) == 1 else 'ies'}"
            )
        if check and _maps_stale(s):  # a rebuild rewrites every map anyway
            reasons.append("lookup maps out of step with the entries")
        folder_drift = bool(reasons)
        if s.unread:  # not drift: nothing is known about those files until they can be read
            reasons.append(f"{len(s.unread)} file(s) could not be read: index not rewritten")
        drift = drift or folder_drift
        for k, out in total_diff.items():
            out.extend(
                {"folder": s.folder + "/", **x}
                if isinstance(x, dict)
                else {"folder": s.folder + "/", "id": x}
                for x in d[k]
            )
        folders_out.append(
            {
                "folder": s.folder + "/",
                "index": s.index_state,
                "index_error": s.index_error,
                "memories": sum(1 for e in s.entries if e.get("kind") != "companion"),
                "companions": sum(1 for e in s.entries if e.get("kind") == "companion"),
                "entries": len(s.entries),
                "added": len(d["added"]),
                "removed": len(d["removed"]),
                "changed": len(d["changed"]),
                "orphans_unrecorded": unrecorded,
                "orphans_gone": gone,
                "drift": folder_drift,
                "reasons": reasons,
                "written": False,
                "listing_complete": s.incomplete is None,
            }
        )
    if pending:
        drift = True
    if root_copies and full:
        drift = True

    slug_conflicts = []
    for s in present:
        by_slug: dict[str, list[dict[str, Any]]] = {}
        for e in s.entries:
            if e.get("status") == "active":
                by_slug.setdefault(str(e.get("slug")), []).append(e)
        for slug, group in sorted(by_slug.items()):
            if len(group) > 1:
                slug_conflicts.append(
                    {
                        "folder": s.folder + "/",
                        "slug": slug,
                        "ids": [str(e["id"]) for e in group],
                        "paths": [IndexEntry(s.folder, e).path for e in group],
                    }
                )

    archived: list[dict[str, Any]] = []
    rollup: dict[str, Any] = {}
    notes: list[str] = []
    if not check:
        for item in pending:
            _complete_supersede(ws, present, item)
        crash_point("rebuild:scanned")
        updated: dict[str, FolderIndex] = {}
        for s, fo in zip(present, folders_out, strict=True):
            if s.unread:
                notes += [f"{s.folder}/ not rebuilt: {msg}; run index-rebuild again" for msg in s.unread]
                continue
            if s.incomplete:
                notes.append(
                    f"{s.folder}/ not rebuilt: its Box listing may be incomplete ({s.incomplete}); "
                    "run index-rebuild again"
                )
                continue
            if s.aside:
                moved = _move_aside(ws, s.folder)
                archived.append(moved)
                if moved["archived_to"] is None:
                    notes.append(f"{s.folder}/ not rebuilt: {moved['error']}")
                    continue
            if s.index_state == "unparseable" and s.raw_index:
                dst = _archive_name(ws, s.folder, "_index.unparseable.json")
                ws.store.write_bytes(dst, s.raw_index)
                archived.append(
                    {"path": join(s.folder, INDEX_NAME), "archived_to": dst, "kind": "unparseable"}
                )
            idx = FolderIndex(s.folder, s.index_data())
            save_index(ws, idx)
            updated[s.folder] = idx
            fo["written"] = True
            crash_point("rebuild:folder-saved")
        # Conflict copies move only after the index holding their merged entries is durable.
        for s in present:
            for c in s.conflict_copies if not (s.incomplete or s.unread) else ():
                archived.append(_archive_copy(ws, s.folder, c))
        if full:
            for c in root_copies:
                archived.append(_archive_copy(ws, "", c))
        if _rollup_not_regular(ws):
            moved = _move_aside(ws, "")
            archived.append(moved)
            if moved["archived_to"] is None:
                notes.append(f"rollup not refreshed: {moved['error']}")
        try:
            roll = refresh_rollup(ws, updated)
            rollup = {"written": bool(roll), "entries": roll.get("entry_count", 0) if roll else None}
            if not roll:
                notes.append(
                    "rollup not refreshed: a child index outside this rebuild is unparseable or "
                    "unreadable, or the rollup is over what Box takes in one upload (readers use the "
                    "folder indexes)"
                )
        except InvalidFile as e:
            rollup = {"written": False, "error": str(e)}
            notes.append(f"rollup not refreshed: {e}")
    else:
        rollup = _rollup_check(ws, present)
        # The rollup may lag by design (readers fall back to the folder indexes); only a missing
        # or unparseable one is drift.
        drift = drift or (full and rollup["state"] != "ok")

    orphans = [
        {"path": o["path"], "reason": o["reason"], "kept_entry": o["kept_entry"]}
        for s in present
        for o in s.orphans
    ]
    conflict_copies = [{"folder": s.folder + "/", **c} for s in present for c in s.conflict_copies] + (
        [{"folder": "", **c} for c in root_copies] if full or check else []
    )
    for c in conflict_copies:
        hit = next((a for a in archived if a.get("path") == c["path"]), None)
        c["archived_to"] = hit.get("archived_to") if hit else None
    return {
        "check": check,
        "folders": folders_out,
        "skipped_folders": [
            s.folder + "/" for s in scans if not s.exists and not s.unreadable and not s.outside
        ],
        # Folders and files this user may not read (a team boundary): skipped, entries kept.
        "permission_denied": [u for s in scans for u in s.unreadable],
        # Folders behind a symbolic link out of the workspace: never read nor written through.
        "outside_workspace": [s.outside for s in scans if s.outside],
        "memories": sum(f["memories"] for f in folders_out),
        "companions": sum(f["companions"] for f in folders_out),
        "orphans": orphans,
        "duplicate_ids": dup_ids,
        "slug_conflicts": slug_conflicts,
        "conflict_copies": conflict_copies,
        "interrupted_supersedes": pending,
        "supersede_conflicts": forks,
        "archived": archived,
        "diff": total_diff,
        "rollup": rollup,
        "drift": drift,
        "notes": notes,
        "unreadable": [msg for s in present for msg in s.unread],
    }


def _maps_stale(s: FolderScan) -> bool:
    """The current index's maps disagree with its own entries (ids, slugs, kinds, tags...)."""
    if s.current is None or s.index_state != "ok" or not s.current.entries:
        return False
    data = s.current.data
    built = build_maps(s.current.entries)
    if data.get("by_id") != built["by_id"]:
        return True
    for k in ("by_kind", "by_tag", "by_status"):
        cur = data.get(k)
        if not isinstance(cur, dict) or {a: set(b) for a, b in cur.items() if isinstance(b, list)} != {
            a: set(b) for a, b in built[k].items()
        }:
            return True
    return False


def _rollup_not_regular(ws: Workspace) -> bool:
    """Whether the rollup's place holds something a rewrite must move aside first: a folder,
    FIFO, device or a link (only a local folder can; one lstat, the rollup itself is not read)."""
    import stat

    root = ws.store.local_root
    if root is None:
        return False
    try:
        return not stat.S_ISREG((root / INDEX_NAME).lstat().st_mode)
    except OSError:
        return False


def _move_aside(ws: Workspace, folder: str) -> dict[str, Any]:
    """Move a `_index.json` that is not a regular file (a folder, FIFO, device, a link that loops
    or leads out of the workspace) to the archive, so the rebuilt index can take its place.
    Nothing of the user's is deleted: it keeps its content (and, a link, its target) there."""
    path = join(folder, INDEX_NAME) if folder else INDEX_NAME
    dst = _archive_name(ws, folder, INDEX_NAME)
    try:
        ws.store.move(path, dst)
    except (BoxMemoryError, OSError) as e:
        return {"path": path, "archived_to": None, "kind": "not_regular", "error": f"{path}: {e}"}
    return {"path": path, "archived_to": dst, "kind": "not_regular"}


def _archive_copy(ws: Workspace, folder: str, c: dict[str, Any]) -> dict[str, Any]:
    name = str(c["path"]).rsplit("/", 1)[-1]
    dst = _archive_name(ws, folder, name)
    try:
        ws.store.move(str(c["path"]), dst)
    except (AlreadyExists, NotFound, InvalidInput, OSError) as e:
        return {"path": c["path"], "archived_to": None, "kind": "conflict_copy", "error": str(e)}
    return {"path": c["path"], "archived_to": dst, "kind": "conflict_copy"}


def _rollup_check(ws: Workspace, scans: list[FolderScan]) -> dict[str, Any]:
    """Compare the rollup with what a refresh after this rebuild would hold."""
    expected: list[dict[str, Any]] = []
    mine = {s.folder: s for s in scans}
    try:
        current: dict[str, Any] | None = parse_index(ws.store.read_bytes(INDEX_NAME), INDEX_NAME)
        problem: dict[str, Any] = {}
    except NotFound:
        current, problem = None, {"state": "missing", "drift": True, "removed": 0, "changed": 0}
    except InvalidFile as e:
        current, problem = None, {"state": "unparseable", "error": str(e), "drift": True}
    for f in ws.index_folders():
        if f in mine and not mine[f].unreadable:
            expected.extend({**e, "folder_path": f + "/"} for e in mine[f].entries)
            continue
        try:
            idx = load_index(ws, f)
            expected.extend({**e, "folder_path": f + "/"} for e in idx.entries)
        except InvalidFile:
            pass
        except Unreadable:  # what the rollup holds for a folder this user cannot read stays
            expected.extend(
                e for e in (current or {}).get("entries", []) if str(e.get("folder_path")) == f + "/"
            )
    if current is None:
        return {**problem, "added": len(expected)} if problem["state"] == "missing" else problem
    d = diff_entries(current.get("entries", []), expected, with_folder=True)
    return {
        "state": "ok",
        "added": len(d["added"]),
        "removed": len(d["removed"]),
        "changed": len(d["changed"]),
        "drift": bool(d["added"] or d["removed"] or d["changed"]),
    }
