"""`box-memory export`: every memory of a workspace as JSON Lines or a zip of its markdown files.

A JSONL record is one memory: `{"box_memory_export": 1, "id", "folder", "path", "frontmatter":
{every frontmatter field as written}, "body", "supersedes": [...], "superseded_by"}`. Records are
ordered oldest first (by `created_at`, then id) so that importing them in file order rebuilds each
supersede chain from its first member: `box-memory import export.jsonl` into an empty workspace
reproduces the same memories (ids, timestamps, bodies) and chains.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from box_memory.errors import BoxMemoryError, InvalidInput
from box_memory.model import HIDDEN_STATUSES, IndexEntry, parse_time
from box_memory.result import Result
from box_memory.workspace import Workspace

EXPORT_VERSION = 1
EXPORT_FORMATS = ("jsonl", "markdown-zip")


@dataclass
class Exported:
    record: dict[str, Any]
    raw: bytes  # the memory file's bytes (markdown-zip writes them unchanged)


def parse_since(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    t = parse_time(text)
    if t is None:
        raise InvalidInput(f"invalid --since {text!r}: use an ISO date (2026-01-31) or timestamp")
    return t


def iter_memories(
    ws: Workspace, *, include_superseded: bool = False, since: dt.datetime | None = None
) -> tuple[list[Exported], list[str]]:
    """Every memory (companions included) read from its file; hidden statuses only when asked."""
    from box_memory import frontmatter
    from box_memory.index import load_all
    from box_memory.model import Memory
    from box_memory.progress import task

    out: list[Exported] = []
    warnings: list[str] = []
    indexes = load_all(ws)
    with task("Reading memories", sum(len(i.entries) for i in indexes), "memories") as bar:
        for idx, e in ((i, e) for i in indexes for e in i.entries):
            bar.advance()
            if not include_superseded and e.get("status") in HIDDEN_STATUSES:
                continue
            path = IndexEntry(idx.folder, e).path
            try:
                raw = ws.store.read_bytes(path)
                meta, body = frontmatter.parse(raw.decode("utf-8"), path)
                mem = Memory.from_meta(meta, body, path)
            except (BoxMemoryError, UnicodeDecodeError) as err:
                warnings.append(f"{path}: skipped ({err})")
                continue
            if since is not None:
                updated = parse_time(mem.meta.get("updated_at"))
                if updated is None or updated < since:
                    continue
            out.append(
                Exported(
                    {
                        "box_memory_export": EXPORT_VERSION,
                        "id": mem.id,
                        "folder": idx.folder + "/",
                        "path": path,
                        "frontmatter": mem.meta,
                        "body": mem.body,
                        "supersedes": mem.supersedes,
                        "superseded_by": mem.superseded_by,
                    },
                    raw,
                )
            )
    out.sort(key=lambda x: (str(x.record["frontmatter"].get("created_at") or ""), x.record["id"]))
    return _chain_order(out), warnings


def _chain_order(items: list[Exported]) -> list[Exported]:
    """Oldest first, but never a memory before the one it supersedes (clock skew between writers)."""
    by_id = {x.record["id"]: x for x in items}
    done: set[str] = set()
    ordered: list[Exported] = []

    def place(x: Exported, depth: int = 0) -> None:
        mid = x.record["id"]
        if mid in done:
            return
        done.add(mid)
        for prev in x.record["supersedes"] or []:
            if prev in by_id and depth < 10_000:
                place(by_id[prev], depth + 1)
        ordered.append(x)

    for x in items:
        place(x)
    return ordered


def jsonl_lines(items: list[Exported]) -> Iterator[bytes]:
    for x in items:
        yield orjson.dumps(x.record, option=orjson.OPT_NON_STR_KEYS, default=str) + b"\n"


def write_zip(items: list[Exported], dest: Any) -> None:
    """The memory files under their workspace paths, plus `export.jsonl` (the same records)."""
    import zipfile

    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for x in items:
            zf.writestr(str(x.record["path"]), x.raw)
        zf.writestr("export.jsonl", b"".join(jsonl_lines(items)))


@dataclass(frozen=True)
class ExportRequest:
    format: str = "jsonl"
    output: Path | None = None  # None: jsonl to `stdout`
    include_superseded: bool = False
    since: str | None = None

    def check(self, *, to_stdout: bool) -> dt.datetime | None:
        """Refuse a bad combination before anything is opened; returns the `since` cut-off."""
        if self.format not in EXPORT_FORMATS:
            raise InvalidInput(f"unknown export format {self.format!r} (expected jsonl or markdown-zip)")
        if self.output is None and (self.format != "jsonl" or not to_stdout):
            raise InvalidInput(
                "--output FILE is required for markdown-zip and with --json (stdout carries the envelope)"
            )
        if self.output is not None and self.output.is_dir():
            raise InvalidInput(f"--output {self.output} is a folder; name a file")
        return parse_since(self.since)


def export_memories(ws: Workspace, req: ExportRequest, stdout: BinaryIO | None = None) -> Result:
    """The `export` service: write the memories to `req.output` (through a temporary file renamed
    into place) or, jsonl only, to `stdout`; the result counts them."""
    cutoff = req.check(to_stdout=stdout is not None)
    output = req.output
    items, warnings = iter_memories(ws, include_superseded=req.include_superseded, since=cutoff)
    if output is None:
        assert stdout is not None  # checked above
        for line in jsonl_lines(items):
            stdout.write(line)
        stdout.flush()
    else:
        tmp = output.with_name(f".{output.name}.partial")
        try:
            if req.format == "jsonl":
                with tmp.open("wb") as fh:
                    for line in jsonl_lines(items):
                        fh.write(line)
            else:
                write_zip(items, tmp)
            tmp.replace(output)
        finally:
            tmp.unlink(missing_ok=True)
    by_status: dict[str, int] = {}
    for x in items:
        s = str(x.record["frontmatter"].get("status"))
        by_status[s] = by_status.get(s, 0) + 1
    data = {
        "format": req.format,
        "output": str(output) if output is not None else None,
        "count": len(items),
        "by_status": by_status,
        "include_superseded": req.include_superseded,
        "since": req.since,
    }
    return Result(data, warnings=warnings)
