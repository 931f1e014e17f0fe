"""Shape a tool call's arguments by the server's own `inputSchema` (from `tools/list`).

Box's hosted catalogue has changed names over time (`prompt` -> `question` for Box AI Q&A,
`parent_id` / `destination_parent_folder_id` for a folder's parent, `displayName` /
`display_name` in template fields; see CONNECTORS.md for sources). box-memory writes its calls in
one canonical vocabulary (docs/spec/box-mcp.md section 2) and maps each argument here:
- an argument the schema names is sent as is;
- else the first name of its alias group that the schema names;
- else an optional argument is dropped rather than sent (servers may reject unknown arguments),
  but an argument box-memory cannot do without (`ESSENTIAL`) or a field the schema requires that
  nothing maps to is an `Incompatible` error (exit 4) naming the tool and the argument.
Arrays of objects (template fields) are mapped key by key the same way when the schema describes
their items. A tool without a usable schema gets the arguments unchanged. Pure code, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from box_memory.errors import Incompatible

__all__ = ["ALIASES", "ESSENTIAL", "shape_args"]

ALIASES: tuple[tuple[str, ...], ...] = (
    ("question", "prompt"),  # Box AI Q&A: today's catalogue / the earlier one
    ("parent_folder_id", "parent_id", "destination_parent_folder_id", "destination_folder_id"),
    ("display_name", "displayName"),  # create_metadata_template, and inside its `fields`
    ("template_key", "templateKey"),
    ("file_name", "filename"),
    ("file_content", "content"),
    ("file_ids", "items_ids"),
    ("metadata_fields", "metadata"),
    ("mdfilters", "metadata_filters"),
)
_GROUP = {name: group for group in ALIASES for name in group}

# Arguments box-memory cannot do without when it sends them: dropping one would change what the
# call does (upload into the wrong folder, an unfiltered search, a move that does not rename).
ESSENTIAL: dict[str, frozenset[str]] = {
    name: frozenset(args)
    for name, args in {
        "list_folder_content_by_folder_id": ("folder_id",),
        "get_folder_details": ("folder_id",),
        "get_file_details": ("file_id",),
        "get_file_content": ("file_id",),
        "get_download_url": ("file_id",),
        "search_files_keyword": ("query", "ancestor_folder_id", "mdfilters", "file_extensions"),
        "ai_qa_single_file": ("file_id", "question"),
        "ai_qa_multi_file": ("file_ids", "question"),
        "ai_qa_hub": ("hub_id", "question"),
        "ai_extract_structured_from_fields": ("file_ids", "fields"),
        "ai_extract_structured_from_fields_enhanced": ("file_ids", "fields"),
        "list_metadata_templates": ("scope",),
        "upload_file": ("file_name", "file_content", "parent_folder_id"),
        "upload_file_version": ("file_id", "file_content"),
        "create_folder": ("name", "parent_folder_id"),
        "move_file": ("file_id", "parent_folder_id", "name"),
        "move_folder": ("folder_id", "parent_folder_id", "name"),
        "set_file_metadata": ("file_id", "scope", "template_key", "metadata_fields"),
        "create_metadata_template": ("display_name", "scope", "template_key", "fields"),
        "update_file_properties": ("file_id",),
    }.items()
}


def _props(schema: Any) -> dict[str, Any] | None:
    if not isinstance(schema, Mapping):
        return None
    props = schema.get("properties")
    return dict(props) if isinstance(props, Mapping) and props else None


def _target(name: str, props: Mapping[str, Any]) -> str | None:
    if name in props:
        return name
    return next((alias for alias in _GROUP.get(name, ()) if alias in props), None)


def _coerce(value: Any, schema: Any) -> Any:
    """Small, lossless type fixes the schema asks for (an id as a string, one item as a list)."""
    if not isinstance(schema, Mapping):
        return value
    kind = schema.get("type")
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    if kind == "array" and isinstance(value, str | int):
        return [value]
    if kind == "array" and isinstance(value, list):
        items = _props(schema.get("items"))
        if items is not None:
            return [_shape_object(v, items) if isinstance(v, Mapping) else v for v in value]
    return value


def _shape_object(value: Mapping[str, Any], props: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        target = _target(str(key), props)
        if target is not None:
            out.setdefault(target, _coerce(item, props[target]))
    return out


def shape_args(tool: str, args: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """`args` (canonical names) as the server's schema for `tool` names them."""
    props = _props(schema)
    if props is None:
        return dict(args)
    out: dict[str, Any] = {}
    lost: list[str] = []
    for name, value in args.items():
        target = _target(name, props)
        if target is None:
            if name in ESSENTIAL.get(tool, ()):
                lost.append(name)
            continue  # an optional argument this server does not take: not sent
        out[target] = _coerce(value, props[target])
    if lost:
        raise Incompatible(
            f"Box tool {tool} takes no argument {lost[0]!r} (nor an alias of it) - box-memory needs it; "
            "the server's catalogue differs from what box-memory supports "
            "(run `box-memory mcp-check --deep`)"
        )
    required = schema.get("required") if isinstance(schema, Mapping) else None
    for name in required if isinstance(required, list) else ():
        if name not in out:
            raise Incompatible(
                f"Box tool {tool} requires argument {name!r}, which box-memory does not send; "
                "the server's catalogue differs from what box-memory supports "
                "(run `box-memory mcp-check --deep`)"
            )
    return out
