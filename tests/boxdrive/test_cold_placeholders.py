"""A first recall on a Box Drive workspace whose memory files are online-only placeholders.

Reading a placeholder makes Box Drive download it, so recall never reads one: such a memory is
found by its index entry (title, slug, tags, filters), its text is not searched, and the answer
says so. Once the file is on the machine (opened, or the folder made available offline), the next
recall reads it.

The placeholder flags exist only on macOS (st_flags) and Windows (st_file_attributes); here the
platform's answer is replaced, as in test_hanging_reads.py: a file whose modified time ends in
MARK nanoseconds is what the file system would call online-only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from box_memory.format import safeio
from box_memory.store.local import LocalStore
from tests.conftest import Cli

MARK = 424_242  # nanoseconds: the stand-in for the platform's "content not on this machine" flag


@pytest.fixture
def drive(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    root = tmp_path / "ws"
    cli.json("init", "drive", "--path", str(root))
    made: dict[str, Any] = {"root": root, "paths": {}}
    for name, body in [
        ("Payments ledger", "The ledger reconciles nightly with the gannet job."),
        ("Search cluster", "Shards rebalance when the ocelot alarm fires."),
        ("Deploy window", "Deploys stop on Fridays after the pelican freeze."),
    ]:
        env = cli.json("write", body, "--title", name, "-w", str(root))
        made["paths"][name] = root / env["data"]["file"]
        made.setdefault("ids", {})[name] = env["data"]["id"]
    online = [made["paths"]["Payments ledger"], made["paths"]["Search cluster"]]
    for p in online:
        t = (p.stat().st_mtime_ns // 1_000_000_000) * 1_000_000_000 + MARK
        os.utime(p, ns=(t, t))
    monkeypatch.setattr(safeio, "_NOT_LOCAL_FLAGS", True)
    monkeypatch.setattr(safeio, "_not_local", lambda st: st.st_mtime_ns % 1_000_000_000 == MARK)
    reads: list[str] = []
    real = LocalStore.read_bytes

    def recording(self: LocalStore, path: str) -> bytes:
        reads.append(path)
        return real(self, path)

    monkeypatch.setattr(LocalStore, "read_bytes", recording)
    real_many = LocalStore.read_files

    def recording_many(self: LocalStore, paths: list[str]) -> dict[str, Any]:
        got = real_many(self, paths)
        reads.extend(p for p, (_st, raw) in got.items() if raw is not None)
        return got

    monkeypatch.setattr(LocalStore, "read_files", recording_many)
    made["reads"], made["online"] = reads, online
    return made


def _recall(cli: Cli, drive: dict[str, Any], *q: str) -> dict[str, Any]:
    return cli.json("recall", *q, "-w", str(drive["root"]))


def test_a_first_recall_reads_no_placeholder_and_says_what_it_could_not_search(
    cli: Cli, drive: dict[str, Any]
) -> None:
    env = _recall(cli, drive, "Payments ledger")  # a title: from the index entry
    assert env["data"]["hits"][0]["id"] == drive["ids"]["Payments ledger"]
    online = [w for w in env["warnings"] if "online-only in Box Drive" in w]
    assert len(online) == 1 and online[0].startswith("2 memories"), env["warnings"]
    env = _recall(cli, drive, "gannet")  # only in a placeholder's body: not searched, and said
    assert env["data"]["hits"] == []
    assert any("online-only in Box Drive" in w for w in env["warnings"]), env["warnings"]
    env = _recall(cli, drive, "pelican")  # a body on this machine is searched as always
    assert [h["id"] for h in env["data"]["hits"]] == [drive["ids"]["Deploy window"]]
    read = {Path(p).name for p in drive["reads"]}
    assert not read & {p.name for p in drive["online"]}, read  # never downloaded for recall
    assert drive["paths"]["Deploy window"].name in read


def test_a_placeholder_made_local_is_read_by_the_next_recall(cli: Cli, drive: dict[str, Any]) -> None:
    assert _recall(cli, drive, "ocelot")["data"]["hits"] == []
    p = drive["paths"]["Search cluster"]
    os.utime(p, ns=(p.stat().st_mtime_ns + 1, p.stat().st_mtime_ns + 1))  # downloaded: flag gone
    env = _recall(cli, drive, "ocelot")
    assert [h["id"] for h in env["data"]["hits"]] == [drive["ids"]["Search cluster"]]
    online = [w for w in env["warnings"] if "online-only in Box Drive" in w]
    assert len(online) == 1 and online[0].startswith("1 memories"), env["warnings"]


def test_fetch_downloads_the_placeholders_and_recall_then_searches_their_text(
    cli: Cli, drive: dict[str, Any]
) -> None:
    assert _recall(cli, drive, "gannet")["data"]["hits"] == []
    env = cli.json("fetch", "-w", str(drive["root"]))
    assert env["data"]["fetched"] == 2 and env["data"]["remaining"] == 0
    assert env["data"]["pace"]["calls_per_minute"] is None  # Box Drive does the transfer
    env = _recall(cli, drive, "gannet")
    assert [h["id"] for h in env["data"]["hits"]] == [drive["ids"]["Payments ledger"]]
