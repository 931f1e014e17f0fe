"""Folder listings are never silently short (offset paging, wrong totals, short and capped pages).

Each test serves a real folder through the emulator in a listing shape Box's published catalogue
allows (offset/limit paging, paging fields absent or wrong) and checks what the cloud store, the
index rebuild and recall do with it: list everything, or say the listing may be incomplete and
then infer nothing from what is missing.
"""

from __future__ import annotations

from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.store.cloud import CloudStore
from tests.cloud.conftest import Backend


@pytest.fixture
def cloud(make: Any, monkeypatch: pytest.MonkeyPatch) -> Backend:
    backend: Backend = make("cloud")
    monkeypatch.setenv("BOX_MEMORY_LIST_LIMIT", "3")  # 8 files and the index: pages of 3
    for n in range(8):
        backend.put(f"files/f{n}.txt", b"x\n")
    return backend


def _offsets(emu: Emulator, fid: str) -> list[int]:
    return [
        int(c.arguments.get("offset", 0))
        for c in emu.calls
        if c.name == "list_folder_content_by_folder_id" and str(c.arguments["folder_id"]) == fid
    ]


@pytest.mark.parametrize(
    "switches",
    [
        {"paging": "none"},  # no paging fields at all: a full page is not the end
        {"paging": "offset", "short_pages": True},  # pages shorter than the limit before the end
        {"paging": "marker", "short_pages": True},
        {"paging": "offset"},
    ],
    ids=["no-fields", "offset-short", "marker-short", "offset"],
)
def test_every_page_is_read(store: CloudStore, emu: Emulator, switches: dict[str, Any]) -> None:
    emu.configure(**switches)
    names = store.list_names("files")
    assert sorted(n for n in names if n.startswith("f")) == [f"f{n}.txt" for n in range(8)]
    assert store.listing_incomplete("files") is None
    assert store.warnings == []


def test_a_silently_capped_page_size_is_followed(
    store: CloudStore, emu: Emulator, cloud: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_LIST_LIMIT", "1000")
    for n in range(8, 60):
        cloud.put(f"files/f{n}.txt", b"x\n")
    emu.configure(paging="none", page_cap=25)  # asks 1000, gets 25 and no word about more
    assert len([n for n in store.list_names("files") if n.startswith("f")]) == 60
    assert store.listing_incomplete("files") is None


@pytest.mark.parametrize("skew", [-3, -2, 3])
def test_a_wrong_total_count_marks_the_listing_incomplete(
    store: CloudStore, emu: Emulator, skew: int
) -> None:
    emu.configure(paging="offset", total_skew=skew)
    names = store.list_names("files")
    assert len([n for n in names if n.startswith("f")]) == 8  # everything the server did hand out is kept
    reason = store.listing_incomplete("files")
    assert reason is not None and "total" in reason
    assert any("may be incomplete" in w and "files" in w for w in store.warnings)


def test_an_ignored_offset_is_noticed_not_looped(store: CloudStore, emu: Emulator) -> None:
    emu.configure(paging="none", ignore_offset=True)
    names = store.list_names("files")
    assert len(names) == 3
    assert "ignored the offset" in (store.listing_incomplete("files") or "")
    fid = store.folder_id("files")
    assert fid is not None and _offsets(emu, fid) == [0, 3]


def test_index_rebuild_reports_instead_of_rewriting_an_incomplete_folder(
    cloud: Backend, emu: Emulator
) -> None:
    for n in range(4):
        cloud.data("write", f"Fact number {n} about caching.", "--title", f"Cache fact {n}")
    index = cloud.path("teams/default/memories/_index.json")
    before = index.read_bytes()
    emu.configure(paging="offset", total_skew=5)
    env = cloud.run("index-rebuild")
    folders = {f["folder"]: f for f in env["data"]["folders"]}
    short = folders["teams/default/memories/"]
    assert short["listing_complete"] is False and short["written"] is False
    assert any("listing incomplete" in r for r in short["reasons"])
    assert any("not rebuilt" in n for n in env["data"]["notes"])
    assert index.read_bytes() == before
    checked = cloud.run("index-rebuild", "--check", code=None)["data"]
    assert checked["drift"] is True
    emu.configure(total_skew=0)
    assert cloud.data("index-rebuild", "--check")["drift"] is False


def test_recall_warns_when_a_listing_may_be_short(cloud: Backend, emu: Emulator) -> None:
    cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens")
    emu.configure(paging="offset", total_skew=4)
    env = cloud.run("recall", "JWT")
    assert [h["title"] for h in env["data"]["hits"]] == ["Auth tokens"]
    assert any("may be incomplete" in w for w in env["warnings"]), env["warnings"]


@pytest.mark.parametrize("paging", ["marker", "offset"])
@pytest.mark.slow
def test_a_listing_that_fails_after_its_first_page_is_kept_and_marked_incomplete(
    store: CloudStore, emu: Emulator, paging: str
) -> None:
    emu.configure(paging=paging, fail_later_pages=True)
    names = [n for n in store.list_names("files") if n.startswith("f")]
    assert names and len(names) < 8  # the first page is kept, the rest could not be read
    reason = store.listing_incomplete("files")
    assert reason is not None and "failed" in reason
    assert any("may be incomplete" in w and "files" in w for w in store.warnings)


@pytest.mark.slow
def test_index_rebuild_keeps_the_entries_a_failed_page_would_have_listed(
    cloud: Backend, emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_LIST_LIMIT", "8")  # the root (8 entries) fits one page
    for n in range(9):
        cloud.data("write", f"Fact number {n} about queues.", "--title", f"Queue fact {n}")
    index = cloud.path("memories/_index.json")
    before = index.read_bytes()
    emu.configure(fail_later_pages=True)
    env = cloud.run("index-rebuild", code=None)
    folders = {f["folder"]: f for f in env["data"]["folders"]}
    short = folders["memories/"]
    assert short["written"] is False and short["listing_complete"] is False
    assert any("not rebuilt" in n for n in env["data"]["notes"])
    assert index.read_bytes() == before  # no entry dropped for a file the listing did not reach
    emu.configure(fail_later_pages=False)
    assert cloud.data("index-rebuild", "--check")["drift"] is False


@pytest.mark.slow
def test_a_root_listing_cut_short_is_not_taken_for_a_missing_workspace(cloud: Backend, emu: Emulator) -> None:
    emu.configure(fail_later_pages=True)  # pages of 3: the root's config is past the first page
    env = cloud.run("recall", "anything", code=4)
    assert env["errors"][0]["code"] == "backend_unavailable"
    assert "did not finish" in env["errors"][0]["message"]
