"""The emulated Box MCP tool catalogue: each tool's name, description, input schema and handler.

Names and arguments per spec section 2; the handlers are `read_tools`, `ai_tools`,
`metadata_tools` and `write_tools`'s, run over a BoxFS by `run_tool`.
"""

from __future__ import annotations

from typing import Any

from box_memory.emulator.ai_tools import (
    ai_extract_structured_from_fields,
    ai_qa_hub,
    ai_qa_multi_file,
    ai_qa_single_file,
)
from box_memory.emulator.boxapi import BoxApiError, not_found
from box_memory.emulator.metadata_tools import (
    create_metadata_template,
    list_metadata_templates,
    set_file_metadata,
)
from box_memory.emulator.read_tools import (
    get_download_url,
    get_file_content,
    get_file_details,
    get_folder_details,
    list_folder_content_by_folder_id,
    search_files_keyword,
    search_folders_by_name,
    who_am_i,
)
from box_memory.emulator.tool_args import ToolContext, ToolSpec
from box_memory.emulator.write_tools import (
    create_folder,
    move_file,
    move_folder,
    update_file_properties,
    upload_file,
    upload_file_version,
)

# -- catalogue ---------------------------------------------------------------------------------


def _schema(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_S = {"type": "string"}
_I = {"type": "integer"}
_SL = {"type": "array", "items": {"type": "string"}}
_FIELDS = {"type": "array", "items": {"type": "string"}, "description": "Box fields to return"}


def _d(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "description": text}


TOOLS: list[ToolSpec] = [
    ToolSpec("who_am_i", "Return the authenticated Box user.", _schema([]), who_am_i, True),
    ToolSpec(
        "list_folder_content_by_folder_id",
        "List the items in a Box folder (folders first, then files). Folder '0' is All Files.",
        _schema(
            ["folder_id"],
            folder_id=_d("Box folder id", _S),
            fields=_FIELDS,
            limit=_d("Page size (default 100, max 1000)", _I),
            offset=_I,
            marker=_d("Marker from a previous page", _S),
        ),
        list_folder_content_by_folder_id,
        True,
    ),
    ToolSpec(
        "get_folder_details",
        "Get a Box folder's details.",
        _schema(["folder_id"], folder_id=_S, fields=_FIELDS),
        get_folder_details,
        True,
    ),
    ToolSpec(
        "get_file_details",
        "Get a Box file's details.",
        _schema(["file_id"], file_id=_S, fields=_FIELDS),
        get_file_details,
        True,
    ),
    ToolSpec(
        "get_file_content",
        "Get the text representation of a Box file (source up to 50 MB).",
        _schema(["file_id"], file_id=_S),
        get_file_content,
        True,
    ),
    ToolSpec(
        "search_files_keyword",
        "Search Box files by keyword in name and content, optionally filtered by metadata.",
        _schema(
            ["query"],
            query=_S,
            ancestor_folder_id=_S,
            file_extensions=_SL,
            fields=_FIELDS,
            limit=_I,
            offset=_I,
            mdfilters={"type": "array", "items": {"type": "object"}},
        ),
        search_files_keyword,
        True,
    ),
    ToolSpec(
        "search_folders_by_name",
        "Search Box folders by name.",
        _schema(["folder_name"], folder_name=_S, ancestor_folder_id=_S, limit=_I),
        search_folders_by_name,
        True,
    ),
    ToolSpec(
        "get_download_url",
        "Get a short-lived URL to download a Box file's bytes.",
        _schema(["file_id"], file_id=_S),
        get_download_url,
        True,
    ),
    ToolSpec(
        "ai_qa_single_file",
        "Ask a question about one file. Emulated: the answer is extracted from the file's own "
        "sentences (deterministic), not generated.",
        _schema(["file_id", "question"], file_id=_S, question=_S),
        ai_qa_single_file,
        True,
    ),
    ToolSpec(
        "ai_qa_multi_file",
        "Ask a question about several files. Emulated: extractive and deterministic.",
        _schema(["file_ids", "question"], file_ids=_SL, question=_S),
        ai_qa_multi_file,
        True,
    ),
    ToolSpec(
        "ai_qa_hub",
        "Ask a question about the content of a Box Hub. Emulated: extractive and deterministic; a "
        "hub made with indexing time refuses until it is ready.",
        _schema(["hub_id", "question"], hub_id=_S, question=_S),
        ai_qa_hub,
        True,
    ),
    ToolSpec(
        "ai_extract_structured_from_fields",
        "Extract structured fields from files. Emulated: reads 'key: value' lines and options "
        "named in the text.",
        _schema(["file_ids", "fields"], file_ids=_SL, fields={"type": "array", "items": {"type": "object"}}),
        ai_extract_structured_from_fields,
        True,
    ),
    ToolSpec(
        "list_metadata_templates",
        "List metadata templates in a scope ('enterprise' or 'global').",
        _schema(["scope"], scope=_S),
        list_metadata_templates,
        True,
    ),
    ToolSpec(
        "upload_file",
        "Upload a new text file. Fails if the name is already used in the folder.",
        _schema(
            ["file_name", "file_content"],
            file_name=_S,
            file_content=_S,
            parent_folder_id=_d("Default '0'", _S),
        ),
        upload_file,
        False,
    ),
    ToolSpec(
        "upload_file_version",
        "Upload a new version of an existing file.",
        _schema(["file_id", "file_content"], file_id=_S, file_content=_S),
        upload_file_version,
        False,
    ),
    ToolSpec(
        "create_folder",
        "Create a folder.",
        _schema(["name"], name=_S, parent_folder_id=_d("Default '0'", _S)),
        create_folder,
        False,
    ),
    ToolSpec(
        "move_file",
        "Move a file to another folder, optionally renaming it.",
        _schema(["file_id", "parent_folder_id"], file_id=_S, parent_folder_id=_S, name=_S),
        move_file,
        False,
    ),
    ToolSpec(
        "move_folder",
        "Move a folder (with its content) to another folder, optionally renaming it.",
        _schema(["folder_id", "parent_folder_id"], folder_id=_S, parent_folder_id=_S, name=_S),
        move_folder,
        False,
    ),
    ToolSpec(
        "update_file_properties",
        "Update a file's name, description or tags.",
        _schema(["file_id"], file_id=_S, name=_S, description=_S, tags=_SL),
        update_file_properties,
        False,
    ),
    ToolSpec(
        "set_file_metadata",
        "Set a metadata instance on a file.",
        _schema(
            ["file_id", "scope", "template_key", "metadata_fields"],
            file_id=_S,
            scope=_S,
            template_key=_S,
            metadata_fields={"type": "object"},
        ),
        set_file_metadata,
        False,
    ),
    ToolSpec(
        "create_metadata_template",
        "Create a metadata template.",
        _schema(
            ["display_name", "scope"],
            display_name=_S,
            scope=_S,
            template_key=_S,
            fields={"type": "array", "items": {"type": "object"}},
        ),
        create_metadata_template,
        False,
    ),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def run_tool(spec: ToolSpec, ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a handler; unexpected file system trouble becomes a Box 500 rather than a crash."""
    try:
        return spec.handler(ctx, arguments)
    except BoxApiError:
        raise
    except FileNotFoundError:
        raise not_found() from None
    except OSError as exc:
        message = f"Internal Server Error ({exc.__class__.__name__})"
        raise BoxApiError(500, "internal_server_error", message) from exc
