"""Writes: upload and its exact 409, versions, folders, moves, properties, name rules, metadata."""

from __future__ import annotations

import hashlib

import pytest

from box_memory.emulator import Emulator
from tests.emulator.helpers import call, call_error, connect


@pytest.mark.anyio
async def test_upload_then_case_insensitive_409_with_the_exact_box_body(emu: Emulator) -> None:
    async with connect(emu) as client:
        created = await call(client, "upload_file", file_name="Decision.md", file_content="# héllo\n")
        conflict = await call_error(client, "upload_file", file_name="decision.MD", file_content="other")
        folder_clash = await call_error(client, "upload_file", file_name="PROJECTS", file_content="x")
    assert (emu.root / "Decision.md").read_text(encoding="utf-8") == "# héllo\n"
    assert created["name"] == "Decision.md" and created["parent"]["id"] == "0"
    assert created["sha1"] == hashlib.sha1("# héllo\n".encode()).hexdigest()
    assert created["size"] == len("# héllo\n".encode())
    assert list(conflict) == ["type", "status", "code", "message", "context_info", "request_id"]
    assert conflict["type"] == "error"
    assert conflict["status"] == 409
    assert conflict["code"] == "item_name_in_use"
    assert conflict["message"] == "Item with the same name already exists"
    assert conflict["context_info"]["conflicts"]["id"] == created["id"]
    assert conflict["context_info"]["conflicts"]["name"] == "Decision.md"
    assert conflict["context_info"]["conflicts"]["type"] == "file"
    assert folder_clash["context_info"]["conflicts"]["type"] == "folder"
    assert (emu.root / "Decision.md").read_text(encoding="utf-8") == "# héllo\n"
    assert not list(emu.root.glob(".box-emulator-tmp-*"))


@pytest.mark.anyio
async def test_upload_into_a_subfolder_and_404_parent(emu: Emulator) -> None:
    alpha = emu.fs.id_for_path("Projects/alpha")
    async with connect(emu) as client:
        created = await call(
            client, "upload_file", file_name="n.md", file_content="x", parent_folder_id=alpha
        )
        missing = await call_error(
            client, "upload_file", file_name="n.md", file_content="x", parent_folder_id="123"
        )
    assert (emu.root / "Projects" / "alpha" / "n.md").read_text() == "x"
    assert [e["name"] for e in created["path_collection"]["entries"]] == ["All Files", "Projects", "alpha"]
    assert missing["status"] == 404


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["", "a/b", "a\\b", " lead", "trail ", ".", "..", "x" * 256])
async def test_name_rules_are_400(emu: Emulator, name: str) -> None:
    async with connect(emu) as client:
        error = await call_error(client, "upload_file", file_name=name, file_content="x")
    assert error["status"] == 400
    assert error["type"] == "error"


@pytest.mark.anyio
async def test_new_version_bumps_etag_version_and_sha1(emu: Emulator) -> None:
    async with connect(emu) as client:
        v1 = await call(client, "upload_file", file_name="m.md", file_content="one")
        v2 = await call(client, "upload_file_version", file_id=v1["id"], file_content="two")
        v3 = await call(client, "upload_file_version", file_id=v1["id"], file_content="two")
    assert v2["id"] == v1["id"]
    assert int(v2["etag"]) == int(v1["etag"]) + 1
    assert int(v2["sequence_id"]) == int(v1["sequence_id"]) + 1
    assert v2["file_version"]["id"] != v1["file_version"]["id"]
    assert v2["sha1"] == v2["file_version"]["sha1"] == hashlib.sha1(b"two").hexdigest()
    assert v1["sha1"] != v2["sha1"]
    assert v3["etag"] != v2["etag"] and v3["sha1"] == v2["sha1"]  # same bytes still make a version
    assert (emu.root / "m.md").read_text() == "two"


@pytest.mark.anyio
async def test_create_folder_and_its_409_lists_conflicts(emu: Emulator) -> None:
    async with connect(emu) as client:
        folder = await call(client, "create_folder", name="_archive")
        clash = await call_error(client, "create_folder", name="_ARCHIVE")
        nested = await call(client, "create_folder", name="2024", parent_folder_id=folder["id"])
    assert (emu.root / "_archive" / "2024").is_dir()
    assert folder["type"] == "folder" and folder["parent"]["id"] == "0"
    assert clash["status"] == 409 and clash["code"] == "item_name_in_use"
    assert isinstance(clash["context_info"]["conflicts"], list)
    assert clash["context_info"]["conflicts"][0]["id"] == folder["id"]
    assert nested["path_collection"]["entries"][-1]["id"] == folder["id"]


@pytest.mark.anyio
async def test_move_file_keeps_the_id_and_refuses_to_clobber(emu: Emulator) -> None:
    notes = emu.fs.id_for_path("notes.md")
    async with connect(emu) as client:
        archive = emu.fs.id_for_path("archive")
        moved = await call(client, "move_file", file_id=notes, parent_folder_id=archive)
        await call(client, "upload_file", file_name="notes.md", file_content="new notes")
        renamed = await call(
            client, "move_file", file_id=moved["id"], parent_folder_id=archive, name="2024-notes.md"
        )
        back = await call_error(client, "move_file", file_id=notes, parent_folder_id="0", name="NOTES.md")
    assert moved["id"] == notes and moved["parent"]["id"] == archive
    assert int(moved["etag"]) > 0
    assert renamed["name"] == "2024-notes.md"
    assert (emu.root / "archive" / "2024-notes.md").read_text().startswith("Cats sleep")
    assert (emu.root / "notes.md").read_text() == "new notes"
    assert back["status"] == 409 and back["context_info"]["conflicts"]["name"] == "notes.md"


@pytest.mark.anyio
async def test_update_file_properties(emu: Emulator) -> None:
    readme = emu.fs.id_for_path("readme.txt")
    async with connect(emu) as client:
        before = await call(client, "get_file_details", file_id=readme)
        after = await call(
            client,
            "update_file_properties",
            file_id=readme,
            name="README.txt",
            description="top",
            tags=["a", "b"],
        )
        clash = await call_error(client, "update_file_properties", file_id=readme, name="Notes.md")
    assert after["name"] == "README.txt" and after["description"] == "top" and after["tags"] == ["a", "b"]
    assert after["id"] == readme and after["etag"] != before["etag"]
    assert (emu.root / "README.txt").exists() and not (emu.root / "readme.txt").exists()
    assert clash["status"] == 409


@pytest.mark.anyio
async def test_metadata_templates_instances_and_mdfilters(emu: Emulator) -> None:
    plan = emu.fs.id_for_path("Projects/alpha/plan.md")
    notes = emu.fs.id_for_path("notes.md")
    async with connect(emu) as client:
        template = await call(
            client,
            "create_metadata_template",
            display_name="Box Memory",
            scope="enterprise",
            fields=[
                {"type": "string", "key": "memory_id", "displayName": "Memory id"},
                {"type": "enum", "key": "kind", "options": [{"key": "decision"}]},
            ],
        )
        dup = await call_error(
            client, "create_metadata_template", display_name="Box Memory", scope="enterprise"
        )
        listed = await call(client, "list_metadata_templates", scope="enterprise")
        instance = await call(
            client,
            "set_file_metadata",
            file_id=plan,
            scope="enterprise",
            template_key="boxMemory",
            metadata_fields={"memory_id": "mem_1", "kind": "decision"},
        )
        await call(
            client,
            "set_file_metadata",
            file_id=notes,
            scope="enterprise",
            template_key="boxMemory",
            metadata_fields={"memory_id": "mem_2"},
        )
        unknown = await call_error(
            client,
            "set_file_metadata",
            file_id=plan,
            scope="enterprise",
            template_key="boxMemory",
            metadata_fields={"nope": 1},
        )
        no_template = await call_error(
            client,
            "set_file_metadata",
            file_id=plan,
            scope="enterprise",
            template_key="missing",
            metadata_fields={},
        )
        found = await call(
            client,
            "search_files_keyword",
            query="the",
            mdfilters=[
                {"scope": "enterprise", "templateKey": "boxMemory", "filters": {"memory_id": "mem_1"}}
            ],
        )
        both = await call(
            client,
            "search_files_keyword",
            query="the",
            mdfilters=[
                {
                    "scope": "enterprise",
                    "templateKey": "boxMemory",
                    "filters": {"memory_id": ["mem_1", "mem_2"]},
                }
            ],
        )
        details = await call(
            client, "get_file_details", file_id=plan, fields=["metadata.enterprise.boxMemory"]
        )
        global_templates = await call(client, "list_metadata_templates", scope="global")
    assert template["templateKey"] == "boxMemory" and template["scope"] == "enterprise_27182818"
    assert dup["status"] == 409
    assert [t["templateKey"] for t in listed["entries"]] == ["boxMemory"]
    assert instance["memory_id"] == "mem_1" and instance["$template"] == "boxMemory"
    assert instance["$parent"] == f"file_{plan}"
    assert unknown["status"] == 400 and no_template["status"] == 404
    assert [e["id"] for e in found["entries"]] == [plan]
    assert sorted(e["id"] for e in both["entries"]) == sorted([plan, notes])
    assert details["metadata"]["enterprise"]["boxMemory"]["memory_id"] == "mem_1"
    assert global_templates["entries"][0]["templateKey"] == "properties"
