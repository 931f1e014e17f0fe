"""Box items as the cloud store sees them: paths split, sha1s and times read, entries built,
write answers and file text unwrapped, the config's folder keys."""

from __future__ import annotations

import hashlib
from typing import Any

from box_memory.box.payload import text_content
from box_memory.errors import BoxMemoryError
from box_memory.format.model import parse_time
from box_memory.store.base import Entry, clean_path

__all__ = [
    "as_object",
    "box_time",
    "envelope_text",
    "is_folder",
    "item_sha1",
    "logical_keys",
    "sha1_of",
    "split_path",
    "to_entry",
]

SCOPE_FOLDERS = ("memories", "files", "companions")


def split_path(path: str) -> tuple[str, str]:
    p = clean_path(path)
    if "/" in p:
        parent, name = p.rsplit("/", 1)
        return parent, name
    return "", p


def sha1_of(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def box_time(value: Any) -> float:
    """Epoch seconds of a Box timestamp, rounded UP when Box gave whole seconds.

    Box renders times at second precision (truncated); rounding up keeps every comparison
    "changed after X" conservative (a file never looks older than it is).
    """
    t = parse_time(value)
    if t is None:
        return 0.0
    ts = t.timestamp()
    return ts + 0.999 if t.microsecond == 0 else ts


def item_sha1(item: dict[str, Any]) -> str | None:
    sha = item.get("sha1")
    if not sha and isinstance(item.get("file_version"), dict):
        sha = item["file_version"].get("sha1")
    return str(sha).lower() if sha else None


def is_folder(item: dict[str, Any]) -> bool:
    return item.get("type") == "folder"


def to_entry(item: dict[str, Any]) -> Entry:
    size = item.get("size")
    return Entry(
        name=str(item.get("name") or ""),
        is_dir=is_folder(item),
        size=int(size) if isinstance(size, int | float) and not isinstance(size, bool) else 0,
        modified=box_time(item.get("modified_at") or item.get("content_modified_at")),
        file_id=str(item["id"]) if item.get("id") is not None else None,
        etag=str(item["etag"]) if item.get("etag") is not None else None,
        sha1=item_sha1(item),
    )


def as_object(payload: Any) -> dict[str, Any] | None:
    """The Box object in a write tool's answer (a file/folder object, or the REST upload wrapper)."""
    if isinstance(payload, dict):
        entries = payload.get("entries")
        if "id" not in payload and isinstance(entries, list) and entries and isinstance(entries[0], dict):
            return entries[0]
        return payload if payload.get("id") is not None else None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        return payload[0]
    return None


def envelope_text(result: Any) -> str | None:
    """The file text in an unwrapped get_file_content answer, or None when it is not plainly one."""
    if isinstance(result, BaseException):
        return None
    if isinstance(result, str):
        return result
    try:
        return text_content("get_file_content", result)
    except BoxMemoryError:
        return None


def logical_keys(teams: list[str]) -> dict[str, str]:
    """{folder path: folder_ids key} for the standard layout of these teams."""
    keys = {"memories": "memories", "files": "files", "companions": "companions", "teams": "teams"}
    for t in teams:
        keys[f"teams/{t}"] = f"team_{t}_root"
        for part in SCOPE_FOLDERS:
            keys[f"teams/{t}/{part}"] = f"team_{t}_{part}"
    return keys
