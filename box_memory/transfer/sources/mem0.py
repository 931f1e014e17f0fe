"""The `mem0` format: a JSON export as mem0's `Memory.get_all()` returns it, one memory per item.

`{"results": [...]}` or a bare list, each item `{id, memory, hash, metadata, created_at,
updated_at, user_id, agent_id, run_id, actor_id, role, categories}` (mem0ai/mem0
`mem0/memory/main.py`, `MemoryItem`); JSON Lines too. Only `agent_id` names the memory's agent;
the session keys and `metadata` are kept in the source entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from box_memory.transfer.sources.common import (
    SourceItem,
    clean_title,
    digest_of,
    first_words,
    iso_utc,
    tag_list,
)
from box_memory.transfer.sources.exports import read_export


def read_mem0(path: Path) -> Iterator[SourceItem]:
    yield from read_export(path, _mem0_item)  # a whole store: the export cap


def _mem0_item(ref: str, item: Any) -> SourceItem:
    """One item of the export as a memory: its text, tags from its categories and metadata, and
    its ids and metadata kept in the source entry."""
    if not isinstance(item, dict):
        return SourceItem(ref, error="item is not a JSON object")
    mem_id = str(item.get("id") or "")
    if mem_id:
        ref = f"mem0:{mem_id}"
    text = _mem0_text(item)
    if text is None:
        return SourceItem(ref, error="item has no text ('memory' is missing or empty)")
    meta: dict[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
    # Only mem0's agent_id names an agent; a user's own memory (user_id only) has none.
    agent = item.get("agent_id")
    tags = [*tag_list(item.get("categories")), *tag_list(meta.get("tags")), *tag_list(meta.get("category"))]
    created = iso_utc(item.get("created_at"))
    return SourceItem(
        ref,
        title=clean_title(first_words(text, 10)) or "mem0 memory",
        content=text,
        kind=None,
        tags=tags,
        agent=str(agent) if agent else None,
        created_at=created,
        updated_at=iso_utc(item.get("updated_at")) or created,
        digest=digest_of(orjson.dumps(item, option=orjson.OPT_SORT_KEYS)),
        extra_source=_mem0_source(item, meta),
    )


def _mem0_text(item: dict[str, Any]) -> str | None:
    """The memory's text (`memory`, else `text` or `data`), stripped; None when it has none."""
    text = item.get("memory")
    if text is None:
        text = item.get("text") or item.get("data")
    if not isinstance(text, str) or not text.strip():
        return None
    return text.strip()


def _mem0_source(item: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    """The source entry's extra keys: mem0's session keys and hash, and the item's metadata."""
    extra: dict[str, Any] = {}
    for key in ("user_id", "agent_id", "run_id", "actor_id", "role", "hash"):
        if item.get(key):
            extra[key] = str(item[key])
    if meta:
        extra["metadata"] = meta  # the caller's own metadata, kept whole (JSON values)
    return extra
