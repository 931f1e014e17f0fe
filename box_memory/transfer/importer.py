"""`box-memory import`: the import run, bringing memories in from the tools people already use.

The readers of each format (basic-memory, claude-code, mem0, markdown, box-memory; see their
modules in `transfer.sources`) yield `SourceItem`s and write nothing to the source; this module
plans what to write from them and writes it.

Every imported memory carries a `sources` entry `{type: <format>, ref: <original path or id>,
digest: sha256:<hex of the source item>, imported_at}`. An item whose ref an earlier import wrote
with the same digest (or, for box-memory, whose id is in the workspace) is skipped, so re-running
an import writes nothing new; an item whose ref was imported with another digest supersedes that
memory (or the current end of its chain; one archived since is left alone). A box-memory record
of a team the target lacks stops the import before anything is written. No file is read through a
symbolic link that leads out of the source, and a source inside the workspace is refused. Each
item is prepared as `box-memory write` prepares one (`write.prepare`), and the memories and
companions go in as one batch of the one locked commit (`write.commit`): the same validation,
lock and index updates as `box-memory write`.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from box_memory.errors import BoxMemoryError, InvalidInput, NotFound
from box_memory.format import frontmatter
from box_memory.format.model import IndexEntry, now_iso
from box_memory.result import Result
from box_memory.transfer.sources.box_export import folder_team as _folder_team
from box_memory.transfer.sources.claude_code import ClaudeReader
from box_memory.transfer.sources.claude_code import claude_files as _claude_files
from box_memory.transfer.sources.claude_code import project_label as _project_label
from box_memory.transfer.sources.common import KNOWN_KEYS as _KNOWN_KEYS
from box_memory.transfer.sources.common import SourceItem
from box_memory.transfer.sources.common import outside as _outside
from box_memory.transfer.sources.common import read_text as _read_text
from box_memory.transfer.sources.common import reason as _reason
from box_memory.transfer.sources.detect import FORMATS, READERS, detect_format
from box_memory.transfer.sources.exports import EXPORT_MEMBER
from box_memory.transfer.sources.markdown import markdown_item as _markdown_item
from box_memory.workspace.resolve import Workspace

if TYPE_CHECKING:  # the write room is loaded only when an import writes
    from box_memory.write.commit import Placement, Transaction
    from box_memory.write.prepare import Prepared


@dataclass
class Planned:
    item: SourceItem
    prepared: Prepared


@dataclass
class ImportReport:
    source: str
    format: str
    detected: str | None
    dry_run: bool
    items: int = 0
    written: list[dict[str, Any]] = field(default_factory=list)
    would_write: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # files read from outside the source tree

    def as_dict(self) -> dict[str, Any]:
        rows = self.would_write if self.dry_run else self.written
        by_kind: dict[str, int] = {}
        for r in rows:
            by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
        return {
            "source": self.source,
            "format": self.format,
            "detected": self.detected,
            "dry_run": self.dry_run,
            "items": self.items,
            "imported": 0 if self.dry_run else len(self.written),
            "updated": sum(1 for r in rows if r.get("supersedes")),
            "would_import": len(self.would_write) if self.dry_run else None,
            "already_imported": len(self.skipped),
            "failed": len(self.errors),
            "by_kind": dict(sorted(by_kind.items())),
            "first_titles": [r["title"] for r in rows[:10]],
            "memories": rows,
            "skipped": self.skipped,
            "errors": self.errors,
            "read_outside_source": self.outside,
        }


@dataclass
class Known:
    """What the workspace already holds of earlier imports."""

    ids: set[str] = field(default_factory=set)  # every memory id in the workspace
    digests: set[str] = field(default_factory=set)  # source digests in the target folders
    # (source type, ref) -> (id of the memory that last imported it, that import's digest)
    by_ref: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> index entry

    def current(self, mem_id: str) -> dict[str, Any] | None:
        """The live end of the supersede chain through `mem_id` (a later edit made in the
        workspace included), or None when the chain ends archived or held."""
        seen: set[str] = set()
        entry = self.entries.get(mem_id)
        while entry is not None and entry.get("superseded_by") and mem_id not in seen:
            seen.add(mem_id)
            mem_id = str(entry["superseded_by"])
            entry = self.entries.get(mem_id)
        if entry is None or entry.get("status") not in ("active", "draft"):
            return None
        return entry


def existing_keys(ws: Workspace, folders: list[str]) -> Known:
    """Ids in the workspace, and the sources of the memories in `folders`, for idempotency and
    for superseding what an earlier import wrote when its source item changed."""
    from box_memory.workspace.index import load_all

    known = Known()
    for idx in load_all(ws):
        for e in idx.entries:
            known.ids.add(str(e.get("id")))
            known.entries[str(e.get("id"))] = e
        if idx.folder not in folders:
            continue
        for e in idx.entries:
            path = IndexEntry(idx.folder, e).path
            try:
                raw = ws.store.read_bytes(path)
            except BoxMemoryError:
                continue
            if b"digest:" not in raw:
                continue
            try:
                meta, _ = frontmatter.parse(raw.decode("utf-8", "replace"), path)
            except BoxMemoryError:
                continue
            mem_id = str(e.get("id"))
            for src in meta.get("sources") or []:
                if not isinstance(src, dict) or not src.get("digest"):
                    continue
                known.digests.add(str(src["digest"]))
                if src.get("type") and src.get("ref"):
                    key = (str(src["type"]), str(src["ref"]))
                    prev = known.by_ref.get(key)
                    if prev is None or mem_id > prev[0]:  # ids are ULIDs: the newest import wins
                        known.by_ref[key] = (mem_id, str(src["digest"]))
    return known


def _request(
    item: SourceItem, fmt: str, team: str | None, imported_at: str, replaced_here: bool = False
) -> Any:
    from box_memory.write.prepare import WriteRequest

    source: dict[str, Any] = {"type": fmt, "ref": item.ref, "digest": item.digest, "imported_at": imported_at}
    extra: dict[str, Any] = {}
    sources: list[Any] = [source]
    if item.keep_id:
        # A box-memory record: it keeps its own id, timestamps, status and sources.
        fm = dict(item.extra_source.get("_frontmatter") or {})
        extra["id"] = item.keep_id
        orig = [s for s in fm.get("sources") or [] if isinstance(s, dict)]
        sources = orig or []
        for key in ("links", "expires_at"):
            if fm.get(key) is not None:
                extra[key] = fm[key]
        for key, val in fm.items():  # unknown keys another writer added are kept
            if key not in _KNOWN_KEYS and val is not None:
                extra[key] = val
        if item.status in ("archived", "held") or (item.status == "superseded" and not replaced_here):
            extra["status"] = item.status  # a superseded one whose successor is not imported stays so
            if fm.get("superseded_by"):
                extra["superseded_by"] = fm["superseded_by"]
    else:
        source.update({k: v for k, v in item.extra_source.items() if not k.startswith("_")})
        extra.update({k: v for k, v in item.meta.items() if k not in _KNOWN_KEYS})
    if item.created_at:
        extra["created_at"] = item.created_at
        extra["updated_at"] = item.updated_at or item.created_at
        if replaced_here:  # its successor's write stamps it again, exactly as the first time
            extra["updated_at"] = item.created_at
    if sources:
        extra["sources"] = sources
    return WriteRequest(
        content=item.content,
        title=item.title,
        kind=item.kind,
        tags=item.tags,
        team=team,
        status=item.status if item.status in ("active", "draft") else "active",
        supersedes=item.supersedes,
        related=item.related,
        confidence=item.confidence,
        agent=item.agent,
        new_slug=True,  # distinct source items may share a title; the digest guards against repeats
        extra_meta=extra,
    )


FORMAT_ALIASES = {"jsonl": "box-memory"}  # `export --format jsonl` writes the box-memory format


def check_source(ws: Workspace, source: Path) -> None:
    """Refuse a source that is not a file or folder, or that lies inside the workspace itself."""
    try:
        st = source.stat()
    except FileNotFoundError:
        raise NotFound(f"import source {source} not found") from None
    except OSError as e:
        raise InvalidInput(f"import source {source}: {_reason(e)}") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        from box_memory.format.safeio import describe_mode

        raise InvalidInput(f"import source {source} is {describe_mode(st.st_mode)}, not a file or folder")
    root = _workspace_root(ws)
    if root is not None and _outside(source, root) is None:
        raise InvalidInput(
            f"import source {source} is inside the workspace {root}; "
            "its memories are there already (import reads from another tool's folder)"
        )


def _workspace_root(ws: Workspace) -> Path | None:
    """The workspace's folder on this machine (a local or Box Drive workspace), else None."""
    root = ws.store.local_root
    return Path(root) if root is not None else None


def _read_items(ws: Workspace, source: Path, fmt: str, report: ImportReport) -> list[SourceItem]:
    if source.is_file() and fmt == "markdown":
        items = list(_single_markdown(source))
    elif fmt == "claude-code":
        reader = ClaudeReader(source.parent, source) if source.is_file() else ClaudeReader(source)
        if source.is_file():
            label = _project_label(source, reader.root)
            items = list(reader.instruction(source, label=label, hops=0))
        else:
            instructions, auto = _claude_files(source)
            items = list(reader.items(instructions, auto, parents=True))
        report.outside = reader.outside
        report.warnings += [f"{x['ref']}: {x['reason']}" for x in reader.skipped]
    else:
        items = list(READERS[fmt](source))
    root = _workspace_root(ws)
    if root is None or _outside(root, source) is not None:
        return items
    # The workspace sits inside the source: its own files are not read back as new memories.
    kept = [it for it in items if _outside(Path(it.ref.split("#", 1)[0]), root) is not None]
    if len(kept) < len(items):
        skipped = len(items) - len(kept)
        report.warnings.append(f"{skipped} file(s) of the workspace itself ({root}) not imported")
    return kept


def _checked_format(ws: Workspace, source: Path, fmt: str | None, team: str | None) -> tuple[str, str | None]:
    """The source's format (given, or detected with the reason) once the source fits it."""
    fmt = FORMAT_ALIASES.get(fmt, fmt) if fmt is not None else None
    if fmt is not None and fmt not in FORMATS:
        raise InvalidInput(f"unknown import format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    check_source(ws, source)
    detected: str | None = None
    if fmt is None:
        fmt, why = detect_format(source)
        detected = f"{fmt} ({why})"
    if fmt == "box-memory" and source.is_dir() and not (source / EXPORT_MEMBER).is_file():
        raise InvalidInput(f"a box-memory source is an export file or zip, or a folder with {EXPORT_MEMBER}")
    if fmt == "mem0" and not source.is_file():
        raise InvalidInput(f"a {fmt} source is a JSON/JSONL file, not a folder: {source}")
    if fmt == "basic-memory" and not source.is_dir():
        raise InvalidInput(f"a {fmt} source is a folder: {source}")
    if team is not None:
        ws.require_team(team)
    return fmt, detected


@dataclass
class _Planner:
    """Decides item by item what an import writes: skipped when imported before, superseding its
    earlier import when its bytes changed, refused when the source repeats it; the rest prepared
    as `box-memory write` prepares one (nothing written)."""

    ws: Workspace
    fmt: str
    team: str | None
    known: Known
    report: ImportReport
    successors: set[str]  # ids a later record supersedes: written live, then superseded
    imported_at: str = field(default_factory=now_iso)
    planned: list[Planned] = field(default_factory=list)
    seen_ids: set[str] = field(default_factory=set)
    seen_refs: set[str] = field(default_factory=set)

    def add(self, it: SourceItem) -> None:
        from box_memory.write.prepare import prepare_write

        if it.error is not None:
            self.report.errors.append({"ref": it.ref, "reason": it.error})
            return
        replaces = self._replaces(it)
        if replaces is False:
            return
        if it.keep_id and it.keep_id in self.seen_ids:
            self.report.errors.append({"ref": it.ref, "reason": "duplicate id in the source"})
            return
        if it.supersedes and it.supersedes not in self.known.ids and it.supersedes not in self.seen_ids:
            self.report.warnings.append(f"{it.ref}: supersedes {it.supersedes}, which is not in the "
                                        "workspace or the import; written without the link")  # fmt: skip
            it.supersedes = None
        if isinstance(replaces, str):
            it.supersedes = replaces
        try:
            team = self.team or _team_for(self.ws, it)
            req = _request(it, self.fmt, team, self.imported_at, it.keep_id in self.successors)
            prepared = prepare_write(self.ws, req)
        except BoxMemoryError as e:
            self.report.errors.append({"ref": it.ref, "reason": str(e)})
            return
        self.planned.append(Planned(it, prepared))
        self.known.digests.add(it.digest)
        if it.keep_id:
            self.seen_ids.add(it.keep_id)

    def _replaces(self, it: SourceItem) -> str | bool:
        """False: not written (reported); a memory id: the earlier import this item supersedes;
        True: written as new."""
        if it.keep_id:
            if it.keep_id in self.known.ids:
                self.report.skipped.append({"ref": it.ref, "reason": "already imported"})
                return False
            return True
        last = self.known.by_ref.get((self.fmt, it.ref))
        if (last is not None and last[1] == it.digest) or (last is None and it.digest in self.known.digests):
            self.report.skipped.append({"ref": it.ref, "reason": "already imported"})
            return False
        replaces: str | bool = True
        if last is not None:
            current = self.known.current(last[0])
            if current is None:
                self.report.skipped.append({"ref": it.ref, "reason": f"changed, but {last[0]} was "
                                            "archived in the workspace; not imported again"})  # fmt: skip
                return False
            replaces = str(current.get("id"))
        if it.ref in self.seen_refs:
            self.report.errors.append({"ref": it.ref, "reason": "duplicate item in the source"})
            return False
        self.seen_refs.add(it.ref)
        return replaces


def _would_write(planned: list[Planned], placed: list[PlacedCompanion]) -> list[dict[str, Any]]:
    """What a dry run reports: each companion and memory the import would write, and where."""
    from box_memory.write.checks import infer_kind

    rows = [
        {"ref": c.item.ref, "title": c.item.title, "kind": "companion", "folder": c.folder + "/"}
        for c in placed
    ]
    rows += [
        {"ref": pl.item.ref, "title": pl.prepared.title or pl.item.title,
         "kind": pl.prepared.kind or infer_kind(pl.prepared.content), "folder": pl.prepared.folder + "/",
         **({"supersedes": pl.item.supersedes} if pl.item.supersedes and not pl.item.keep_id else {})}
        for pl in planned
    ]  # fmt: skip
    return rows


def run_import(
    ws: Workspace,
    source: Path,
    *,
    fmt: str | None = None,
    team: str | None = None,
    dry_run: bool = False,
) -> ImportReport:
    """Read SOURCE, skip what is already imported, validate each item, write the rest in one batch.
    An item whose source ref an earlier import wrote, but whose bytes changed since, supersedes
    that memory (or the current end of its chain)."""
    source = source.expanduser().absolute()
    fmt, detected = _checked_format(ws, source, fmt, team)
    report = ImportReport(str(source), fmt, detected, dry_run)
    items = _read_items(ws, source, fmt, report)
    report.items = len(items)
    if team is None:
        check_teams(ws, items)
    scopes = {ws.require_team(team or _team_for(ws, it)) for it in items if it.error is None}
    folders = sorted({f for scope in scopes for f in ws.memory_folders(scope)})  # month folders too
    known = existing_keys(ws, folders)
    successors = {it.supersedes for it in items if it.error is None and it.supersedes}
    companions = [it for it in items if it.error is None and it.kind == "companion" and it.keep_id]
    planner = _Planner(ws, fmt, team, known, report, successors)
    companion_items = {id(it) for it in companions}
    for it in items:
        if id(it) not in companion_items:
            planner.add(it)
    placed = _place_companions(ws, companions, known, team, report)
    if dry_run:
        report.would_write = _would_write(planner.planned, placed)
        return report
    _commit_import(ws, planner.planned, placed, report)
    return report


def _commit_import(
    ws: Workspace, planned: list[Planned], placed: list[PlacedCompanion], report: ImportReport
) -> None:
    """The planned memories, then the exported companions, as one batch of the one locked commit
    (`write.commit`): an item's error skips only that item and is reported with its source ref."""
    from box_memory.progress import task
    from box_memory.write.commit import commit
    from box_memory.write.memories import MemoryPlacement

    if not planned and not placed:
        return
    placements: list[Placement] = [MemoryPlacement(pl.prepared) for pl in planned]
    placements += [ImportedCompanion(c) for c in placed]
    bar = task("Importing", len(planned), "memories")  # drawn on a terminal only (box_memory.progress)

    def on_item(i: int, res: dict[str, Any] | None, err: BoxMemoryError | None) -> None:
        item = planned[i].item if i < len(planned) else placed[i - len(planned)].item
        if err is not None:
            report.errors.append({"ref": item.ref, "reason": str(err)})
        elif res is not None:
            row = {"ref": item.ref, "id": res["id"], "title": res["title"], "kind": res["kind"],
                   "file": res["file"]}  # fmt: skip
            if item.supersedes and not item.keep_id:
                row["supersedes"] = item.supersedes  # the source item changed since it was imported
            report.written.append(row)
        if i < len(planned):
            t.advance()

    with bar as t:
        report.warnings += commit(
            ws, placements, writer="box-memory import", skill="import", on_item=on_item
        )[1]


@dataclass
class PlacedCompanion:
    item: SourceItem
    binary: str  # workspace path of the binary it describes
    folder: str
    filename: str


def _place_companions(
    ws: Workspace, items: list[SourceItem], known: Known, team: str | None, report: ImportReport
) -> list[PlacedCompanion]:
    """Where each exported companion goes: where this workspace keeps the companion of its binary
    (`companions.companion_location`). A superseded one stays behind (history of a binary the
    export does not carry), as does one whose place another companion holds already."""
    from box_memory.write.binaries import Binary, companion_location

    placed: list[PlacedCompanion] = []
    for it in items:
        fm = it.extra_source.get("_frontmatter") or {}
        if it.keep_id in known.ids:
            report.skipped.append({"ref": it.ref, "reason": "already imported"})
            continue
        if it.status != "active":
            report.skipped.append({"ref": it.ref, "reason": f"a {it.status} companion; only current ones "
                                   "are imported"})  # fmt: skip
            continue
        cf = fm.get("companion_for")
        name = str(cf.get("filename") or "") if isinstance(cf, dict) else ""
        scope = team or it.team
        local = str(cf.get("local_path") or "") if isinstance(cf, dict) else ""
        binary = (
            local
            if local and team is None
            else f"{ws.files_folder(scope)}/{local.rsplit('/', 1)[-1] or name}"
        )
        parts = binary.split("/")
        if binary.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == "_archive":
            report.errors.append(
                {"ref": it.ref, "reason": f"companion_for names no usable binary ({binary!r})"}
            )
            continue
        folder, filename = companion_location(ws, Binary(binary, scope))
        try:
            taken = ws.store.exists(f"{folder}/{filename}")
        except BoxMemoryError as e:
            report.errors.append({"ref": it.ref, "reason": str(e)})
            continue
        if taken:
            report.errors.append(
                {"ref": it.ref, "reason": f"{folder}/{filename} exists already; not overwritten"}
            )
            continue
        placed.append(PlacedCompanion(it, binary, folder, filename))
    return placed


@dataclass
class ImportedCompanion:
    """An exported companion placed as it was exported (id, pinned hashes, body), in the batch of
    the import's commit. Its binary is not in an export: until it is copied to the path the
    companion names, `companion --stale` reports it orphaned (never fixed silently)."""

    c: PlacedCompanion

    def place(self, tx: Transaction) -> dict[str, Any]:
        c, ws = self.c, tx.ws
        meta = dict(c.item.extra_source.get("_frontmatter") or {})
        meta["team"] = ws.team_of(_folder_team(c.folder + "/"))
        cf = meta.get("companion_for")
        if isinstance(cf, dict):
            meta["companion_for"] = {**cf, "local_path": c.binary}
        idx, _ = tx.folder(c.folder)
        if not ws.store.exists(c.folder):
            ws.store.mkdir(c.folder)
        done = tx.file(idx, meta, c.item.content, c.filename)
        if not ws.store.exists(c.binary):
            tx.warnings.append(
                f"{done.path}: its binary is not in the export; copy it to {c.binary} "
                "(until then `box-memory companion --stale` reports it orphaned)"
            )
        return {"id": c.item.keep_id, "title": c.item.title, "kind": "companion", "file": done.path}


def check_teams(ws: Workspace, items: list[SourceItem]) -> None:
    """A box-memory record of a team this workspace lacks is refused before anything is written,
    never put in the default team silently."""
    teams = ws.config.teams
    missing = sorted({it.team for it in items if it.error is None and it.team and it.team not in teams})
    if missing:
        names = ", ".join(missing)
        raise InvalidInput(
            f"the source holds memories of team(s) this workspace lacks: {names}; create them first "
            f"(box-memory team create {missing[0]}) or pass --team to import everything into one team"
        )


def _team_for(ws: Workspace, item: SourceItem) -> str | None:
    """A box-memory record goes back to its team folder (`check_teams` made sure it exists)."""
    return item.team if item.team and item.team in ws.config.teams else None


def _single_markdown(path: Path) -> Iterator[SourceItem]:
    """One file named on the command line (read even when it is a link: the user named it)."""
    ref = str(path)
    try:
        raw, text = _read_text(path)
    except (OSError, InvalidInput) as e:
        yield SourceItem(ref, error=_reason(e))
        return
    yield _markdown_item(path, raw, text)


def import_memories(
    ws: Workspace,
    source: Path,
    *,
    fmt: str | None = None,
    team: str | None = None,
    dry_run: bool = False,
) -> Result:
    """The `import` service: the report's data; exit 1 when no item could be imported."""
    report = run_import(ws, source, fmt=fmt, team=team, dry_run=dry_run)
    data = report.as_dict()
    warnings = [f"{e['ref']}: {e['reason']}" for e in report.errors] + report.warnings
    written = data["would_import"] if dry_run else data["imported"]
    if written == 0 and data["already_imported"] == 0:
        errors = [{"code": "nothing_imported", "message": "no item of the source could be imported"}]
        return Result(data, warnings=warnings, errors=errors, exit_code=1, status="error")
    return Result(data, warnings=warnings)
