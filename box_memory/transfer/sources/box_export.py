"""The `box-memory` format (alias `jsonl`): what `box-memory export` writes, read back record by record.

The JSONL file, or a markdown-zip export (the zip, or the folder it was unpacked into: its
`export.jsonl`); ids, timestamps, status, supersede chains and companions are kept, so export ->
import reproduces a workspace. Each record's team is its folder's (`folder_team`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from box_memory.errors import InvalidInput
from box_memory.format.ids import is_memory_id
from box_memory.format.model import STATUSES
from box_memory.transfer.sources.common import SourceItem, digest_of, reason
from box_memory.transfer.sources.exports import export_text, json_items


def read_box_memory(path: Path) -> Iterator[SourceItem]:
    try:
        items, errors = json_items(path, export_text(path))
    except (OSError, InvalidInput) as e:
        yield SourceItem(str(path), error=reason(e))
        return
    yield from errors
    for n, rec in enumerate(items, start=1):
        ref = f"{path}#{n}"
        if not isinstance(rec, dict) or not isinstance(rec.get("frontmatter"), dict):
            yield SourceItem(ref, error="not a box-memory export record (no 'frontmatter')")
            continue
        fm = rec["frontmatter"]
        mem_id = str(fm.get("id") or "")
        if not is_memory_id(mem_id):
            yield SourceItem(ref, error=f"invalid memory id {mem_id!r}")
            continue
        body = rec.get("body")
        if not isinstance(body, str) or not body.strip():
            yield SourceItem(mem_id, error="record has no body")
            continue
        if fm.get("kind") == "companion":
            # Written back as a companion (`_write_companions`), next to where its binary belongs.
            yield SourceItem(
                mem_id,
                title=str(fm.get("title") or ""),
                content=body,
                kind="companion",
                digest=digest_of(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)),
                keep_id=mem_id,
                status=str(fm.get("status") or "active"),
                team=folder_team(str(rec.get("folder") or "")) or scope_team(fm),
                extra_source={"_frontmatter": fm},
            )
            continue
        status = str(fm.get("status") or "active")
        sup = fm.get("supersedes")
        yield SourceItem(
            mem_id,
            title=str(fm.get("title") or ""),
            content=body,
            kind=str(fm["kind"]) if fm.get("kind") else None,
            tags=[str(t) for t in fm.get("tags") or []],
            related=[str(r) for r in fm.get("related") or []],
            agent=str(fm["agent"]) if fm.get("agent") else None,
            created_at=str(fm.get("created_at") or "") or None,
            updated_at=str(fm.get("updated_at") or "") or None,
            digest=digest_of(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)),
            keep_id=mem_id,
            status=status if status in STATUSES else None,
            supersedes=str(sup[0]) if isinstance(sup, list) and sup else None,
            team=folder_team(str(rec.get("folder") or "")),
            confidence=fm.get("confidence") if isinstance(fm.get("confidence"), (int, float)) else None,
            extra_source={"_frontmatter": fm},
        )


def scope_team(fm: dict[str, Any]) -> str | None:
    cf = fm.get("companion_for")
    path = str(cf.get("local_path") or "") if isinstance(cf, dict) else ""
    return folder_team(path.rsplit("/", 1)[0] + "/") if "/" in path else None


def folder_team(folder: str) -> str | None:
    parts = folder.strip("/").split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "teams" else None
