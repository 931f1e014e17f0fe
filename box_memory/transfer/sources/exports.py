"""Export files, box-memory's and mem0's: bounded reading up to 1 GiB, zips, JSON or JSON Lines.

An export holds a whole store, so it may be up to 1 GiB (any other source file up to 8 MiB); a
markdown-zip export is read through its `export.jsonl`, in the zip or in the folder it was
unpacked into.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from box_memory.errors import InvalidInput
from box_memory.format.safeio import UnreadableFile, guarded, open_regular
from box_memory.transfer.sources.common import SourceItem, outside, reason

EXPORT_MEMBER = "export.jsonl"  # the records inside a `box-memory export --format markdown-zip`
# An export (box-memory's, or mem0's get_all) holds a whole store: far past the 8 MiB one note or
# CLAUDE.md may have.
EXPORT_CAP = 1024 * 1024 * 1024


def read_export(path: Path, item_of: Callable[[str, Any], SourceItem]) -> Iterator[SourceItem]:
    """Each item of an export file as `item_of(ref, item)`, `ref` naming the file and the item's
    place in it; a file that cannot be read, or a line that is no JSON, comes back as an error."""
    try:
        items, errors = _json_items(path, _export_text(path))
    except (OSError, InvalidInput) as e:
        yield SourceItem(str(path), error=reason(e))
        return
    yield from errors
    for n, item in enumerate(items, start=1):
        yield item_of(f"{path}#{n}", item)


def _export_text(path: Path) -> str:
    """The JSON Lines of an export: the file itself, or `export.jsonl` inside a markdown-zip
    export (the zip file, or the folder it was unpacked into)."""
    if path.is_dir():
        member = path / EXPORT_MEMBER
        if outside(member, path) is not None:
            raise InvalidInput(f"{EXPORT_MEMBER} is a symbolic link out of the source; not followed")
        path = member
    raw = guarded(path, str(path), _read_capped, path, EXPORT_CAP)  # timed in Box Drive
    if path.suffix.lower() == ".zip":
        return _zip_member_text(raw)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("not UTF-8 text") from None


def _zip_member_text(raw: bytes) -> str:
    """The `export.jsonl` of a markdown-zip export, held whole in `raw`."""
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


def _read_capped(path: Path, cap: int) -> bytes:
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


def _json_items(path: Path, text: str) -> tuple[list[Any], list[SourceItem]]:
    """Items of a JSON or JSON Lines text; undecodable lines come back as errors."""
    whole = _whole_json(text)
    if whole is not None:
        return whole, []
    return _json_lines(path, text)


def _whole_json(text: str) -> list[Any] | None:
    """The items of a text that is one JSON document (a list, or an object holding the list, or
    one object alone), else None: JSON Lines. A broken document that is no JSON Lines raises."""
    stripped = text.lstrip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        if not stripped.startswith("{") or "\n" not in stripped.strip():
            raise InvalidInput(f"invalid JSON ({e.args[0]})") from None
        return None
    if isinstance(data, dict):
        for key in ("results", "memories", "data", "items"):
            if isinstance(data.get(key), list):
                return data[key]
        return [data]
    return data  # it began with `[`: a list


def _json_lines(path: Path, text: str) -> tuple[list[Any], list[SourceItem]]:
    """The items of a JSON Lines text, one a line; a line that is no JSON comes back as an error."""
    items: list[Any] = []
    errors: list[SourceItem] = []
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
