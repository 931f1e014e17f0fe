"""What every emulated Box MCP tool handler shares: its context, its spec, argument parsing.

Each handler takes the arguments dict and returns a JSON-able payload, or raises BoxApiError,
which the server relays as the Box error JSON in an isError result. Transport concerns (shape of
the result, numeric ids, faults, auth) live in the server module, not here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from box_memory.emulator.boxapi import ENTERPRISE_ID, BoxApiError, Item, bad_request
from box_memory.emulator.boxfs import BoxFS

DEFAULT_PAGE = 100


@dataclass
class ToolContext:
    """What a handler may use besides its arguments; the switches are read per call."""

    fs: BoxFS
    paging: str = "marker"
    listing: str = "mini"
    search_lag_s: float = 0.0
    mint_download: Callable[[Item], tuple[str, float]] | None = None
    repeat_marker: bool = False
    total_skew: int = 0
    short_pages: bool = False
    page_cap: int = 0
    ignore_offset: bool = False
    fail_later_pages: bool = False
    content_pending: Callable[[str], bool] | None = None
    content_inexact: bool = False
    user: str = "full"
    upload_text_only: bool = False


Handler = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool


# -- argument helpers --------------------------------------------------------------------------


def required(args: dict[str, Any], key: str) -> Any:
    value = args.get(key)
    if value is None or value == "":
        raise bad_request(f"Input validation error: '{key}' is a required property")
    return value


def box_id(value: Any) -> str:
    return str(value).strip()


def int_arg(args: dict[str, Any], key: str, default: int, lo: int, hi: int | None = None) -> int:
    raw = args.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise bad_request(f"Invalid value for '{key}': {raw!r}", "invalid_parameter") from None
    if value < lo:
        raise bad_request(f"Invalid value for '{key}': {raw!r}", "invalid_parameter")
    return min(value, hi) if hi is not None else value


def list_arg(value: Any) -> list[Any]:
    """Lists may arrive as JSON arrays, JSON-encoded strings or comma separated strings."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return parsed
        return [part.strip() for part in text.split(",") if part.strip()]
    return [value]


def fields_arg(args: dict[str, Any]) -> list[str] | None:
    return [str(f) for f in list_arg(args.get("fields"))] or None


def object_arg(args: dict[str, Any], key: str) -> dict[str, Any]:
    value = required(args, key)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise bad_request(f"Input validation error: '{key}' must be an object") from None
    if not isinstance(value, dict):
        raise bad_request(f"Input validation error: '{key}' must be an object")
    return value


def text_arg(args: dict[str, Any], key: str) -> bytes:
    value = args.get(key)
    if value is None:
        raise bad_request(f"Input validation error: '{key}' is a required property")
    if not isinstance(value, str):
        raise bad_request(f"Input validation error: '{key}' must be a string")
    return value.encode("utf-8")


def scope_arg(raw: Any) -> str:
    """ "enterprise" and "enterprise_<id>" name the same scope; "global" is Box's own."""
    scope = str(raw or "").strip()
    if scope in ("enterprise", f"enterprise_{ENTERPRISE_ID}"):
        return f"enterprise_{ENTERPRISE_ID}"
    if scope == "global":
        return "global"
    raise bad_request(f"Invalid scope: {scope!r}", "invalid_parameter")


def conflict_object(fs: BoxFS) -> Callable[[Item], BoxApiError]:
    return lambda existing: BoxApiError(
        409,
        "item_name_in_use",
        "Item with the same name already exists",
        context_info={"conflicts": fs.mini(existing)},
    )


def conflict_array(fs: BoxFS) -> Callable[[Item], BoxApiError]:
    return lambda existing: BoxApiError(
        409,
        "item_name_in_use",
        "Item with the same name already exists",
        context_info={"conflicts": [fs.mini(existing)]},
    )
