"""Reading: text content, download URLs, extractive AI, search (and its lag), edits behind our back."""

from __future__ import annotations

import os
import time

import httpx2
import pytest

from box_memory.emulator import Emulator
from tests.emulator.helpers import call, call_error, connect


@pytest.mark.anyio
async def test_get_file_content_text_and_binary(emu: Emulator) -> None:
    plan = emu.fs.id_for_path("Projects/alpha/plan.md")
    blob = emu.fs.id_for_path("blob.bin")
    async with connect(emu) as client:
        content = await call(client, "get_file_content", file_id=plan)
        binary = await call_error(client, "get_file_content", file_id=blob)
        folder = await call_error(client, "get_file_content", file_id=emu.fs.id_for_path("archive"))
    assert content == {
        "id": plan,
        "name": "plan.md",
        "content": (emu.root / "Projects/alpha/plan.md").read_text(encoding="utf-8"),
    }
    assert binary["status"] == 400 and "text representation" in binary["message"]
    assert folder["status"] == 404


@pytest.mark.anyio
async def test_download_url_serves_bytes_without_bearer(emu: Emulator) -> None:
    blob = emu.fs.id_for_path("blob.bin")
    async with connect(emu) as client:
        answer = await call(client, "get_download_url", file_id=blob)
    url = answer["download_url"]
    assert url.startswith(f"{emu.base_url}/download/")
    assert answer["expires_at"]
    r = httpx2.get(url)
    assert r.status_code == 200
    assert r.content == (emu.root / "blob.bin").read_bytes()
    assert httpx2.get(url + "x").status_code == 404
    assert emu.counters["downloads"] == 1


@pytest.mark.anyio
async def test_download_url_expires(emu: Emulator) -> None:
    emu.configure(download_ttl_s=0)
    async with connect(emu) as client:
        answer = await call(client, "get_download_url", file_id=emu.fs.id_for_path("readme.txt"))
    time.sleep(0.01)
    assert httpx2.get(answer["download_url"]).status_code == 404


@pytest.mark.anyio
async def test_ai_qa_is_extractive_and_deterministic(emu: Emulator) -> None:
    plan = emu.fs.id_for_path("Projects/alpha/plan.md")
    notes = emu.fs.id_for_path("notes.md")
    async with connect(emu) as client:
        first = await call(client, "ai_qa_single_file", file_id=plan, question="When do we ship the alpha?")
        second = await call(client, "ai_qa_single_file", file_id=plan, question="When do we ship the alpha?")
        multi = await call(
            client, "ai_qa_multi_file", file_ids=[notes, plan], question="What do dogs bark at?"
        )
        extract = await call(
            client,
            "ai_extract_structured_from_fields",
            file_ids=[plan],
            fields=[
                {"key": "status", "type": "enum", "options": [{"key": "draft"}, {"key": "active"}]},
                {"key": "owner"},
                {"key": "budget", "type": "float"},
                {"key": "absent"},
            ],
        )
    assert first["answer"] == second["answer"]
    assert first["answer"].startswith("We ship the alpha in March.")
    assert first["completion_reason"] == "done"
    assert first["ai_agent_info"]["processor"] == "extractive"
    assert multi["answer"] == "Dogs bark at the mail carrier."
    assert multi["citations"][0]["id"] == notes
    assert extract["answer"] == {"status": "active", "owner": "Ada", "budget": 1200.0, "absent": None}


@pytest.mark.anyio
async def test_search_by_name_content_extension_and_ancestor(emu: Emulator) -> None:
    alpha = emu.fs.id_for_path("Projects/alpha")
    async with connect(emu) as client:
        by_content = await call(client, "search_files_keyword", query="SIGNED contract")
        by_name = await call(client, "search_files_keyword", query="readme")
        by_ext = await call(client, "search_files_keyword", query="the", file_extensions=["md"])
        scoped = await call(client, "search_files_keyword", query="the", ancestor_folder_id=alpha)
        nothing = await call(client, "search_files_keyword", query="zebra")
        folders = await call(client, "search_folders_by_name", folder_name="ALP")
    assert [e["name"] for e in by_content["entries"]] == ["plan.md"]
    assert [e["name"] for e in by_name["entries"]] == ["readme.txt"]
    assert sorted(e["name"] for e in by_ext["entries"]) == ["notes.md", "plan.md"]
    assert [e["name"] for e in scoped["entries"]] == ["plan.md"]
    assert nothing["entries"] == [] and nothing["total_count"] == 0
    assert [e["id"] for e in folders["entries"]] == [alpha]


@pytest.mark.anyio
async def test_search_lag_hides_fresh_changes(emu: Emulator) -> None:
    old = time.time() - 3600
    for path in emu.root.rglob("*"):
        os.utime(path, (old, old))
    emu.configure(search_lag_s=60)
    async with connect(emu) as client:
        await call(client, "upload_file", file_name="fresh-zebra.md", file_content="zebra")
        assert (await call(client, "search_files_keyword", query="zebra"))["entries"] == []
        assert [
            e["name"] for e in (await call(client, "search_files_keyword", query="signed"))["entries"]
        ] == ["plan.md"]
        emu.configure(search_lag_s=0)
        found = await call(client, "search_files_keyword", query="zebra")
    assert [e["name"] for e in found["entries"]] == ["fresh-zebra.md"]


@pytest.mark.anyio
async def test_edits_behind_the_emulators_back_are_noticed(emu: Emulator) -> None:
    path = emu.root / "readme.txt"
    file_id = emu.fs.id_for_path("readme.txt")
    async with connect(emu) as client:
        before = await call(client, "get_file_details", file_id=file_id)
        path.write_text("edited by another process, and longer\n", encoding="utf-8")
        later = time.time() + 5
        os.utime(path, (later, later))
        after = await call(client, "get_file_details", file_id=file_id)
        os.utime(path, (later + 5, later + 5))  # touched, same bytes: no new version
        touched = await call(client, "get_file_details", file_id=file_id)
        (emu.root / "new-outside.md").write_text("x")
        listing = await call(client, "list_folder_content_by_folder_id", folder_id="0")
        path.unlink()
        gone = await call_error(client, "get_file_details", file_id=file_id)
        relisted = await call(client, "list_folder_content_by_folder_id", folder_id="0")
    assert after["id"] == before["id"]
    assert int(after["etag"]) == int(before["etag"]) + 1
    assert after["file_version"]["id"] != before["file_version"]["id"]
    assert after["sha1"] != before["sha1"] and after["size"] == len("edited by another process, and longer\n")
    assert after["modified_at"] != before["modified_at"]
    assert touched["etag"] == after["etag"] and touched["file_version"] == after["file_version"]
    assert "new-outside.md" in [e["name"] for e in listing["entries"]]
    assert gone["status"] == 404
    assert "readme.txt" not in [e["name"] for e in relisted["entries"]]


@pytest.mark.anyio
async def test_text_of_a_source_over_50_mb_is_refused(emu: Emulator) -> None:
    with (emu.root / "huge.txt").open("wb") as fh:
        fh.truncate(50 * 1024 * 1024 + 1)  # sparse: cheap to make
    async with connect(emu) as client:
        error = await call_error(client, "get_file_content", file_id=emu.fs.id_for_path("huge.txt"))
    assert error["status"] == 400 and "50 MB" in error["message"]
