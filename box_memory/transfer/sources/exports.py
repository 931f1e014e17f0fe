"""Export files, box-memory's and mem0's: bounded reading up to 1 GiB, zips, JSON or JSON Lines.

An export holds a whole store, so it may be up to 1 GiB (any other source file up to 8 MiB); a
markdown-zip export is read through its `export.jsonl`, in the zip or in the folder it was
unpacked into.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import orjson

from box_memory.errors import InvalidInput
from box_memory.format.safeio import UnreadableFile, guarded, open_regular
from box_memory.transfer.sources.common import SourceItem, outside, read_text

EXPORT_MEMBER = "export.jsonl"  # the records inside a `box-memory export --format markdown-zip`
# An export (box-memory's, or mem0's get_all) holds a whole store: far past the 8 MiB one note or
# CLAUDE.md may have.
EXPORT_CAP = 1024 * 1024 * 1024


def export_text(path: Path) -> str:
    """The JSON Lines of a box-memory export: the file itself, or `export.jsonl` inside a
    markdown-zip export (the zip file, or the folder it was unpacked into)."""
    if path.is_dir():
        member = path / EXPORT_MEMBER
        if outside(member, path) is not None:
            raise InvalidInput(f"{EXPORT_MEMBER} is a symbolic link out of the source; not followed")
        path = member
    raw = guarded(path, str(path), _read_text_bytes, path, EXPORT_CAP)  # timed in Box Drive
    if path.suffix.lower() != ".zip":
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidInput("not UTF-8 text") from None
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            info = zf.getinfo(EXPORT_MEMBER)
            if info.file_size > EXPORT_CAP:
                raise InvalidInput(f"{EXPORT_MEMBER} in the zip is larger than the 1 GiB import limit")
            data = zf.read(info)
    except KeyError:
        raise InvalidInput(f"not a box-memory export zip (no {EXPORT_MEMBER} in it)") from None
    except zipfile.BadZipFile as e:
        raise InvalidInput(f"not a readable zip ({e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{EXPORT_MEMBER} in the zip is not UTF-8 text") from None


def _read_text_bytes(path: Path, cap: int) -> bytes:
    """A regular file of at most `cap` bytes (never a FIFO or device), whole."""
    try:
        fd, size = open_regular(path)
    except UnreadableFile as e:
        raise InvalidInput(str(e)) from None
    with os.fdopen(fd, "rb") as fh:
        if size > cap:
            raise InvalidInput(f"larger than the {cap // (1024 * 1024)} MiB import limit")
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise InvalidInput(f"larger than the {cap // (1024 * 1024)} MiB import limit")
    return data


def json_items(path: Path, text: str | None = None) -> tuple[list[Any], list[SourceItem]]:
    """Items of a JSON or JSON Lines file; undecodable lines come back as errors."""
    if text is None:
        _, text = read_text(path)
    stripped = text.lstrip()
    errors: list[SourceItem] = []
    if stripped.startswith(("[", "{")):
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            if not stripped.startswith("{") or "\n" not in stripped.strip():
                raise InvalidInput(f"invalid JSON ({e.args[0]})") from None
            data = None
        if isinstance(data, list):
            return data, errors
        if isinstance(data, dict):
            for key in ("results", "memories", "data", "items"):
                if isinstance(data.get(key), list):
                    return data[key], errors
            return [data], errors
    items: list[Any] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(orjson.loads(line))
        except orjson.JSONDecodeError as e:
            errors.append(SourceItem(f"{path}:{n}", error=f"invalid JSON on line {n} ({e.args[0]})"))
    if not items and not errors:
        raise InvalidInput("no JSON items found")
    return items, errors
