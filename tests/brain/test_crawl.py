"""The crawl's completeness rules: markers, depth, pages, paging styles and payload shapes."""

from __future__ import annotations

import shutil

import pytest

from box_memory.brain.crawl import Page, crawl
from box_memory.brain.sync import SyncOptions
from tests.brain.helpers import entries, folder_id, items, lib_sync, put, sync, tool_calls


def test_a_repeated_marker_makes_the_crawl_partial(cli, emu, box):
    for n in range(250):  # three pages of 100
        put(box, f"many/f{n:03d}.txt", "x\n")
    many = folder_id(emu, "many")
    first = sync(cli, "--folder-id", many, "--max-items", "1000", "--no-content")
    assert first["status"] == "completed"
    assert first["counts"]["indexed"] == 250
    (box / "many" / "f000.txt").unlink()
    emu.configure(repeat_marker=True)
    emu.reset_calls()
    run = sync(cli, "--folder-id", many)
    assert run["status"] == "partial"
    assert run["complete"] is False
    assert any("repeated a page marker" in r for r in run["incomplete_reasons"])
    assert run["counts"]["deleted"] == 0
    assert len(entries()) == 250
    listing = tool_calls(emu, "list_folder_content_by_folder_id")
    assert len(listing) == 2  # the repeat is noticed, not followed forever
    assert listing[1].arguments["marker"]


def test_folders_below_the_depth_limit_make_the_crawl_partial(cli, emu, box):
    deep = "/".join(f"d{n}" for n in range(1, 14))  # d1 (depth 1) .. d13 (depth 13)
    put(box, "top.md", "top\n")
    put(box, f"{deep.rsplit('/', 1)[0]}/twelve.md", "at depth 12\n")
    put(box, f"{deep}/thirteen.md", "at depth 13\n")
    run = sync(cli, "--folder-id", "0")
    assert run["status"] == "partial"
    assert run["complete"] is False
    assert any("depth limit 12 hides folder" in r and r.endswith("d13") for r in run["incomplete_reasons"])
    names = {i["name"] for i in items().values()}
    assert names == {"top.md", "twelve.md"}
    listed = {c.arguments["folder_id"] for c in tool_calls(emu, "list_folder_content_by_folder_id")}
    assert folder_id(emu, deep) not in listed


def test_a_subfolder_page_failing_makes_the_crawl_partial_and_deletes_nothing(emu, box):
    put(box, "a.md", "a\n")
    put(box, "sub/b.md", "b\n")
    assert lib_sync("0").status == "completed"
    (box / "a.md").unlink()

    def vanish(phase: str, done: int, total: int | None) -> None:
        if phase == "crawl" and (box / "sub").exists():
            shutil.rmtree(box / "sub")  # the folder was listed in the root page, then disappears

    run = lib_sync("0", opts=SyncOptions(progress=vanish))
    assert run.status == "partial"
    assert any("listing sub failed" in r for r in run.reasons)
    assert run.counts["deleted"] == 0
    assert len(entries()) == 2


@pytest.mark.parametrize(
    ("paging", "shape", "ids"),
    [("offset", "text", "number"), ("marker", "text", "number"), ("offset", "structured", "string")],
)
def test_every_paging_style_and_payload_shape(cli, emu, box, paging, shape, ids):
    emu.configure(paging=paging, shape=shape, ids=ids)
    for n in range(5):
        put(box, f"docs/n{n}.md", f"note {n}\n")
    put(box, "readme.md", "readme\n")
    first = sync(cli, "--folder-id", "0")
    assert first["counts"]["indexed"] == 6
    assert first["status"] == "completed"
    assert all(isinstance(k, str) and k.isdigit() for k in items())
    emu.reset_calls()
    capped = sync(cli, "--folder-id", "0", "--max-items", "2")
    assert capped["status"] == "partial"
    assert capped["counts"]["unchanged"] == 2
    assert capped["counts"]["deleted"] == 0
    emu.reset_calls()
    again = sync(cli, "--folder-id", "0", "--max-items", "0")  # settings persist; 0 = the default
    assert again["source"]["settings"]["max_items"] == 200
    assert again["counts"]["unchanged"] == 6
    assert {c.name for c in emu.calls} == {"list_folder_content_by_folder_id"}


class FakeLister:
    """Pages from a dict; used where a server would have to misbehave in ways the emulator cannot."""

    kind = "box"

    def __init__(self, pages: dict[tuple[str, str | None, int], Page]) -> None:
        self.pages = pages
        self.calls: list[tuple[str, str | None, int]] = []

    def page(self, folder_id: str, *, limit: int, marker: str | None, offset: int) -> Page:
        self.calls.append((folder_id, marker, offset))
        return self.pages[(folder_id, marker, offset)]


def f(n: int) -> dict:
    return {"type": "file", "id": str(n), "name": f"f{n}.md", "etag": "0"}


def test_exactly_reaching_the_cap_with_nothing_left_is_complete():
    # A full page without paging fields is not the end: the empty page after it proves it.
    lister = FakeLister({("0", None, 0): Page([f(1), f(2)], next_marker=None), ("0", None, 2): Page([])})
    result = crawl(lister, "0", cap=2)
    assert result.complete is True
    assert [x.id for x in result.files] == ["1", "2"]


def test_offset_paging_follows_total_count_and_stops_on_an_empty_short_page():
    lister = FakeLister(
        {
            ("0", None, 0): Page([f(1)], total_count=3, offset=0, limit=1),
            ("0", None, 1): Page([f(2)], total_count=3, offset=1, limit=1),
            ("0", None, 2): Page([], total_count=3, offset=2, limit=1),
        }
    )
    result = crawl(lister, "0", cap=10)
    assert [x.id for x in result.files] == ["1", "2"]
    assert result.complete is False
    assert any("stopped short" in r for r in result.reasons)


def test_endless_empty_marker_pages_are_not_followed_forever():
    pages = {("0", None, 0): Page([], next_marker="m0")}
    for n in range(10):
        pages[("0", f"m{n}", 0)] = Page([], next_marker=f"m{n + 1}")
    result = crawl(FakeLister(pages), "0", cap=10)
    assert result.complete is False
    assert any("empty pages" in r for r in result.reasons)


def test_a_file_listed_twice_is_imported_once_and_unsafe_links_are_replaced():
    evil = {**f(7), "shared_link": {"url": "https://evil.example.com/s/7"}}
    good = {**f(8), "shared_link": {"url": "https://acme.app.box.com/s/abc"}}
    lister = FakeLister({("0", None, 0): Page([evil, f(7), good], next_marker=None)})
    result = crawl(lister, "0", cap=10)
    assert [x.id for x in result.files] == ["7", "8"]
    assert result.files[0].url == "https://app.box.com/file/7"
    assert result.files[1].url == "https://acme.app.box.com/s/abc"


def test_a_listing_without_paging_fields_is_paged_by_offset_until_a_short_page(cli, emu, box):
    emu.configure(paging="none")
    for n in range(230):  # pages of 100, 100, 30: the server never says there is more
        put(box, f"many/f{n:03d}.txt", "x\n")
    run = sync(cli, "--folder-id", folder_id(emu, "many"), "--max-items", "1000", "--no-content")
    assert run["status"] == "completed" and run["complete"] is True
    assert run["counts"]["indexed"] == 230
    offsets = [c.arguments.get("offset", 0) for c in tool_calls(emu, "list_folder_content_by_folder_id")]
    assert offsets == [0, 100, 200]


@pytest.mark.parametrize("skew", [-30, 30])
def test_a_wrong_total_count_makes_the_crawl_partial_and_deletes_nothing(cli, emu, box, skew):
    emu.configure(paging="offset")
    for n in range(250):
        put(box, f"many/f{n:03d}.txt", "x\n")
    many = folder_id(emu, "many")
    assert sync(cli, "--folder-id", many, "--max-items", "1000", "--no-content")["complete"] is True
    (box / "many" / "f000.txt").unlink()
    emu.configure(total_skew=skew)
    run = sync(cli, "--folder-id", many)
    assert run["status"] == "partial" and run["complete"] is False
    assert any("total" in r for r in run["incomplete_reasons"]), run["incomplete_reasons"]
    assert run["counts"]["deleted"] == 0
    assert len(items()) == 250


def test_short_pages_before_the_end_are_followed_in_both_paging_styles(cli, emu, box):
    for n in range(120):
        put(box, f"many/f{n:03d}.txt", "x\n")
    many = folder_id(emu, "many")
    for paging in ("marker", "offset"):
        emu.configure(paging=paging, short_pages=True)
        run = sync(cli, "--folder-id", many, "--max-items", "1000", "--no-content")
        assert run["complete"] is True, (paging, run["incomplete_reasons"])
        assert run["counts"]["indexed"] + run["counts"]["unchanged"] == 120
