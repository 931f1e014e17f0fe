"""Box Drive placeholders searched through Box: a first recall on a Box Drive folder whose memory
files are online-only reads none of them, yet finds a word that only their bodies hold, through
Box search over the workspace's Box folder, when this user has Box credentials.

The Box Drive folder is the emulator's own copy of a workspace made on Box (the emulator serves a
local folder, as Box Drive mirrors Box): recall runs on it as a local workspace. The placeholder
flags exist only on macOS and Windows; as in tests/boxdrive/test_cold_placeholders.py, a file
whose modified time ends in MARK nanoseconds is what the file system would call online-only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.format import safeio
from box_memory.recall.pending import LAG_NOTE
from box_memory.store.local import LocalStore
from tests.cloud.conftest import Backend
from tests.conftest import Cli

MARK = 424_242  # nanoseconds: the stand-in for the platform's "content not on this machine" flag
NOTES = [
    ("Payments ledger", "The ledger reconciles nightly with the gannet job."),
    ("Search cluster", "Shards rebalance when the ocelot alarm fires."),
    ("Deploy window", "Deploys stop on Fridays after the pelican freeze."),
]


@pytest.fixture
def drive(cloud: Backend, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A workspace written on Box, its folder seen as Box Drive shows it: two notes online-only."""
    made: dict[str, Any] = {"root": cloud.root, "paths": {}, "ids": {}}
    for title, body in NOTES:
        data = cloud.data("write", body, "--title", title)
        made["ids"][title] = data["id"]
        made["paths"][title] = cloud.root / data["file"]
    made["online"] = [made["paths"]["Payments ledger"], made["paths"]["Search cluster"]]
    for p in made["online"]:
        t = (p.stat().st_mtime_ns // 1_000_000_000) * 1_000_000_000 + MARK
        os.utime(p, ns=(t, t))
    monkeypatch.setattr(safeio, "_NOT_LOCAL_FLAGS", True)
    monkeypatch.setattr(safeio, "_not_local", lambda st: st.st_mtime_ns % 1_000_000_000 == MARK)
    reads: list[str] = []
    real, real_many = LocalStore.read_bytes, LocalStore.read_files

    def recording(self: LocalStore, path: str) -> bytes:
        reads.append(path)
        return real(self, path)

    def recording_many(self: LocalStore, paths: list[str]) -> dict[str, Any]:
        got = real_many(self, paths)
        reads.extend(p for p, (_st, raw) in got.items() if raw is not None)
        return got

    monkeypatch.setattr(LocalStore, "read_bytes", recording)
    monkeypatch.setattr(LocalStore, "read_files", recording_many)
    made["reads"] = reads
    return made


def _recall(cli: Cli, drive: dict[str, Any], *q: str) -> dict[str, Any]:
    return cli.json("recall", *q, "-w", str(drive["root"]))


def _placeholders_read(drive: dict[str, Any]) -> set[str]:
    return {Path(p).name for p in drive["reads"]} & {p.name for p in drive["online"]}


def test_a_placeholder_body_is_found_through_box_search_and_not_downloaded(
    cli: Cli, emu: Emulator, drive: dict[str, Any]
) -> None:
    emu.reset_calls()
    env = _recall(cli, drive, "gannet")  # only in a placeholder's body
    assert [h["id"] for h in env["data"]["hits"]] == [drive["ids"]["Payments ledger"]], env
    assert "gannet" in env["data"]["hits"][0]["excerpt"]  # from the text fetched through Box
    said = [w for w in env["warnings"] if w.startswith(LAG_NOTE)]
    assert len(said) == 1 and "2 memories are online-only in Box Drive" in said[0], env["warnings"]
    names = [c.name for c in emu.calls]
    assert names.count("search_files_keyword") == 1, names
    assert names.count("get_file_content") <= 2, names  # the config, the one body the hit needs
    assert not _placeholders_read(drive)  # Box Drive was never asked for a placeholder

    # The fetched body is held: the word is found again, in the same order, and a word in a body
    # on this machine is searched as always, beside what Box search finds.
    env = _recall(cli, drive, "gannet")
    assert [h["id"] for h in env["data"]["hits"]] == [drive["ids"]["Payments ledger"]]
    env = _recall(cli, drive, "pelican")
    assert [h["id"] for h in env["data"]["hits"]] == [drive["ids"]["Deploy window"]]
    assert not _placeholders_read(drive)


def test_without_box_credentials_a_placeholder_body_is_not_searched_and_that_is_said(
    cli: Cli, emu: Emulator, drive: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BOX_ACCESS_TOKEN")
    emu.reset_calls()
    env = _recall(cli, drive, "ocelot")
    assert env["data"]["hits"] == []
    online = [w for w in env["warnings"] if "online-only in Box Drive" in w]
    assert len(online) == 1 and "no Box credentials" in online[0], env["warnings"]
    assert online[0].startswith("2 memories"), online
    assert not emu.calls  # nothing was asked of Box
    assert not _placeholders_read(drive)


def test_when_box_search_fails_recall_still_answers_from_the_indexes(
    cli: Cli, emu: Emulator, drive: dict[str, Any]
) -> None:
    emu.configure(disabled_tools=("search_files_keyword",))
    env = _recall(cli, drive, "Search cluster")  # a title: from the index entry
    assert env["data"]["hits"][0]["id"] == drive["ids"]["Search cluster"]
    env = _recall(cli, drive, "ocelot")
    assert env["data"]["hits"] == []
    assert any("online-only in Box Drive" in w and "text was not" in w for w in env["warnings"]), env
    assert not _placeholders_read(drive)
