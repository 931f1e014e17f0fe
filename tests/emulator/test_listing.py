"""Listings: both paging modes, order, fields, shapes, numeric ids, id stability across restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from box_memory.emulator import Emulator, default_state_path
from box_memory.emulator.testing import running_emulator
from tests.emulator.helpers import call, call_error, connect


def _fill(root: Path) -> None:
    for name in ("b-dir", "A-dir"):
        (root / name).mkdir()
    for name in ("zeta.md", "Alpha.md", "beta.md", "gamma.md", "delta.md"):
        (root / name).write_text(name, encoding="utf-8")


@pytest.mark.anyio
async def test_marker_paging_walks_every_page_in_order(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    _fill(tmp_path / "box")
    with running_emulator(tmp_path / "box") as emu:
        async with connect(emu) as client:
            names: list[str] = []
            marker = None
            pages = 0
            while True:
                args = {"folder_id": "0", "limit": 3}
                if marker:
                    args["marker"] = marker
                page = await call(client, "list_folder_content_by_folder_id", **args)
                assert set(page) == {"entries", "limit", "next_marker"}
                assert page["limit"] == 3
                names += [e["name"] for e in page["entries"]]
                pages += 1
                marker = page["next_marker"]
                if marker is None:
                    break
    assert pages == 3
    assert names == ["A-dir", "b-dir", "Alpha.md", "beta.md", "delta.md", "gamma.md", "zeta.md"]


@pytest.mark.anyio
async def test_offset_paging(tmp_path: Path) -> None:
    (tmp_path / "box").mkdir()
    _fill(tmp_path / "box")
    with running_emulator(tmp_path / "box", paging="offset") as emu:
        async with connect(emu) as client:
            first = await call(client, "list_folder_content_by_folder_id", folder_id="0", limit=4)
            second = await call(client, "list_folder_content_by_folder_id", folder_id="0", limit=4, offset=4)
    assert set(first) == {"entries", "total_count", "offset", "limit"}
    assert (first["total_count"], first["offset"], first["limit"]) == (7, 0, 4)
    assert [e["type"] for e in first["entries"]] == ["folder", "folder", "file", "file"]
    assert [e["name"] for e in second["entries"]] == ["delta.md", "gamma.md", "zeta.md"]
    assert second["offset"] == 4


@pytest.mark.anyio
async def test_entries_are_mini_unless_fields_are_asked(emu: Emulator) -> None:
    async with connect(emu) as client:
        mini = await call(client, "list_folder_content_by_folder_id", folder_id="0")
        asked = await call(
            client,
            "list_folder_content_by_folder_id",
            folder_id="0",
            fields=["name", "size", "modified_at", "sha1"],
        )
        emu.configure(listing="full")
        full = await call(client, "list_folder_content_by_folder_id", folder_id="0")
    readme = next(e for e in mini["entries"] if e["name"] == "readme.txt")
    assert set(readme) == {"type", "id", "file_version", "sequence_id", "etag", "sha1", "name"}
    assert readme["file_version"]["type"] == "file_version"
    folder = mini["entries"][0]
    assert set(folder) == {"type", "id", "sequence_id", "etag", "name"}
    readme = next(e for e in asked["entries"] if e["name"] == "readme.txt")
    assert set(readme) == {"type", "id", "etag", "name", "size", "modified_at", "sha1"}
    assert readme["size"] == len("hello box\n")
    readme = next(e for e in full["entries"] if e["name"] == "readme.txt")
    assert readme["path_collection"]["entries"][0] == {
        "type": "folder",
        "id": "0",
        "sequence_id": None,
        "etag": None,
        "name": "All Files",
    }


@pytest.mark.anyio
async def test_file_and_folder_details(emu: Emulator) -> None:
    plan_id = emu.fs.id_for_path("Projects/alpha/plan.md")
    async with connect(emu) as client:
        plan = await call(client, "get_file_details", file_id=plan_id)
        alpha = await call(client, "get_folder_details", folder_id=plan["parent"]["id"])
        root = await call(client, "get_folder_details", folder_id="0")
        missing = await call_error(client, "get_file_details", file_id="999")
        wrong_kind = await call_error(client, "get_folder_details", folder_id=plan_id)
    assert plan["type"] == "file"
    assert plan["id"] == plan_id and plan["id"].isdigit()
    assert [e["name"] for e in plan["path_collection"]["entries"]] == ["All Files", "Projects", "alpha"]
    assert plan["path_collection"]["total_count"] == 3
    assert plan["parent"]["name"] == "alpha"
    assert plan["shared_link"] is None and plan["trashed_at"] is None and plan["item_status"] == "active"
    assert plan["file_version"]["sha1"] == plan["sha1"]
    for stamp in ("created_at", "modified_at", "content_modified_at"):
        assert plan[stamp][-6:] in ("-08:00",), plan[stamp]
    assert alpha["item_collection"]["entries"][0]["name"] == "plan.md"
    assert root["etag"] is None and root["sequence_id"] is None and root["name"] == "All Files"
    assert missing["status"] == 404 and missing["code"] == "not_found" and missing["type"] == "error"
    assert wrong_kind["status"] == 404


@pytest.mark.anyio
async def test_text_shape_and_numeric_ids(root: Path) -> None:
    with running_emulator(root, shape="text", ids="number") as emu:
        async with connect(emu) as client:
            result = await client.call_tool("list_folder_content_by_folder_id", {"folder_id": 0})
            assert result.structured_content is None
            assert len(result.content) == 1 and result.content[0].type == "text"
            listing = json.loads(result.content[0].text)
            file_entry = next(e for e in listing["entries"] if e["type"] == "file")
            assert isinstance(file_entry["id"], int)
            assert isinstance(file_entry["file_version"]["id"], int)
            details = json.loads(
                (await client.call_tool("get_file_details", {"file_id": file_entry["id"]})).content[0].text
            )
            assert details["path_collection"]["entries"][0]["id"] == 0
            assert details["parent"]["id"] == 0


@pytest.mark.anyio
async def test_ids_survive_a_restart_and_state_lives_outside_root(root: Path) -> None:
    with running_emulator(root) as emu:
        async with connect(emu) as client:
            before = await call(client, "list_folder_content_by_folder_id", folder_id="0")
            created = await call(client, "upload_file", file_name="new.md", file_content="fresh")
    state = default_state_path(root)
    assert state.is_dir() and state.parent == root.parent
    assert not [p for p in root.rglob("*") if "box-emulator" in p.name]
    with running_emulator(root) as emu:
        async with connect(emu) as client:
            after = await call(client, "list_folder_content_by_folder_id", folder_id="0")
            again = await call(client, "get_file_details", file_id=created["id"])
    ids_before = {e["name"]: e["id"] for e in before["entries"]}
    ids_after = {e["name"]: e["id"] for e in after["entries"]}
    assert ids_after == {**ids_before, "new.md": created["id"]}
    assert again["etag"] == created["etag"] and again["file_version"] == created["file_version"]


@pytest.mark.anyio
async def test_bad_marker_and_limit_are_400(emu: Emulator) -> None:
    async with connect(emu) as client:
        bad_marker = await call_error(client, "list_folder_content_by_folder_id", folder_id="0", marker="%%%")
        bad_limit = await call_error(client, "list_folder_content_by_folder_id", folder_id="0", limit=0)
        missing = await call_error(client, "list_folder_content_by_folder_id")
    assert bad_marker["status"] == bad_limit["status"] == missing["status"] == 400
    assert "folder_id" in missing["message"]


@pytest.mark.anyio
async def test_a_folder_size_adds_up_the_files_below_it_and_follows_their_changes(tmp_path: Path) -> None:
    root = tmp_path / "box"
    (root / "ws" / "memories" / "2026").mkdir(parents=True)
    (root / "ws" / "memories" / "2026" / "a.md").write_bytes(b"x" * 10)
    (root / "ws" / "memories" / "b.md").write_bytes(b"y" * 5)
    (root / "ws" / "top.md").write_bytes(b"z" * 2)
    fields = ["name", "size"]

    async def sizes(client: object, folder_id: str) -> dict[str, int]:
        page = await call(client, "list_folder_content_by_folder_id", folder_id=folder_id, fields=fields)
        return {e["name"]: e["size"] for e in page["entries"]}

    with running_emulator(root) as emu:
        async with connect(emu) as client:
            ws = emu.fs.id_for_path("ws")
            mem = emu.fs.id_for_path("ws/memories")
            emu.fs.id_for_path("ws/memories/2026/a.md")  # seen: as Box, sizes count what it holds
            assert await sizes(client, "0") == {"ws": 17}
            assert await sizes(client, ws) == {"memories": 15, "top.md": 2}
            # A new file and a new version through the tools: the sizes above them follow.
            await call(client, "upload_file", file_name="c.md", file_content="c" * 100, parent_folder_id=mem)
            a = emu.fs.id_for_path("ws/memories/2026/a.md")
            await call(client, "upload_file_version", file_id=a, file_content="a" * 1)
            assert await sizes(client, ws) == {"memories": 106, "top.md": 2}
            # A file gone from disk: dropped once a listing sees it gone.
            (root / "ws" / "memories" / "b.md").unlink()
            assert "b.md" not in await sizes(client, mem)
            assert await sizes(client, "0") == {"ws": 103}
