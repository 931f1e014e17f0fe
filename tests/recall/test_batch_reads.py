"""A cold build reads its memory files many at a time (`LocalStore.read_files`, over
`safeio.read_names`): one open folder, one lookup per name. It answers only the plain case; every
file it leaves out is read one by one as before. So a workspace with hostile files in place of
memories - a FIFO, a link out of the workspace, a link inside it, an oversized file, a folder -
must give exactly the recall answers and warnings the one-by-one reads give, and nothing hangs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from box_memory.format import safeio
from box_memory.format.safeio import LIMITS, read_names
from box_memory.recall import cache_db
from box_memory.store.local import LocalStore
from tests.conftest import Cli
from tests.recall.helpers import drop_caches, put, reindex

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs")


@pytest.fixture
def root(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    for n in range(12):
        put(root, f"Kafka note {n}", f"Kafka retention and quota {n}.", n=n + 1, tags=["kafka"])
    reindex(root)
    mem = root / "memories"
    secret = tmp_path / "secret.md"
    secret.write_text("---\ntitle: secret\n---\nkafka password hunter2\n")
    files = sorted(p for p in mem.glob("*.md") if p.name != "README.md")
    files[0].unlink()
    os.mkfifo(files[0])
    files[1].unlink()
    files[1].symlink_to(secret)
    files[2].unlink()
    files[2].symlink_to(files[3])
    files[4].write_bytes(b"x" * (LIMITS["memory"] + 1))
    files[5].unlink()
    files[5].mkdir()
    return root


def _cold(cli: Cli, root: Path) -> tuple[list[Any], list[str]]:
    drop_caches()
    env = cli.json("recall", "kafka", "-w", str(root), "--limit", "50")
    return sorted((h["id"], h["title"]) for h in env["data"]["hits"]), sorted(env["warnings"])


def test_hostile_files_give_what_one_by_one_reads_give(
    root: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = LocalStore.read_files

    def counted(self: LocalStore, paths: list[str]) -> dict[str, Any]:
        got = real(self, paths)
        calls.append(len(got))
        return got

    monkeypatch.setattr(LocalStore, "read_files", counted)
    batched = _cold(cli, root)
    assert calls and calls[0] >= 6  # the plain files were read together
    monkeypatch.setattr(cache_db, "as_batch_reads", lambda store: None)  # then one by one
    assert _cold(cli, root) == batched
    hits, warnings = batched
    assert len(hits) >= 6 and not any("hunter2" in str(h) for h in hits)
    assert warnings


def test_read_names_answers_only_the_plain_case(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    (d / "plain.md").write_bytes(b"hello")
    (d / "big.md").write_bytes(b"x" * (LIMITS["memory"] + 1))
    os.mkfifo(d / "fifo.md")
    (d / "link.md").symlink_to(d / "plain.md")
    (d / "dir.md").mkdir()
    names = ["plain.md", "big.md", "fifo.md", "link.md", "dir.md", "missing.md"]
    got = read_names(str(d), names, "memory")
    assert list(got) == ["plain.md"]
    st, raw = got["plain.md"]
    assert raw == b"hello" and st.st_ino == (d / "plain.md").stat().st_ino


def test_read_names_leaves_an_injected_fault_to_the_one_by_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.md").write_bytes(b"a")
    monkeypatch.setitem(safeio._FAULTS, "read", {"a.md": 1})
    assert read_names(str(tmp_path), ["a.md"], "memory") == {}
