"""Box folder listings reused between commands while the workspace root lists unchanged.

Every writer takes `_box-memory.lock` (a new version of a file in the root) before it changes an
index, so an unchanged root means the other folders' listings still hold: a warm recall lists the
root only, and a write needs no folder listing besides it. These tests turn the reuse back on
(tests/conftest.py turns it off for the rest of the suite, whose tests edit Box behind the lock's
back) and count the billed calls the emulator sees: `initialize`, `tools/list`, `tools/call`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.store.cloud.lease import _next_version
from tests.cloud.conftest import Backend

BILLED = ("initialize", "tools/list", "tools/call")


@pytest.fixture
def reuse(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("BOX_MEMORY_LISTING_TRUST_S", "60")
    return monkeypatch


def _billed(emu: Emulator) -> int:
    return sum(emu.counters.get(f"rpc:{m}", 0) for m in BILLED)


def _calls(emu: Emulator) -> list[str]:
    return [c.name for c in emu.calls]


def _seed(cloud: Backend) -> None:
    for title, text in (("Auth tokens", "We chose JWT for auth."), ("Caching", "Redis caches sessions.")):
        cloud.data("write", text, "--title", title)
    cloud.data("write", "Team billing runs nightly.", "--title", "Billing", "--team", "default")


def test_a_warm_recall_lists_the_root_only(make: Any, emu: Emulator, reuse: Any) -> None:
    cloud: Backend = make("cloud")
    _seed(cloud)
    cloud.data("recall", "JWT")  # warms the recall cache
    emu.reset_calls()
    hits = cloud.data("recall", "JWT")["hits"]
    assert [h["title"] for h in hits] == ["Auth tokens"]
    assert _calls(emu) == ["list_folder_content_by_folder_id"]
    assert emu.calls[0].arguments["folder_id"] == emu.fs.id_for_path(cloud.name)  # the root
    assert _billed(emu) <= 2


def test_a_write_lists_no_folder_but_the_root(make: Any, emu: Emulator, reuse: Any) -> None:
    cloud: Backend = make("cloud")
    _seed(cloud)
    emu.reset_calls()
    w = cloud.data("write", "Use Postgres.", "--title", "Database")
    names = _calls(emu)
    assert names.count("list_folder_content_by_folder_id") == 1, names
    assert _billed(emu) <= 10, names
    # ... and what it wrote is all there: the file, its index entry, the next command sees it.
    assert "Use Postgres." in cloud.path(w["file"]).read_text(encoding="utf-8")
    index = json.loads(cloud.path("memories/_index.json").read_text(encoding="utf-8"))
    assert w["id"] in index["by_id"]
    assert [h["id"] for h in cloud.data("recall", "Postgres")["hits"]] == [w["id"]]


def test_another_machines_locked_write_is_seen_at_once(
    make: Any, emu: Emulator, reuse: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cloud: Backend = make("cloud")
    _seed(cloud)
    home_a = tmp_path / "machine-a"
    home_b = tmp_path / "machine-b"
    reuse.setenv("BOX_MEMORY_HOME", str(home_a))
    cloud.data("recall", "JWT")  # machine A keeps its listings
    reuse.setenv("BOX_MEMORY_HOME", str(home_b))
    theirs = cloud.data("write", "Kafka retries back off.", "--title", "Kafka retry")
    reuse.setenv("BOX_MEMORY_HOME", str(home_a))
    emu.reset_calls()
    hits = cloud.data("recall", "Kafka")["hits"]
    assert [h["id"] for h in hits] == [theirs["id"]]
    assert _calls(emu).count("list_folder_content_by_folder_id") > 1  # the root changed: listed anew


def test_an_edit_made_without_the_lock_is_seen_once_the_listing_is_older_than_the_window(
    make: Any, emu: Emulator, reuse: pytest.MonkeyPatch
) -> None:
    cloud: Backend = make("cloud")
    _seed(cloud)
    reuse.setenv("BOX_MEMORY_LISTING_TRUST_S", "1")
    cloud.data("recall", "JWT")
    path = cloud.path("memories/decision__auth-tokens.md")
    if not path.exists():
        path = next(cloud.path("memories").glob("*auth-tokens.md"))
    path.write_text(path.read_text(encoding="utf-8").replace("JWT", "PASETO"), encoding="utf-8")
    # index-rebuild --check never reuses a listing: it is what finds such edits.
    check = cloud.run("index-rebuild", "--check", code=6)
    assert check["data"]["drift"]
    time.sleep(1.1)
    env = cloud.run("recall", "PASETO")
    assert [h["title"] for h in env["data"]["hits"]] == ["Auth tokens"]


def test_a_damaged_listing_file_costs_only_the_listings(make: Any, emu: Emulator, reuse: Any) -> None:
    cloud: Backend = make("cloud")
    _seed(cloud)
    cloud.data("recall", "JWT")
    from box_memory.paths import user_dirs

    found = list(user_dirs().cache.glob("box/*/listings.json"))
    assert found, "the warm recall kept its listings on disk"
    for f in found:
        f.write_bytes(b"{not json")
    emu.reset_calls()
    assert [h["title"] for h in cloud.data("recall", "JWT")["hits"]] == ["Auth tokens"]
    assert _calls(emu).count("list_folder_content_by_folder_id") > 1


def test_next_version_is_one_etag_up() -> None:
    assert _next_version("4", "5")
    assert not _next_version("4", "6")  # another version in between
    assert not _next_version(None, "1")
    assert not _next_version("abc", "abd")  # not a counter: assume a writer in between


def test_a_warm_recalls_excerpts_come_from_the_content_cache_never_a_download(
    make: Any, emu: Emulator, reuse: Any
) -> None:
    """The recall cache keeps no bodies: excerpts are read back from the files, on Box from the
    content cache only. Without it a recall still answers (no excerpt) and downloads nothing."""
    from box_memory.paths import user_dirs

    cloud: Backend = make("cloud")
    _seed(cloud)
    cloud.data("recall", "JWT")  # builds the recall cache; the bodies land in the content cache
    emu.reset_calls()
    (hit,) = cloud.data("recall", "JWT")["hits"]
    assert "We chose JWT for auth." in hit["excerpt"]
    assert _calls(emu) == ["list_folder_content_by_folder_id"]
    memory_texts = [
        p for p in (user_dirs().cache / "box").rglob("*") if p.is_file() and p.read_bytes()[:3] == b"---"
    ]
    assert memory_texts
    for p in memory_texts:  # the memory files' bodies leave the content cache (indexes stay)
        p.unlink()
    emu.reset_calls()
    (hit,) = cloud.data("recall", "JWT")["hits"]
    assert hit["title"] == "Auth tokens" and "JWT" not in hit["excerpt"]
    assert _calls(emu) == ["list_folder_content_by_folder_id"]  # no get_file_content, no download
