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
from typing import Any

import orjson

from box_memory.errors import BoxMemoryError, InvalidInput
from box_memory.model import HIDDEN_STATUSES, parse_time
from box_memory.store.base import join
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

    out: list[Exported] = []
    warnings: list[str] = []
    for idx in load_all(ws):
        for e in idx.entries:
            if not include_superseded and e.get("status") in HIDDEN_STATUSES:
                continue
            path = str(e.get("local_path") or join(idx.folder, str(e.get("filename"))))
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
