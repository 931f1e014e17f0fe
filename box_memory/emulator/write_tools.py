"""The emulated Box MCP write tools: uploads, new versions, folders, moves, file properties.

Guess about the real service: upload_file / upload_file_version / move_file / update_file_properties
answer the standard file object (not the REST `{"total_count": 1, "entries": [...]}` upload
wrapper).
"""

from __future__ import annotations

from typing import Any

from box_memory.emulator.boxapi import ROOT_ID, bad_request
from box_memory.emulator.tool_args import (
    ToolContext,
    box_id,
    conflict_array,
    conflict_object,
    list_arg,
    required,
    text_arg,
)

# -- write tools -------------------------------------------------------------------------------


# Text types the hosted upload_file documents (CONNECTORS.md: third-party copy of the catalogue).
UPLOAD_TEXT_TYPES = frozenset(
    ["txt", "md", "boxnote", "html", "svg", "xml", "csv", "json", "js", "ts", "py", "sh"]
)


def upload_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    name = str(required(args, "file_name"))
    data = text_arg(args, "file_content")
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ctx.upload_text_only and ext not in UPLOAD_TEXT_TYPES:
        # The `upload_text_only` switch: the documented text-types rule (error wording assumed).
        raise bad_request(
            f"Unsupported file type '.{ext}': upload_file accepts text files only "
            f"({', '.join(sorted(UPLOAD_TEXT_TYPES))})",
            "invalid_file_type",
        )
    folder = fs.get(box_id(args.get("parent_folder_id") or ROOT_ID), "folder")
    return fs.full(fs.upload(folder, name, data, conflict_object(fs)))


def upload_file_version(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(box_id(required(args, "file_id")), "file")
    return fs.full(fs.new_version(item, text_arg(args, "file_content")))


def create_folder(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    name = str(required(args, "name"))
    parent = fs.get(box_id(args.get("parent_folder_id") or ROOT_ID), "folder")
    return fs.full(fs.create_folder(parent, name, conflict_array(fs)))


def move_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(box_id(required(args, "file_id")), "file")
    parent = fs.get(box_id(required(args, "parent_folder_id")), "folder")
    name = args.get("name") or item.name
    return fs.full(fs.move(item, parent, str(name), conflict_object(fs)))


def move_folder(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(box_id(required(args, "folder_id")), "folder")
    parent = fs.get(box_id(required(args, "parent_folder_id")), "folder")
    name = args.get("name") or item.name
    return fs.full(fs.move_folder(item, parent, str(name), conflict_array(fs)))


def update_file_properties(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(box_id(required(args, "file_id")), "file")
    name = args.get("name")
    if name is not None and name != item.name:
        fs.move(item, fs.parent(item), str(name), conflict_object(fs))
    description = args.get("description")
    tags = args.get("tags")
    if description is not None or tags is not None:
        fs.update_properties(
            item,
            description=None if description is None else str(description),
            tags=None if tags is None else [str(t) for t in list_arg(tags)],
        )
    return fs.full(item)
