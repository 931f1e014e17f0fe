"""Every result shape of spec box-mcp.md section 4, read by the pure payload helpers."""

from __future__ import annotations

import base64
import json
import subprocess
import sys

import pytest
from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

from box_memory.box.payload import (
    Page,
    box_error,
    conflicts,
    listing,
    normalise_ids,
    text_content,
    unwrap,
    unwrap_text,
)
from box_memory.errors import BoxToolError, ToolDisabled, ToolMissing

FILE = {
    "type": "file",
    "id": 12345,
    "name": "a.md",
    "etag": "1",
    "sha1": "abc",
    "size": 10,
    "file_version": {"type": "file_version", "id": 987, "sha1": "abc"},
    "parent": {"type": "folder", "id": 0, "name": "All Files"},
    "path_collection": {"total_count": 1, "entries": [{"type": "folder", "id": 0, "name": "All Files"}]},
}
FOLDER = {"type": "folder", "id": "77", "name": "notes"}
MARKER_PAGE = {"entries": [FOLDER, FILE], "limit": 100, "next_marker": "m2"}
OFFSET_PAGE = {"entries": [FOLDER, FILE], "total_count": 5, "offset": 0, "limit": 2}


def text_result(*texts: str, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=t) for t in texts], is_error=is_error)


def wire(*texts: str, structured: object = None, is_error: bool = False) -> dict:
    """A CallToolResult as raw camelCase JSON."""
    out: dict = {"content": [{"type": "text", "text": t} for t in texts], "isError": is_error}
    if structured is not None:
        out["structuredContent"] = structured
    return out


def assert_string_ids(entry: dict) -> None:
    assert entry["id"] == "12345"
    assert entry["file_version"]["id"] == "987"
    assert entry["parent"]["id"] == "0"
    assert entry["path_collection"]["entries"][0]["id"] == "0"


# --- where the payload lives ------------------------------------------------------------------


def test_structured_content_sdk_object():
    result = CallToolResult(content=[], structured_content=FILE)
    assert_string_ids(unwrap("get_file_details", result))


def test_structured_content_wire_camel_case():
    assert_string_ids(unwrap("get_file_details", wire(structured=FILE)))


def test_structured_preferred_over_text():
    result = CallToolResult(content=[TextContent(text="summary for humans")], structured_content=FOLDER)
    assert unwrap("get_folder_details", result) == FOLDER


def test_one_text_block_json():
    assert_string_ids(unwrap("get_file_details", text_result(json.dumps(FILE))))


def test_json_split_over_several_text_blocks():
    raw = json.dumps(FILE)
    assert_string_ids(unwrap("get_file_details", text_result(raw[:20], raw[20:])))


def test_prose_block_then_json_block():
    out = unwrap("get_file_details", text_result("Here is the file:", json.dumps(FILE)))
    assert_string_ids(out)


def test_one_block_per_item_becomes_a_list():
    out = unwrap("search_files_keyword", text_result(json.dumps(FILE), json.dumps(FOLDER)))
    assert isinstance(out, list)
    assert [e["type"] for e in out] == ["file", "folder"]


def test_blocks_carrying_pieces_of_one_listing_are_merged():
    out = unwrap(
        "list_folder_content_by_folder_id",
        text_result(json.dumps({"entries": [FOLDER]}), json.dumps({"entries": [FILE], "next_marker": "x"})),
    )
    page = listing(out)
    assert [e["id"] for e in page.entries] == ["77", "12345"]
    assert page.next_marker == "x"


def test_embedded_resource_text():
    result = CallToolResult(
        content=[EmbeddedResource(resource=TextResourceContents(uri="box://file/1", text=json.dumps(FILE)))]
    )
    assert_string_ids(unwrap("get_file_details", result))


def test_embedded_resource_wire_and_blob():
    blob = base64.b64encode(json.dumps(FOLDER).encode()).decode()
    result = {"content": [{"type": "resource", "resource": {"uri": "box://x", "blob": blob}}]}
    assert unwrap("get_folder_details", result) == FOLDER


def test_plain_text_is_returned_as_text():
    assert unwrap("get_file_content", text_result("# Title\nhello")) == "# Title\nhello"


def test_text_content_from_dict_shapes():
    assert text_content("ai_qa_single_file", {"answer": "42", "created_at": "x"}) == "42"
    assert text_content("get_file_content", {"data": {"text": "body"}}) == "body"
    assert text_content("get_file_content", unwrap("t", wire(structured={"result": "body"}))) == "body"
    with pytest.raises(BoxToolError, match="get_file_content"):
        text_content("get_file_content", {"weird": 1})


INDEX_JSON = json.dumps({"version": 1, "folder_id": None, "entries": [{"id": "mem_1", "file_id": "9"}]})


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (text_result("# Title\nhello"), "# Title\nhello"),
        (text_result("part one, ", "part two"), "part one, part two"),
        (text_result(INDEX_JSON), INDEX_JSON),  # a JSON file comes back verbatim, not decoded
        (text_result(INDEX_JSON[:10], INDEX_JSON[10:]), INDEX_JSON),
        (text_result(json.dumps({"type": "file", "id": 9, "content": INDEX_JSON})), INDEX_JSON),
        (text_result(json.dumps({"data": {"text": "body", "truncated": False}})), "body"),
        (wire(structured={"content": INDEX_JSON, "file_id": "9"}), INDEX_JSON),
        (wire(structured={"result": "body"}), "body"),
        (wire("ignored", structured={"response": {"extracted_text": "body"}}), "body"),
        (
            CallToolResult(
                content=[EmbeddedResource(resource=TextResourceContents(uri="box://file/9", text=INDEX_JSON))]
            ),
            INDEX_JSON,
        ),
    ],
)
def test_unwrap_text_shapes(result, expected):
    assert unwrap_text("get_file_content", result) == expected


def test_unwrap_text_errors():
    with pytest.raises(BoxToolError) as info:
        unwrap_text(
            "get_file_content", text_result(json.dumps({"type": "error", "status": 404}), is_error=True)
        )
    assert info.value.status == 404
    with pytest.raises(BoxToolError) as info:
        unwrap_text("get_file_content", text_result(json.dumps({"error": {"status": 500, "code": "x"}})))
    assert info.value.status == 500
    with pytest.raises(BoxToolError, match="get_file_content"):
        unwrap_text("get_file_content", CallToolResult(content=[]))


@pytest.mark.parametrize("wrapper", ["data", "result", "response", "payload"])
def test_nested_wrappers(wrapper):
    out = unwrap("get_file_details", wire(json.dumps({wrapper: FILE})))
    assert_string_ids(out)


def test_doubly_nested_and_json_string_inside_wrapper():
    doubly = {"response": {"data": FILE}, "success": True}
    assert_string_ids(unwrap("get_file_details", wire(structured=doubly)))
    as_string = {"result": json.dumps(FILE)}
    assert_string_ids(unwrap("get_file_details", wire(structured=as_string)))


def test_wrapper_key_inside_a_box_object_is_data():
    meta = {"type": "metadata", "id": 1, "data": {"x": 1}}
    assert unwrap("set_file_metadata", wire(structured=meta))["data"] == {"x": 1}


def test_missing_optional_fields_are_fine():
    bare = {"type": "file", "id": 5, "name": "b.md"}
    page = listing(unwrap("list_folder_content_by_folder_id", wire(json.dumps({"entries": [bare]}))))
    assert page.entries == [{"type": "file", "id": "5", "name": "b.md"}]


# --- listings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["entries", "items", "files", "results"])
def test_listing_entry_keys(key):
    page = listing({key: [FOLDER, FILE], "next_marker": "abc"})
    assert len(page.entries) == 2
    assert_string_ids(page.entries[1])
    assert page.next_marker == "abc"


@pytest.mark.parametrize("key", ["next_marker", "nextMarker", "next_page_marker"])
def test_listing_marker_keys(key):
    page = listing({"entries": [FILE], key: "m"})
    assert page.next_marker == "m"
    assert page.has_more


def test_listing_marker_end_values():
    assert listing({"entries": [], "next_marker": None}).next_marker is None
    assert listing({"entries": [], "next_marker": ""}).next_marker is None
    assert not listing({"entries": [], "next_marker": ""}).has_more
    assert listing({"entries": [], "next_marker": 42}).next_marker == "42"


def test_listing_marker_mode():
    page = listing(unwrap("list_folder_content_by_folder_id", wire(json.dumps(MARKER_PAGE))))
    assert page == Page(entries=page.entries, next_marker="m2", total_count=None, offset=None, limit=100)
    assert [e["type"] for e in page.entries] == ["folder", "file"]


def test_listing_offset_mode():
    page = listing(unwrap("list_folder_content_by_folder_id", wire(structured=OFFSET_PAGE)))
    assert (page.total_count, page.offset, page.limit, page.next_marker) == (5, 0, 2, None)
    assert page.has_more
    last = listing({"entries": [FILE], "total_count": "3", "offset": "2", "limit": "2"})
    assert (last.total_count, last.offset) == (3, 2)
    assert not last.has_more


@pytest.mark.parametrize("wrapper", ["data", "result", "response", "payload"])
def test_listing_nested_under_wrapper_without_unwrap(wrapper):
    page = listing({wrapper: {"items": [FILE], "nextMarker": "n"}})
    assert page.next_marker == "n"
    assert_string_ids(page.entries[0])


def test_listing_paging_fields_on_the_envelope():
    page = listing({"data": {"entries": [FILE]}, "next_marker": "env"})
    assert page.next_marker == "env"
    opened = unwrap("list_folder_content_by_folder_id", wire(structured={"data": [FILE], "total_count": 1}))
    assert listing(opened).total_count == 1


def test_listing_bare_list_and_folders_files_split():
    assert len(listing([FILE, FOLDER]).entries) == 2
    page = listing({"folders": [FOLDER], "files": [FILE]})
    assert [e["type"] for e in page.entries] == ["folder", "file"]


def test_listing_numeric_ids_are_strings():
    page = listing(unwrap("list_folder_content_by_folder_id", wire(structured=MARKER_PAGE)))
    assert all(isinstance(e["id"], str) for e in page.entries)
    assert_string_ids(page.entries[1])


@pytest.mark.parametrize(
    "payload",
    [{"folder": {"id": 1}}, {"entries": [1, 2]}, "not json", 17, None, {"entries": {"oops": 1}}],
)
def test_listing_unknown_shape_names_the_tool(payload):
    with pytest.raises(BoxToolError, match="list_folder_content_by_folder_id"):
        listing(payload)


# --- errors -----------------------------------------------------------------------------------

CONFLICT_FILE = {
    "type": "error",
    "status": 409,
    "code": "item_name_in_use",
    "message": "Item with the same name already exists",
    "context_info": {"conflicts": {"type": "file", "id": 55, "name": "a.md", "etag": "0"}},
    "request_id": "r1",
}
CONFLICT_FOLDER = {
    **CONFLICT_FILE,
    "context_info": {"conflicts": [{"type": "folder", "id": "66", "name": "x"}]},
}


def test_box_error_parses_409_with_object_conflicts():
    status, code, body = box_error(json.dumps(CONFLICT_FILE))
    assert (status, code) == (409, "item_name_in_use")
    assert conflicts(body) == [{"type": "file", "id": "55", "name": "a.md", "etag": "0"}]


def test_box_error_parses_409_with_array_conflicts():
    status, code, body = box_error(json.dumps(CONFLICT_FOLDER))
    assert (status, code) == (409, "item_name_in_use")
    assert conflicts(body)[0]["id"] == "66"


def test_box_error_inside_prose_and_nested():
    status, code, _ = box_error("Box API error: " + json.dumps(CONFLICT_FILE) + " (upload)")
    assert (status, code) == (409, "item_name_in_use")
    status, code, body = box_error(json.dumps({"error": {"status": 429, "code": "rate_limit_exceeded"}}))
    assert (status, code) == (429, "rate_limit_exceeded")
    assert body["code"] == "rate_limit_exceeded"


def test_box_error_prose_only():
    assert box_error("HTTP 503 Service Unavailable")[0] == 503
    assert box_error("request failed with status code: 500")[0] == 500
    status, code, body = box_error("something odd happened")
    assert (status, code, body) == (None, None, "something odd happened")
    assert conflicts(body) == []


def test_is_error_result_raises_box_tool_error_with_fields():
    with pytest.raises(BoxToolError) as info:
        unwrap("upload_file", text_result(json.dumps(CONFLICT_FILE), is_error=True))
    err = info.value
    assert (err.status, err.box_code) == (409, "item_name_in_use")
    assert conflicts(err.body)[0]["id"] == "55"
    assert "upload_file" in str(err)
    assert "\n" not in str(err)


def test_is_error_wire_shape():
    with pytest.raises(BoxToolError) as info:
        unwrap("create_folder", wire(json.dumps(CONFLICT_FOLDER), is_error=True))
    assert info.value.status == 409


def test_error_object_instead_of_is_error():
    with pytest.raises(BoxToolError) as info:
        unwrap("get_file_details", wire(json.dumps({"error": {"status": 404, "code": "not_found"}})))
    assert (info.value.status, info.value.box_code) == (404, "not_found")
    with pytest.raises(BoxToolError, match="get_file_details"):
        unwrap("get_file_details", wire(structured={"error": "boom", "success": False}))
    with pytest.raises(BoxToolError) as info:
        unwrap("upload_file", wire(structured=CONFLICT_FILE))
    assert info.value.box_code == "item_name_in_use"
    with pytest.raises(BoxToolError):
        unwrap("get_file_details", wire(structured={"data": {"x": 1}, "error": "bad"}))


def test_null_error_key_is_not_an_error():
    assert unwrap("who_am_i", wire(structured={"error": None, "data": {"id": 3, "type": "user"}})) == {
        "id": "3",
        "type": "user",
    }


def test_disabled_tool_text_is_tool_disabled():
    text = (
        "Tool has been disabled by the enterprise admin. Contact your enterprise admin for more information."
    )
    with pytest.raises(ToolDisabled, match="ai_qa_single_file"):
        unwrap("ai_qa_single_file", text_result(text, is_error=True))


def test_unknown_tool_text_is_tool_missing():
    with pytest.raises(ToolMissing, match="get_download_url"):
        unwrap("get_download_url", text_result("Unknown tool: get_download_url", is_error=True))


@pytest.mark.parametrize(
    "result",
    [
        CallToolResult(content=[]),
        {"content": []},
        {"content": [{"type": "image", "data": "xx", "mimeType": "image/png"}]},
        object(),
    ],
)
def test_unknown_result_shapes_raise_naming_the_tool(result):
    with pytest.raises(BoxToolError, match="who_am_i"):
        unwrap("who_am_i", result)


def test_normalise_ids_leaves_non_ids_alone():
    value = {"id": 7, "size": 9, "parent_id": 3, "flag": True, "nested": [{"id": 1.0}], "is_id": False}
    assert normalise_ids(value) == {
        "id": "7",
        "size": 9,
        "parent_id": "3",
        "flag": True,
        "nested": [{"id": "1"}],
        "is_id": False,
    }


def test_payload_module_does_not_import_the_network_stack():
    code = (
        "import sys, box_memory.box.payload\n"
        "bad = [m for m in ('mcp', 'httpx', 'httpx2', 'anyio') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
