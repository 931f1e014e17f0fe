"""The emulated Box metadata tools: templates (list, create) and instances on files.

Guess about the real service: set_file_metadata creates or replaces the instance (no 409 when one
exists).
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

from box_memory.emulator.boxapi import BoxApiError, bad_request
from box_memory.emulator.tool_args import (
    DEFAULT_PAGE,
    ToolContext,
    box_id,
    list_arg,
    object_arg,
    required,
    scope_arg,
)

# -- metadata ----------------------------------------------------------------------------------

GLOBAL_PROPERTIES = {
    "type": "metadata_template",
    "id": "4f4b8dca-0000-4000-8000-000000000000",
    "templateKey": "properties",
    "scope": "global",
    "displayName": "Properties",
    "hidden": False,
    "copyInstanceOnItemCopy": True,
    "fields": [],
}
FIELD_TYPES = ("string", "float", "date", "enum", "multiSelect")


def list_metadata_templates(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    scope = scope_arg(required(args, "scope"))
    entries = [GLOBAL_PROPERTIES] if scope == "global" else ctx.fs.templates(scope)
    return {"entries": entries, "limit": DEFAULT_PAGE, "next_marker": None, "prev_marker": None}


def _key_from(display: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", display)
    if not words:
        raise bad_request("Cannot derive a template key", "invalid_parameter")
    return words[0].lower() + "".join(w.capitalize() for w in words[1:])


def create_metadata_template(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    display = str(required(args, "display_name"))
    scope = scope_arg(required(args, "scope"))
    if scope == "global":
        raise BoxApiError(403, "forbidden", "Templates can only be created in the enterprise scope")
    key = str(args.get("template_key") or _key_from(display))
    if ctx.fs.template(scope, key) is not None:
        raise BoxApiError(409, "conflict", f"A template with the key {key} already exists")
    fields = []
    for raw in list_arg(args.get("fields")):
        if not isinstance(raw, dict):
            raise bad_request("Every template field must be an object", "invalid_parameter")
        kind = raw.get("type", "string")
        if kind not in FIELD_TYPES:
            raise bad_request(f"Invalid field type: {kind!r}", "invalid_parameter")
        field_display = str(raw.get("displayName") or raw.get("display_name") or raw.get("key") or "")
        field_key = str(raw.get("key") or _key_from(field_display))
        out: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "type": kind,
            "key": field_key,
            "displayName": field_display or field_key,
            "hidden": bool(raw.get("hidden")),
        }
        if raw.get("description"):
            out["description"] = str(raw["description"])
        if kind in ("enum", "multiSelect"):
            out["options"] = [
                {"id": str(uuid.uuid4()), "key": str(o.get("key") if isinstance(o, dict) else o)}
                for o in raw.get("options") or []
            ]
        fields.append(out)
    template = {
        "type": "metadata_template",
        "id": str(uuid.uuid4()),
        "templateKey": key,
        "scope": scope,
        "displayName": display,
        "hidden": False,
        "copyInstanceOnItemCopy": False,
        "fields": fields,
    }
    ctx.fs.add_template(scope, key, template)
    return template


def set_file_metadata(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(box_id(required(args, "file_id")), "file")
    scope = scope_arg(required(args, "scope"))
    key = str(required(args, "template_key"))
    values = object_arg(args, "metadata_fields")
    if scope == "global":
        if key != "properties":
            raise BoxApiError(404, "not_found", "Template not found")
    else:
        template = fs.template(scope, key)
        if template is None:
            raise BoxApiError(404, "not_found", "Template not found")
        known = {f["key"] for f in template["fields"]}
        unknown = sorted(set(values) - known)
        if unknown:
            raise bad_request(f"Unknown metadata field(s): {', '.join(unknown)}", "invalid_parameter")
    previous = item.metadata.get(f"{scope}.{key}") or {}
    instance = {
        "$id": previous.get("$id") or str(uuid.uuid4()),
        "$version": int(previous.get("$version", -1)) + 1,
        "$type": f"{key}-{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:12]}",
        "$parent": f"file_{item.id}",
        "$typeVersion": 0,
        "$template": key,
        "$scope": scope,
        "$canEdit": True,
        **values,
    }
    fs.set_metadata(item, f"{scope}.{key}", instance)
    return instance
