"""A recall's freshness check never lists a folder to learn that a folder it asks for is missing.

Every call asks whether each scope's `companions/_index.json` exists; in the default (sibling)
layout those folders do not. Looking a missing name up by its NFC spelling (macOS hands back NFD
names) listed the parent folder each time: the workspace root and each team's folder on every call
of a long-lived `serve`, and a memory folder holding 40,000 names for a missing file in it. An
ASCII name has no other spelling on disk, so only a non-ASCII name is looked up by listing.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from box_memory.format.names import resolve_nfc
from box_memory.recall.cache import close_held
from box_memory.serve.server import MemoryServer
from tests.conftest import Cli
from tests.recall.helpers import put, reindex


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every folder `os.listdir` is asked for (a spy: the real call still runs)."""
    seen: list[str] = []
    real = os.listdir

    def spy(path: str | int | Path = ".") -> list[str]:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", spy)
    yield seen


def test_a_warm_serve_recall_lists_no_folder_for_folders_that_do_not_exist(
    cli: Cli, tmp_path: Path, listed: list[str]
) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "eng")
    put(root, "Auth strategy", "We sign tokens with rotating keys.", n=1, kind="decision")
    put(root, "Canary steps", "One percent first.", n=2, folder="teams/eng/memories")
    reindex(root)
    assert not (root / "companions").exists() and not (root / "teams" / "eng" / "companions").exists()
    server = MemoryServer(workspace=str(root))
    try:
        first = server.call("recall", {"query": "auth strategy"})
        listed.clear()
        again = server.call("recall", {"query": "auth strategy"})
    finally:
        close_held()
    assert again[0]["data"]["hits"] == first[0]["data"]["hits"] != []
    # The only listings left are the per-folder stats of memory files (by descriptor, not path).
    assert [p for p in listed if not p.isdigit()] == []


def test_a_missing_ascii_name_is_missing_without_a_listing(tmp_path: Path, listed: list[str]) -> None:
    (tmp_path / "memories").mkdir()
    assert resolve_nfc(tmp_path, "companions/_index.json") == tmp_path / "companions" / "_index.json"
    assert resolve_nfc(tmp_path, "memories/gone.md") == tmp_path / "memories" / "gone.md"
    assert listed == []


def test_a_non_ascii_name_is_still_found_in_its_other_spelling(tmp_path: Path, listed: list[str]) -> None:
    nfd = unicodedata.normalize("NFD", "Équipe")
    (tmp_path / "teams" / nfd / "memories").mkdir(parents=True)
    got = resolve_nfc(tmp_path, "teams/Équipe/memories")
    assert got == tmp_path / "teams" / nfd / "memories"
    assert listed == [str(tmp_path / "teams")]
