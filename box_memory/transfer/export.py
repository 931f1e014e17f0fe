"""`box-memory export`: every memory of a workspace as JSON Lines or a zip of its markdown files.

A JSONL record is one memory: `{"box_memory_export": 1, "id", "folder", "path", "frontmatter":
{every frontmatter field as written}, "body", "supersedes": [...], "superseded_by"}`. Records are
ordered oldest first (by `created_at`, then id) so that importing them in file order rebuilds each
supersede chain from its first member: `box-memory import export.jsonl` into an empty workspace
reproduces the same memories (ids, timestamps, bodies) and chains.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from box_memory.errors import BoxMemoryError, InvalidInput
from box_memory.format.model import HIDDEN_STATUSES, IndexEntry, parse_time
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

EXPORT_VERSION = 1
EXPORT_FORMATS = ("jsonl", "markdown-zip")
# link() errors that mean "no hard links on this file system".
_NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV, errno.ENOSYS}


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
    from box_memory.format import frontmatter
    from box_memory.format.model import Memory
    from box_memory.progress import task
    from box_memory.workspace.index import load_all

    out: list[Exported] = []
    warnings: list[str] = []
    skipped: list[str] = []
    indexes = load_all(ws, skipped)
    if skipped:
        from box_memory.recall.unreadable import unreadable_warning

        denied = [s for s in skipped if s.endswith("/")]
        warnings += [f"{s} (not exported)" for s in skipped if not s.endswith("/")]
        if denied:
            warnings.append(unreadable_warning(denied) + " (not exported)")
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
    force: bool = False  # replace an existing regular file at `output`

    def check(self, *, to_stdout: bool) -> dt.datetime | None:
        """Refuse a bad combination before anything is opened; returns the `since` cut-off."""
        if self.format not in EXPORT_FORMATS:
            raise InvalidInput(f"unknown export format {self.format!r} (expected jsonl or markdown-zip)")
        if self.output is None and (self.format != "jsonl" or not to_stdout):
            raise InvalidInput(
                "--output FILE is required for markdown-zip and with --json (stdout carries the envelope)"
            )
        if self.output is not None:
            check_output(self.output, force=self.force)
        return parse_since(self.since)


def check_output(output: Path, *, force: bool) -> None:
    """Refuse an output that would destroy something: a path that exists (unless `force`, and
    then only a regular file is replaced: never a symlink, device, FIFO or folder), or any path
    inside a box-memory workspace (an export there could replace a memory or an index)."""
    try:
        st: os.stat_result | None = output.lstat()
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise InvalidInput(f"--output {output} cannot be used ({e.strerror})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InvalidInput(f"--output {output} is a folder; name a file")
    if st is not None and not stat.S_ISREG(st.st_mode):
        from box_memory.format.safeio import describe_mode

        raise InvalidInput(
            f"--output {output} is {describe_mode(st.st_mode)}; export replaces only a regular file"
        )
    if st is not None and not force:
        raise InvalidInput(f"--output {output} already exists; pass --force to replace it")
    root = workspace_above(output)
    if root is not None:
        raise InvalidInput(
            f"--output {output} is inside the box-memory workspace {root}; write the export outside it"
        )


def workspace_above(output: Path) -> Path | None:
    """The box-memory workspace (a folder holding _box-memory.json) that the real folder of
    `output` is in, if any (symbolic links resolved, so a link into a workspace counts)."""
    from box_memory.format.model import CONFIG_NAME

    folder = Path(os.path.realpath(output.parent if str(output.parent) else Path.cwd()))
    for d in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            if (d / CONFIG_NAME).exists():
                return d
    return None


def _write_output(output: Path, fmt: str, items: list[Exported], *, force: bool) -> None:
    """Write the export next to `output` in a new temporary file, make it durable, then put it in
    place: linked under the name (fails if anything appeared there meanwhile), or with `force`
    renamed over the regular file checked just before. Nothing but a complete file is ever seen."""
    folder = output.parent if str(output.parent) else Path()
    tmp = folder / f".{output.name}.{os.urandom(6).hex()}.partial"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            if fmt == "jsonl":
                for line in jsonl_lines(items):
                    fh.write(line)
            else:
                write_zip(items, fh)
            fh.flush()
            os.fsync(fh.fileno())
        check_output(output, force=force)  # again: something may have appeared meanwhile
        if force and output.exists():
            tmp.replace(output)
        else:
            _link_new(tmp, output)
    finally:
        tmp.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _link_new(tmp: Path, output: Path) -> None:
    """Give the finished file its name only if the name is free (no-clobber)."""
    try:
        os.link(tmp, output)
        return
    except FileExistsError:
        raise InvalidInput(f"--output {output} already exists; pass --force to replace it") from None
    except OSError as e:
        if e.errno not in _NO_LINK:
            raise
    # No hard links here (FAT, some network shares): claim the name exclusively, then fill it.
    try:
        os.close(os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise InvalidInput(f"--output {output} already exists; pass --force to replace it") from None
    tmp.replace(output)


def export_memories(ws: Workspace, req: ExportRequest, stdout: BinaryIO | None = None) -> Result:
    """The `export` service: write the memories to `req.output` (a new file, or with `req.force`
    a regular file replaced; never a path inside a workspace; through a temporary file put in
    place when complete) or, jsonl only, to `stdout`; the result counts them."""
    cutoff = req.check(to_stdout=stdout is not None)
    output = req.output
    items, warnings = iter_memories(ws, include_superseded=req.include_superseded, since=cutoff)
    if output is None:
        assert stdout is not None  # checked above
        for line in jsonl_lines(items):
            stdout.write(line)
        stdout.flush()
    else:
        _write_output(output, req.format, items, force=req.force)
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
