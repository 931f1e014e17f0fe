"""Under the monthly layout a write on Box must not list the flat `memories/` it leaves behind.

A workspace that switched layout at 100,000 memories keeps them in `memories/`; listing that folder
is 100 pages of 1,000. Box lists a folder's subfolders before its files (box-mcp.md, section 3), so
the month folders are on the first page: a write reads that page only, and month folders made by
another machine are still found. Pages of 3 entries here stand in for pages of 1,000.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend

MONTH = datetime.now(UTC).strftime("%Y-%m")


@pytest.fixture
def switched(make: Any, emu: Emulator, monkeypatch: pytest.MonkeyPatch) -> Backend:
    """A cloud workspace with 12 flat memories (5 pages of 3), then switched to monthly."""
    cloud: Backend = make("cloud")
    for i in range(12):
        cloud.data("write", f"Flat memory {i}: the zanzibar body.", "--title", f"Flat memory {i}")
    cloud.cli.json("init", cloud.name, "--parent", "0", "--memory-layout", "monthly")
    # A rollup of a big workspace (over 1 MiB): a write under the monthly layout leaves it to lag.
    rollup = cloud.path("_index.json")
    rollup.write_bytes(rollup.read_bytes() + b" " * (1100 * 1024))
    monkeypatch.setenv("BOX_MEMORY_LIST_LIMIT", "3")
    monkeypatch.setenv("BOX_MEMORY_LISTING_TRUST_S", "0")  # every command lists afresh
    return cloud


def _listings_of(emu: Emulator, cloud: Backend, rel: str) -> int:
    fid = emu.fs.id_for_path(f"{cloud.name}/{rel}")
    return sum(
        1
        for c in emu.calls
        if c.name == "list_folder_content_by_folder_id" and c.arguments.get("folder_id") == fid
    )


def test_a_monthly_write_reads_one_page_of_the_flat_folder(switched: Backend, emu: Emulator) -> None:
    emu.reset_calls()
    first = switched.data("write", "Month one: the zanzibar body.", "--title", "Month one")
    assert first["folder"] == f"memories/{MONTH}/"  # the month's folder made by this write
    assert _listings_of(emu, switched, "memories") == 1
    emu.reset_calls()
    second = switched.data("write", "Month two: the zanzibar body.", "--title", "Month two")
    assert second["folder"] == f"memories/{MONTH}/"
    assert _listings_of(emu, switched, "memories") == 1  # was 5: every page of 13 entries
    month = json.loads(switched.path(f"memories/{MONTH}/_index.json").read_bytes())
    assert [e["id"] for e in month["entries"]] == [first["id"], second["id"]]
    hits = {h["id"] for h in switched.data("recall", "zanzibar", "--limit", "20")["hits"]}
    assert {first["id"], second["id"]} <= hits and len(hits) == 14


def test_a_month_folder_made_elsewhere_is_found_from_the_first_page(switched: Backend, emu: Emulator) -> None:
    mine = switched.data("write", "Mine: the zanzibar body.", "--title", "Mine")
    # Another machine's memory in an older month folder (made behind this machine's back).
    other = switched.path("memories/2020-01")
    other.mkdir()
    src = next(switched.path("memories").glob("note__flat-memory-0.md"))
    text = src.read_text()
    old_id = text.split("id: ", 1)[1].split("\n", 1)[0].strip()
    mem = old_id[:-1] + ("A" if old_id[-1] != "A" else "B")
    text = text.replace(old_id, mem).replace("Flat memory 0", "Older month")
    (other / "note__older-month.md").write_text(text)
    switched.run("index-rebuild")
    emu.reset_calls()
    hits = {h["id"] for h in switched.data("recall", "zanzibar", "--limit", "20")["hits"]}
    assert {mine["id"], mem} <= hits
    assert switched.data("get", mem)["id"] == mem
