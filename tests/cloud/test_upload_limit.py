"""Box takes a file of at most 50 MB in one upload (https://developer.box.com/guides/uploads/: the
direct upload; bigger files need the chunked upload API, which Box's MCP server does not offer).

A flat memories folder passes that near 65,000 memories (its `_index.json` is ~0.8 KB an entry).
A write there used to save its memory, fail to upload the index, and answer "saved" with a warning
that promised a repair no command could make: the memory was then missing from every index a
reader on another machine uses. Now the write is refused before anything is written, `status`
says why and what to do, and the monthly layout (a month's own small index) takes the next write.

The limit is lowered for these tests with BOX_MEMORY_BOX_UPLOAD_MAX_BYTES instead of making 50 MB
indexes; the emulator is the Box we cannot run here.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.workspace.index import ENTRY_ROOM_BYTES
from tests.cloud.conftest import Backend

MONTH = datetime.now(UTC).strftime("%Y-%m")


def _files(bk: Backend) -> dict[str, bytes]:
    return {
        p.relative_to(bk.root).as_posix(): p.read_bytes()
        for p in sorted(bk.root.rglob("*"))
        if p.is_file() and not p.name.startswith("_box-memory.lock")
    }


def _uploads(emu: Emulator) -> list[str]:
    """What was uploaded, but the write lock's lease (a small JSON file of its own)."""
    return [
        str(c.arguments.get("file_name") or c.arguments.get("file_id"))
        for c in emu.calls
        if c.name.startswith("upload") and not str(c.arguments.get("file_content")).startswith('{"writer"')
    ]


def _write(bk: Backend, title: str, code: int = 0) -> dict[str, Any]:
    return bk.run("write", f"{title}: the zanzibar queue body.", "--title", title, code=code)


def _limit_just_under(bk: Backend, monkeypatch: pytest.MonkeyPatch) -> int:
    """An upload limit that the memories index, one entry larger, could pass."""
    size = bk.path("memories/_index.json").stat().st_size
    limit = size + ENTRY_ROOM_BYTES - 1
    monkeypatch.setenv("BOX_MEMORY_BOX_UPLOAD_MAX_BYTES", str(limit))
    return limit


def test_a_write_into_an_index_near_the_upload_limit_is_refused_before_it_writes(
    make: Any, emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud = make("cloud")
    kept = [_write(cloud, f"Queue decision {i}")["data"]["id"] for i in range(3)]
    _limit_just_under(cloud, monkeypatch)
    before = _files(cloud)
    emu.reset_calls()

    env = _write(cloud, "One too many", code=1)

    err = env["errors"][0]
    assert err["code"] == "file_too_large", err
    assert "memories/_index.json" in err["message"] and "monthly" in err["message"]
    assert "\n" not in err["message"]
    assert _files(cloud) == before  # no memory file, no index change
    assert _uploads(emu) == []
    hits = {h["id"] for h in cloud.data("recall", "zanzibar")["hits"]}
    assert hits == set(kept)


def test_status_says_writes_are_refused_and_how_to_switch(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cloud = make("cloud")
    _write(cloud, "Queue decision")
    limit = _limit_just_under(cloud, monkeypatch)
    advice = cloud.data("status")["layout_advice"]
    assert advice["folder"] == "memories/"
    assert advice["writes_refused"] is True and advice["upload_limit_bytes"] == limit
    assert "monthly" in advice["switch"]


def test_the_monthly_layout_takes_the_next_write_and_the_rollup_lags(
    make: Any, emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud = make("cloud")
    old = _write(cloud, "Flat queue decision")["data"]
    cloud.cli.json("init", cloud.name, "--parent", "0", "--memory-layout", "monthly")
    # The rollup holds every entry and more, so it is over this limit too.
    _limit_just_under(cloud, monkeypatch)
    rollup = cloud.path("_index.json").read_bytes()

    env = _write(cloud, "Monthly queue decision")

    new = env["data"]
    assert new["folder"] == f"memories/{MONTH}/"
    assert env["warnings"] == []  # the rollup left to lag quietly: readers use the folder indexes
    assert cloud.path("_index.json").read_bytes() == rollup
    month = json.loads(cloud.path(f"memories/{MONTH}/_index.json").read_bytes())
    assert [e["id"] for e in month["entries"]] == [new["id"]]
    hits = {h["id"] for h in cloud.data("recall", "zanzibar")["hits"]}
    assert hits == {old["id"], new["id"]}


def test_an_upload_over_the_limit_is_not_sent(
    make: Any, emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store's own guard (index-rebuild writes whole indexes): one line, nothing uploaded."""
    cloud = make("cloud")
    for i in range(3):
        _write(cloud, f"Queue decision {i}")
    monkeypatch.setenv("BOX_MEMORY_BOX_UPLOAD_MAX_BYTES", "600")
    emu.reset_calls()
    env = cloud.run("index-rebuild", code=None)
    assert env["errors"], env
    err = env["errors"][0]
    assert err["code"] == "file_too_large" and "\n" not in err["message"], err
    assert _uploads(emu) == []


def test_a_local_workspace_has_no_upload_limit(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    local = make("local")
    _write(local, "Queue decision")
    monkeypatch.setenv("BOX_MEMORY_BOX_UPLOAD_MAX_BYTES", "10")
    assert _write(local, "Another queue decision")["data"]["folder"] == "memories/"
    assert local.data("status")["layout_advice"] is None
