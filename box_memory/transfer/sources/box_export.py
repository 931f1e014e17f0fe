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

from box_memory.format.ids import is_memory_id
from box_memory.format.model import STATUSES
from box_memory.transfer.sources.common import SourceItem, digest_of
from box_memory.transfer.sources.exports import read_export


def read_box_memory(path: Path) -> Iterator[SourceItem]:
    yield from read_export(path, _record_item)


def _record_item(ref: str, rec: Any) -> SourceItem:
    """One export record as the memory it was: a companion or any other kind."""
    if not isinstance(rec, dict) or not isinstance(rec.get("frontmatter"), dict):
        return SourceItem(ref, error="not a box-memory export record (no 'frontmatter')")
    fm = rec["frontmatter"]
    mem_id = str(fm.get("id") or "")
    if not is_memory_id(mem_id):
        return SourceItem(ref, error=f"invalid memory id {mem_id!r}")
    body = rec.get("body")
    if not isinstance(body, str) or not body.strip():
        return SourceItem(mem_id, error="record has no body")
    if fm.get("kind") == "companion":
        return _companion_item(rec, fm, mem_id, body)
    return _memory_item(rec, fm, mem_id, body)


def _companion_item(rec: dict[str, Any], fm: dict[str, Any], mem_id: str, body: str) -> SourceItem:
    """A companion: written back as one (importer's `_write_companions`), next to where its
    binary belongs; its team is its folder's, else its binary's."""
    return SourceItem(
        mem_id,
        title=str(fm.get("title") or ""),
        content=body,
        kind="companion",
        digest=_record_digest(rec),
        keep_id=mem_id,
        status=str(fm.get("status") or "active"),
        team=folder_team(str(rec.get("folder") or "")) or _scope_team(fm),
        extra_source={"_frontmatter": fm},
    )


def _memory_item(rec: dict[str, Any], fm: dict[str, Any], mem_id: str, body: str) -> SourceItem:
    """A memory with its own id, times, status, chain link and team."""
    status = str(fm.get("status") or "active")
    sup = fm.get("supersedes")
    return SourceItem(
        mem_id,
        title=str(fm.get("title") or ""),
        content=body,
        kind=str(fm["kind"]) if fm.get("kind") else None,
        tags=[str(t) for t in fm.get("tags") or []],
        related=[str(r) for r in fm.get("related") or []],
        agent=str(fm["agent"]) if fm.get("agent") else None,
        created_at=str(fm.get("created_at") or "") or None,
        updated_at=str(fm.get("updated_at") or "") or None,
        digest=_record_digest(rec),
        keep_id=mem_id,
        status=status if status in STATUSES else None,
        supersedes=str(sup[0]) if isinstance(sup, list) and sup else None,
        team=folder_team(str(rec.get("folder") or "")),
        confidence=fm.get("confidence") if isinstance(fm.get("confidence"), (int, float)) else None,
        extra_source={"_frontmatter": fm},
    )


def _record_digest(rec: dict[str, Any]) -> str:
    return digest_of(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS))


def _scope_team(fm: dict[str, Any]) -> str | None:
    """The team of the binary a companion describes (`companion_for.local_path`), if any."""
    cf = fm.get("companion_for")
    path = str(cf.get("local_path") or "") if isinstance(cf, dict) else ""
    return folder_team(path.rsplit("/", 1)[0] + "/") if "/" in path else None


def folder_team(folder: str) -> str | None:
    """The team a workspace folder belongs to (`teams/<team>/...`), else None (the default team)."""
    parts = folder.strip("/").split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "teams" else None
