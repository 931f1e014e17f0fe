"""Versioned tool catalogues the emulator can serve (the `catalogue` switch).

Each snapshot in `catalogues/` is one plausible shape of Box's hosted catalogue, with its source
cited in the file: `today` (the shape served so far), `older` and `newer`. A snapshot lists each
tool's name, description and inputSchema; `emulatorArgs` renames the snapshot's argument names to
the handler's (tools.py), and `emulatorHandler` points a renamed tool at an existing handler. The
server checks every call against the snapshot's schema the way a schema-validating server would:
unknown arguments (also inside described objects) and missing required ones are refused.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from box_memory.emulator.boxapi import bad_request

HERE = Path(__file__).resolve().parent / "catalogues"
NAMES = ("today", "older", "newer")


def catalogue_path(name: str) -> Path:
    """The snapshot file for a catalogue name, or a path to one (tests write their own)."""
    if name in NAMES:
        return HERE / f"{name}.json"
    path = Path(name)
    if not path.is_file():
        raise ValueError(f"catalogue must be one of {NAMES} or a snapshot file, not {name!r}")
    return path


@lru_cache(maxsize=16)
def _load(path: str, mtime_ns: int) -> dict[str, dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {str(t["name"]): t for t in data["tools"]}


def load(name: str) -> dict[str, dict[str, Any]]:
    """{tool name: snapshot entry} of a catalogue."""
    path = catalogue_path(name)
    return _load(str(path), path.stat().st_mtime_ns)


def _check_object(where: str, value: Any, schema: Any) -> None:
    if not isinstance(schema, dict) or not isinstance(value, dict):
        return
    props = schema.get("properties")
    if not isinstance(props, dict):
        return
    unknown = sorted(set(value) - set(props))
    if unknown and (where == "" or schema.get("additionalProperties", True) is False):
        raise bad_request(
            f"Input validation error: unexpected argument '{unknown[0]}'{' in ' + where if where else ''}"
        )
    for key in schema.get("required") or []:
        if value.get(key) in (None, ""):
            raise bad_request(f"Input validation error: '{key}' is a required property")
    for key, item in value.items():
        sub = props.get(key)
        if isinstance(sub, dict) and sub.get("type") == "array" and isinstance(item, list):
            for element in item:
                _check_object(key, element, sub.get("items"))


def adapt(entry: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments checked against the snapshot schema, renamed for the handler."""
    _check_object("", arguments, entry.get("inputSchema"))
    renames = entry.get("emulatorArgs") or {}
    return {renames.get(k, k): v for k, v in arguments.items()}
