"""The tool catalogue: exact names, no delete, hidden and admin-disabled tools."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import MCPError

from box_memory.emulator import DISABLED_TEXT
from box_memory.emulator.testing import Emulator, running_emulator
from tests.emulator.helpers import connect

EXPECTED = {
    "who_am_i",
    "list_folder_content_by_folder_id",
    "get_folder_details",
    "get_file_details",
    "get_file_content",
    "search_files_keyword",
    "search_folders_by_name",
    "get_download_url",
    "ai_qa_single_file",
    "ai_qa_multi_file",
    "ai_qa_hub",
    "ai_extract_structured_from_fields",
    "list_metadata_templates",
    "upload_file",
    "upload_file_version",
    "create_folder",
    "move_file",
    "move_folder",
    "update_file_properties",
    "set_file_metadata",
    "create_metadata_template",
}


@pytest.mark.anyio
async def test_catalogue_names_and_required_arguments(emu: Emulator) -> None:
    async with connect(emu) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == EXPECTED
    assert not [name for name in tools if "delete" in name or "trash" in name]
    assert tools["upload_file"].input_schema["required"] == ["file_name", "file_content"]
    assert tools["move_file"].input_schema["required"] == ["file_id", "parent_folder_id"]
    assert set(tools["list_folder_content_by_folder_id"].input_schema["properties"]) == {
        "folder_id",
        "fields",
        "limit",
        "offset",
        "marker",
    }
    assert tools["get_file_content"].annotations.read_only_hint is True
    assert tools["upload_file"].annotations.read_only_hint is False


@pytest.mark.anyio
async def test_hidden_and_disabled_tools(tmp_path: Path) -> None:
    with running_emulator(
        tmp_path / "box", hidden_tools=["ai_qa_multi_file"], disabled_tools=["upload_file"]
    ) as emu:
        async with connect(emu) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "ai_qa_multi_file" not in names
            assert "upload_file" in names
            result = await client.call_tool("upload_file", {"file_name": "a.md", "file_content": "x"})
            assert result.is_error
            assert [c.text for c in result.content] == [DISABLED_TEXT]
            assert DISABLED_TEXT == (
                "Tool has been disabled by the enterprise admin. "
                "Contact your enterprise admin for more information."
            )
            assert not (emu.root / "a.md").exists()
            with pytest.raises(MCPError, match="Unknown tool"):
                await client.call_tool("ai_qa_multi_file", {"file_ids": ["1"], "question": "?"})
            emu.configure(disabled_tools=(), hidden_tools=())
            names = {t.name for t in (await client.list_tools()).tools}
            assert "ai_qa_multi_file" in names
            assert not (
                await client.call_tool("upload_file", {"file_name": "a.md", "file_content": "x"})
            ).is_error
        assert [c.outcome for c in emu.calls] == ["disabled", "unknown_tool", "ok"]
