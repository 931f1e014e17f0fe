"""Reading companions back: finding them through the indexes, the binary each describes, and
whether it is current, stale (its binary changed) or orphaned (its binary is gone)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from box_memory.errors import BoxMemoryError, InvalidFile, InvalidInput, NotFound, Unreadable
from box_memory.format.model import IndexEntry
from box_memory.format.safeio import ReadFailed, UnreadableFile
from box_memory.params import Param
from box_memory.result import Result
from box_memory.store.base import Entry, clean_path, join
from box_memory.workspace.index import LIVE, FolderIndex, load_all, read_memory
from box_memory.workspace.resolve import Workspace
from box_memory.write.binaries import (
    Digest,
    companion_location,
    hash_binary,
    refuse_folder,
    resolve_binary,
    scope_of,
    stat_binary,
)

STATES = ("current", "stale", "orphaned", "missing")


@dataclass
class Companion:
    """A companion found through an index: its entry, frontmatter and the binary it describes."""

    entry: dict[str, Any]
    folder: str
    meta: dict[str, Any]
    body: str
    binary: str | None  # workspace-relative path, None when it cannot be located

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def path(self) -> str:
        return IndexEntry(self.folder, self.entry).path

    @property
    def cf(self) -> dict[str, Any]:
        cf: dict[str, Any] = self.meta["companion_for"]
        return cf

    @property
    def hash_algo(self) -> str:
        algo = str(self.cf.get("hash_algo") or "").lower()
        if algo in ("sha256", "sha1"):
            return algo
        return "sha1" if self.cf.get("sha1") and not self.cf.get("sha256") else "sha256"

    @property
    def pinned(self) -> str | None:
        v = self.cf.get(self.hash_algo)
        return str(v).lower() if v else None


def binary_of(ws: Workspace, folder: str, cf: dict[str, Any]) -> str | None:
    """Which binary a `companion_for` block describes (local_path, else filename; see above)."""
    lp = cf.get("local_path")
    if isinstance(lp, str) and lp.strip():
        try:
            return clean_path(lp) or None
        except InvalidInput:
            return None
    fn = cf.get("filename")
    if not isinstance(fn, str) or not fn.strip() or "/" in fn or "\\" in fn or fn in (".", ".."):
        return None
    team = scope_of(folder + "/")
    files = ws.files_folder(team)
    direct = join(folder if folder == files else files, fn)
    fid = cf.get("file_id")
    if fid and stat_binary(ws, direct) is None:
        # A plugin companion that knows only the Box file: Box Drive keeps the file under its
        # relative path in Box, so look for it (by id when the store lists ids, else by name)
        # anywhere under files/ before calling the companion orphaned.
        return _find_binary(ws, files, fn, str(fid)) or direct
    return direct


def _find_binary(ws: Workspace, files: str, name: str, file_id: str, depth: int = 8) -> str | None:
    """The one file under `files` with this Box id, or else with this name; None when not unique."""
    by_name: list[str] = []
    queue = [(files, 0)]
    while queue:
        folder, d = queue.pop(0)
        try:
            listing = ws.store.list_dir(folder)
        except BoxMemoryError:
            continue
        for e in sorted(listing, key=lambda x: x.name):
            path = join(folder, e.name)
            if e.is_dir:
                if d + 1 < depth and not e.name.startswith(("_", ".")):
                    queue.append((path, d + 1))
            elif e.file_id and str(e.file_id) == file_id:
                return path
            elif e.name == name:
                by_name.append(path)
    return by_name[0] if len(by_name) == 1 else None


def find_companions(
    ws: Workspace, indexes: list[FolderIndex] | None = None, *, live_only: bool = True
) -> tuple[list[Companion], list[str]]:
    """Every companion the indexes know (`kind: companion` + a `companion_for` mapping).

    Returns (companions, problems): a companion file that cannot be read is reported, not fatal.
    """
    found: list[Companion] = []
    problems: list[str] = []
    seen: set[str] = set()
    for idx in indexes if indexes is not None else load_all(ws):
        for e in idx.entries:
            if e.get("kind") != "companion" or (live_only and e.get("status") not in LIVE):
                continue
            path = IndexEntry(idx.folder, e).path
            try:
                mem = read_memory(ws, path)
            except (NotFound, InvalidFile, Unreadable) as err:
                problems.append(f"companion {e.get('id')} ({path}) cannot be read: {err}")
                continue
            cf = mem.meta.get("companion_for")
            if mem.kind != "companion" or not isinstance(cf, dict) or mem.id in seen:
                continue
            if live_only and mem.status not in LIVE:
                continue
            seen.add(mem.id)
            found.append(Companion(e, idx.folder, mem.meta, mem.body, binary_of(ws, idx.folder, cf)))
    return found, problems


def _matches(c: Companion, binary: str, entry: Entry | None) -> bool:
    if c.binary == binary:
        return True
    fid = c.cf.get("file_id")
    return bool(entry is not None and entry.file_id and fid and str(fid) == str(entry.file_id))


def companions_for(ws: Workspace, binary: str, indexes: list[FolderIndex] | None = None) -> list[Companion]:
    """Live companions describing `binary`, newest first."""
    entry = stat_binary(ws, binary)
    comps, _ = find_companions(ws, indexes)
    hits = [c for c in comps if _matches(c, binary, entry)]
    return sorted(hits, key=lambda c: str(c.meta.get("updated_at") or ""), reverse=True)


def _report(c: Companion) -> dict[str, Any]:
    return {
        "id": c.id,
        "path": c.path,
        "binary": c.binary,
        "team": c.meta.get("team"),
        "status": c.meta.get("status"),
        "hash_algo": c.hash_algo,
        "pinned": c.pinned,
        "current": None,
    }


class HashCache:
    """Binary hashes remembered by (workspace, path, stat signature), in the user's cache dir.

    A read (recall, get, status) re-hashes a binary only when its size or mtime (local), or its
    Box etag/sha1 (cloud listing), differ from what was recorded when it was last hashed; an
    unchanged binary costs one stat. Derived data: a cache that cannot be used is just skipped.
    """

    def __init__(self, ws: Workspace) -> None:
        self.root = ws.describe()
        self.db: Any = None
        self.tried = False

    def _open(self) -> Any:
        if not self.tried:
            self.tried = True
            import sqlite3

            from box_memory.paths import user_dirs

            try:
                folder = user_dirs().recall_cache_dir
                folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                db = sqlite3.connect(str(folder / "binary-hashes.sqlite3"), timeout=5, isolation_level=None)
                db.execute(
                    "CREATE TABLE IF NOT EXISTS hashes(root TEXT, path TEXT, sig TEXT, sha256 TEXT, "
                    "sha1 TEXT, size INTEGER, PRIMARY KEY(root, path)) WITHOUT ROWID"
                )
                self.db = db
            except (OSError, sqlite3.Error):
                self.db = None
        return self.db

    def digest(self, ws: Workspace, path: str, entry: Entry) -> Digest:
        import sqlite3

        sig = f"{entry.size}:{entry.modified!r}:{entry.etag}:{entry.sha1}:{entry.file_id}"
        db = self._open()
        if db is not None:
            try:
                row = db.execute(
                    "SELECT sha256, sha1, size FROM hashes WHERE root = ? AND path = ? AND sig = ?",
                    (self.root, path, sig),
                ).fetchone()
            except sqlite3.Error:
                row = None
            if row is not None:
                return Digest(row[0], row[1], row[2], b"")
        d = hash_binary(ws, path)
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.execute(
                    "INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?, ?, ?)",
                    (self.root, path, sig, d.sha256, d.sha1, d.size),
                )
        return d

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def state_of(
    ws: Workspace, c: Companion, digest: Digest | None = None, hashes: HashCache | None = None
) -> dict[str, Any]:
    """current | stale | orphaned for one companion, with the pinned and current hashes.

    Stale compares the pinned algorithm's hash; a pinned Box sha1 is checked against the
    store's sha1 without reading the bytes when the store reports one (cloud). With `hashes`
    the check is cheap: a size different from the pinned `size_bytes` is stale without a read,
    and an unchanged binary (same size and mtime, or etag/sha1 on Box) is not hashed again.
    """
    out = _report(c)
    entry = stat_binary(ws, c.binary) if c.binary else None
    if entry is None or c.binary is None:
        return {**out, "state": "orphaned"}
    pinned_size = c.cf.get("size_bytes")
    if c.hash_algo == "sha1" and entry.sha1:
        current = entry.sha1.lower()
    elif hashes is not None and entry.sha1 and c.cf.get("sha1"):
        # Box reports the sha1 in the listing: compare that instead of downloading the bytes.
        out["state"] = "current" if entry.sha1.lower() == str(c.cf["sha1"]).lower() else "stale"
        return out
    elif (
        hashes is not None and isinstance(pinned_size, int) and not entry.is_dir and pinned_size != entry.size
    ):
        return {**out, "state": "stale"}
    else:
        try:
            if digest is None:
                digest = (
                    hashes.digest(ws, c.binary, entry) if hashes is not None else hash_binary(ws, c.binary)
                )
        except NotFound:  # deleted between the stat and the read
            return {**out, "state": "orphaned"}
        except ReadFailed:  # held open, or Box Drive has not delivered it: not known, not stale
            raise
        except UnreadableFile as e:  # replaced by a FIFO, device or symlink: changed, not hashed
            return {**out, "state": "stale", "error": str(e)}
        current = getattr(digest, c.hash_algo)
    out["current"] = current
    out["state"] = "current" if c.pinned and current == c.pinned else "stale"
    return out


def companion_states(ws: Workspace, paths: list[str]) -> dict[str, str]:
    """current | stale | orphaned for each companion memory file in `paths` (a recall's or a
    get's hits), through the hash cache; a file that is not a companion is left out."""
    out: dict[str, str] = {}
    hashes = HashCache(ws)
    try:
        for path in paths:
            try:
                mem = read_memory(ws, path)
            except BoxMemoryError:
                continue
            cf = mem.meta.get("companion_for")
            if mem.kind != "companion" or not isinstance(cf, dict):
                continue
            folder = path.rsplit("/", 1)[0] if "/" in path else ""
            c = Companion({"local_path": path}, folder, mem.meta, mem.body, binary_of(ws, folder, cf))
            try:
                out[path] = state_of(ws, c, hashes=hashes)["state"]
            except BoxMemoryError:
                continue
    finally:
        hashes.close()
    return out


def stale_warning(title_or_path: str, state: str) -> str:
    if state == "orphaned":
        return f"companion {title_or_path} is orphaned: its binary is gone"
    return f"companion {title_or_path} is stale: its binary changed since it was reviewed - regenerate it"


def stale_companions(ws: Workspace) -> list[dict[str, Any]]:
    """Every live companion whose binary changed ("stale") or is gone ("orphaned").

    Read-only (no lock, safe next to a rebuild). Each dict: id, path (the companion), binary,
    state, hash_algo, pinned, current (None when orphaned), team, status.
    """
    return stale_report(ws)[0]


def stale_report(
    ws: Workspace, *, cached: bool = False, indexes: list[FolderIndex] | None = None
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """(stale or orphaned companions, how many live companions were checked, unreadable ones).

    `cached` checks through the hash cache (status): a binary is hashed only when it changed.
    `indexes`: the folder indexes to look in (status passes the ones that parse), else all.
    """
    comps, problems = find_companions(ws, indexes)
    rows: list[dict[str, Any]] = []
    hashes = HashCache(ws) if cached else None
    try:
        for c in comps:
            try:
                st = state_of(ws, c, hashes=hashes)
            except (Unreadable, ReadFailed) as e:  # neither stale nor orphaned: not readable now
                problems.append(f"companion {c.id} ({c.path}): {e}")
                continue
            if st["state"] != "current":
                rows.append(st)
    finally:
        if hashes is not None:
            hashes.close()
    return rows, len(comps), problems


INTEGRITY_EXIT = 6  # a finding (stale, orphaned, missing), not a failure (docs/spec/cli.md exit codes)


def stale_list(ws: Workspace, team: str | None = None) -> Result:
    """The `companion --stale` service: every stale or orphaned companion (exit 6 if any)."""
    rows, checked, problems = stale_report(ws)
    if team is not None:
        ws.require_team(team)
        rows = [r for r in rows if str(r["path"]).startswith(f"teams/{team}/")]
    data = {"checked": checked, "stale": rows, "count": len(rows)}
    return Result(data, warnings=problems, exit_code=INTEGRITY_EXIT if rows else 0)


@dataclass
class CheckRequest:
    """The MCP `companion_check` tool's parameters."""

    file: Annotated[
        str,
        Param(
            "The binary: a path inside the workspace (e.g. files/report.pdf) or an absolute path.",
            min_length=1,
        ),
    ]
    team: Annotated[str | None, Param("The team whose files/ holds the binary.")] = None


def check_companion(ws: Workspace, file: str, *, team: str | None = None, cwd: Path | None = None) -> Result:
    """The `companion --check` service: current | stale | orphaned | missing for FILE (the
    newest live companion decides); exit 6 unless current."""
    data = _check(ws, file, team=team, cwd=cwd)
    warnings = []
    if data.get("others"):
        warnings.append(
            f"{data['binary']} has other live companions: " + ", ".join(o["path"] for o in data["others"])
        )
    return Result(data, warnings=warnings, exit_code=0 if data["state"] == "current" else INTEGRITY_EXIT)


def _check(ws: Workspace, file: str, *, team: str | None, cwd: Path | None) -> dict[str, Any]:
    binary = resolve_binary(ws, file, team=team, cwd=cwd)
    comps = companions_for(ws, binary.path)
    exists = stat_binary(ws, binary.path) is not None
    folder, filename = companion_location(ws, binary)
    if not comps:
        if not exists:
            refuse_folder(ws, binary.path)
            raise NotFound(f"{binary.path} does not exist and has no companion")
        return {
            "state": "missing",
            "binary": binary.path,
            "companion": None,
            "expected_path": join(folder, filename),
            "others": [],
        }
    st = state_of(ws, comps[0])
    return {
        **st,
        "companion": {"id": comps[0].id, "path": comps[0].path},
        "others": [{"id": c.id, "path": c.path} for c in comps[1:]],
    }
