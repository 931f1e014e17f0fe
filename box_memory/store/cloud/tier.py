"""Box tier detection and the `boxMemory` metadata template (its fields, and the instance a
memory file gets), over an open MCP session: used by provisioning and by the store when Box
signals a lower tier."""

from __future__ import annotations

import contextlib
from typing import Any

from box_memory.box.payload import listing
from box_memory.errors import BoxMemoryError
from box_memory.format.model import parse_time

__all__ = [
    "TEMPLATE_FIELDS",
    "TEMPLATE_KEY",
    "TEMPLATE_SCOPE",
    "detect_tier",
    "ensure_template",
    "metadata_fields",
]

TEMPLATE_KEY = "boxMemory"
TEMPLATE_SCOPE = "enterprise"
MIB = 1024 * 1024

TEMPLATE_FIELDS: list[dict[str, Any]] = [
    {"type": "string", "key": "memoryId", "displayName": "Memory ID"},
    {"type": "string", "key": "title", "displayName": "Title"},
    {"type": "string", "key": "slug", "displayName": "Slug"},
    {"type": "string", "key": "kind", "displayName": "Kind"},
    {"type": "string", "key": "status", "displayName": "Status"},
    {"type": "string", "key": "team", "displayName": "Team"},
    {"type": "string", "key": "tags", "displayName": "Tags"},
    {"type": "date", "key": "updatedAt", "displayName": "Updated at"},
]


def detect_tier(box: Any) -> tuple[str, dict[str, Any], dict[str, Any] | None]:
    """(tier, capabilities, the boxMemory template if it exists) from who_am_i and the catalogue.

    Heuristic (Box does not report the plan): no enterprise -> personal; an enterprise whose
    metadata templates can be listed -> enterprise (enterprise_plus when the Box AI tools are
    offered too); otherwise business.
    """
    me: dict[str, Any] = {}
    with contextlib.suppress(BoxMemoryError):
        got = box.call("who_am_i", {})
        me = got if isinstance(got, dict) else {}
    enterprise = me.get("enterprise")
    ai_tools = any(box.has_tool(t) for t in ("ai_qa_single_file", "ai_qa_multi_file"))
    templates_ok = False
    template: dict[str, Any] | None = None
    # who_am_i may answer Box's mini user (no `enterprise`): then the catalogue decides, and
    # listing the enterprise's templates (read-only, harmless) is the probe - it only succeeds
    # for a user in an enterprise whose plan has custom metadata templates.
    if (enterprise or "enterprise" not in me) and box.has_tool("list_metadata_templates"):
        try:
            payload = box.call("list_metadata_templates", {"scope": TEMPLATE_SCOPE})
            templates_ok = True
            for t in listing(payload, tool="list_metadata_templates").entries:
                if t.get("templateKey") == TEMPLATE_KEY or t.get("template_key") == TEMPLATE_KEY:
                    template = t
        except BoxMemoryError:
            templates_ok = False
    max_upload = me.get("max_upload_size")
    caps: dict[str, Any] = {
        "custom_metadata_templates": templates_ok,
        "template_create_permission": templates_ok and box.has_tool("create_metadata_template"),
        "body_search": box.has_tool("search_files_keyword"),
        "max_file_size_mb": int(max_upload) // MIB if isinstance(max_upload, int | float) else None,
        "box_ai_tools_available": ai_tools,
        "ai_units_available": False,
        "box_hubs": False,
        "compliance": [],
    }
    if templates_ok:
        tier = "enterprise_plus" if ai_tools else "enterprise"
    elif enterprise:
        tier = "business"
    else:
        tier = "personal"  # no enterprise said, and no enterprise templates to list
    return tier, caps, template


def ensure_template(box: Any, existing: dict[str, Any] | None) -> str:
    if existing is None:
        box.call(
            "create_metadata_template",
            {
                "display_name": "Box Memory",
                "scope": TEMPLATE_SCOPE,
                "template_key": TEMPLATE_KEY,
                "fields": TEMPLATE_FIELDS,
            },
        )
    return TEMPLATE_KEY


def metadata_fields(data: bytes) -> dict[str, Any] | None:
    """The `boxMemory` instance for a memory file's bytes (None when it is not a memory)."""
    from box_memory.format import frontmatter

    try:
        meta, _body = frontmatter.parse(data.decode("utf-8"), "memory")
    except (BoxMemoryError, UnicodeDecodeError):
        return None
    if not isinstance(meta, dict) or not meta.get("id") or not meta.get("kind"):
        return None
    out: dict[str, Any] = {
        "memoryId": str(meta["id"]),
        "title": str(meta.get("title") or ""),
        "slug": str(meta.get("slug") or ""),
        "kind": str(meta["kind"]),
        "status": str(meta.get("status") or ""),
        "team": str(meta.get("team") or ""),
        "tags": ",".join(str(t) for t in meta.get("tags") or []),
    }
    t = parse_time(meta.get("updated_at"))
    if t is not None:
        out["updatedAt"] = t.strftime("%Y-%m-%dT%H:%M:%SZ")
    return out
