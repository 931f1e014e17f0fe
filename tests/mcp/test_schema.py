"""The one alias table, checked against every catalogue snapshot the emulator serves."""

from __future__ import annotations

from typing import Any

import pytest

from box_memory.box.schema import shape_args
from box_memory.emulator import catalogue
from box_memory.errors import Incompatible
from box_memory.store.cloud import TEMPLATE_FIELDS

# Every call box-memory makes, in its canonical vocabulary (spec box-mcp.md section 2).
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("who_am_i", {}),
    ("list_folder_content_by_folder_id", {"folder_id": "1", "fields": ["sha1"], "limit": 100, "offset": 100}),
    ("list_folder_content_by_folder_id", {"folder_id": "1", "limit": 100, "marker": "m"}),
    ("get_file_details", {"file_id": "2", "fields": ["sha1"]}),
    ("get_file_content", {"file_id": "2"}),
    ("get_download_url", {"file_id": "2"}),
    ("upload_file", {"file_name": "a.md", "file_content": "x", "parent_folder_id": "1"}),
    ("upload_file_version", {"file_id": "2", "file_content": "x"}),
    ("create_folder", {"name": "memories", "parent_folder_id": "1"}),
    ("move_file", {"file_id": "2", "parent_folder_id": "1", "name": "b.md"}),
    ("move_folder", {"folder_id": "3", "parent_folder_id": "1", "name": "legal"}),
    ("ai_qa_single_file", {"file_id": "2", "question": "why?"}),
    ("ai_qa_multi_file", {"file_ids": ["2", "4"], "question": "why?"}),
    ("list_metadata_templates", {"scope": "enterprise"}),
    (
        "create_metadata_template",
        {
            "display_name": "Box Memory",
            "scope": "enterprise",
            "template_key": "boxMemory",
            "fields": TEMPLATE_FIELDS,
        },
    ),
    (
        "set_file_metadata",
        {
            "file_id": "2",
            "scope": "enterprise",
            "template_key": "boxMemory",
            "metadata_fields": {"kind": "fact"},
        },
    ),
]


def _check(schema: dict[str, Any], sent: dict[str, Any]) -> None:
    props = schema.get("properties") or {}
    assert set(sent) <= set(props), (sorted(sent), sorted(props))
    assert set(schema.get("required") or []) <= set(sent)


@pytest.mark.parametrize("name", catalogue.NAMES)
def test_every_call_fits_every_snapshot(name: str) -> None:
    tools = catalogue.load(name)
    checked = 0
    for tool, args in CALLS:
        if tool not in tools:
            continue  # absent from this catalogue: mcp-check reports it, callers fall back
        schema = tools[tool]["inputSchema"]
        sent = shape_args(tool, args, schema)
        _check(schema, sent)
        catalogue.adapt(tools[tool], sent)  # the emulator's own schema check accepts it too
        checked += 1
    assert checked >= 12


def test_older_names_are_reached_through_aliases() -> None:
    tools = catalogue.load("older")
    qa = shape_args(
        "ai_qa_single_file", {"file_id": "2", "question": "q"}, tools["ai_qa_single_file"]["inputSchema"]
    )
    assert qa == {"file_id": "2", "prompt": "q"}
    mk = shape_args(
        "create_folder", {"name": "n", "parent_folder_id": "1"}, tools["create_folder"]["inputSchema"]
    )
    assert mk == {"name": "n", "parent_id": "1"}
    page = shape_args(
        "list_folder_content_by_folder_id",
        {"folder_id": "1", "limit": 3, "offset": 3},
        tools["list_folder_content_by_folder_id"]["inputSchema"],
    )
    assert page == {"folder_id": "1", "limit": 3}  # an optional argument it does not take: dropped


def test_newer_names_and_nested_template_fields() -> None:
    tools = catalogue.load("newer")
    mv = shape_args(
        "move_file", {"file_id": "2", "parent_folder_id": "1", "name": "b"}, tools["move_file"]["inputSchema"]
    )
    assert mv == {"file_id": "2", "destination_parent_folder_id": "1", "name": "b"}
    tpl = shape_args(
        "create_metadata_template",
        {"display_name": "Box Memory", "scope": "enterprise", "fields": TEMPLATE_FIELDS},
        tools["create_metadata_template"]["inputSchema"],
    )
    assert all("display_name" in f and "displayName" not in f for f in tpl["fields"])
    older = catalogue.load("older")["create_metadata_template"]["inputSchema"]
    kept = shape_args(
        "create_metadata_template", {"display_name": "B", "scope": "e", "fields": TEMPLATE_FIELDS}, older
    )
    assert all("displayName" in f for f in kept["fields"])


def test_a_required_argument_nothing_maps_to_is_incompatible() -> None:
    schema = {
        "type": "object",
        "properties": {"file_name": {}, "file_content": {}, "parent_folder_id": {}, "folder_path": {}},
        "required": ["file_name", "folder_path"],
    }
    with pytest.raises(Incompatible) as err:
        shape_args("upload_file", {"file_name": "a", "file_content": "x", "parent_folder_id": "1"}, schema)
    assert "upload_file" in str(err.value) and "'folder_path'" in str(err.value)
    assert err.value.exit_code == 4


def test_an_essential_argument_is_never_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {"file_name": {}, "file_content": {}},
        "required": ["file_name"],
    }
    with pytest.raises(Incompatible) as err:
        shape_args("upload_file", {"file_name": "a", "file_content": "x", "parent_folder_id": "1"}, schema)
    assert "'parent_folder_id'" in str(err.value)


def test_no_schema_sends_the_arguments_unchanged() -> None:
    args = {"folder_id": "1", "offset": 3}
    assert shape_args("list_folder_content_by_folder_id", args, None) == args
    assert shape_args("list_folder_content_by_folder_id", args, {"type": "object"}) == args
