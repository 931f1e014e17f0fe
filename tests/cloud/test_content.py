"""File content from Box is never accepted or cached unless its sha1 matches the listing.

The emulator answers `get_file_content` the ways Box's text representations can: "still being
generated" as a success (`content_pending`), or text that is not the file's bytes
(`content_inexact`). The store must fall back to the download URL's bytes, retry, and in the end
fail the read with one clear error; recall skips such a memory with a warning.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.errors import ContentUnverified
from box_memory.paths import user_dirs
from box_memory.store.cloud import CloudStore
from tests.cloud.conftest import Backend

BODY = b"line with trailing spaces   \nsecond line\n"


@pytest.fixture
def cloud(make: Any, monkeypatch: pytest.MonkeyPatch) -> Backend:
    monkeypatch.setenv("BOX_MEMORY_CONTENT_BACKOFF_S", "0")
    backend: Backend = make("cloud")
    backend.put("files/note.md", BODY)  # behind the tool's back: nothing cached for it
    return backend


def _calls(emu: Emulator) -> Counter[str]:
    return Counter(c.name for c in emu.calls)


def _cached(store: CloudStore) -> list[str]:
    return sorted(p.name for p in store.cache.folder.glob("*")) if store.cache.folder.exists() else []


def test_inexact_text_falls_back_to_the_downloaded_bytes(store: CloudStore, emu: Emulator) -> None:
    emu.configure(content_inexact=True)
    emu.reset_calls()
    assert store.read_bytes("files/note.md") == BODY
    assert _calls(emu)["get_download_url"] == 1
    sha = hashlib.sha1(BODY).hexdigest()
    assert any(name.endswith("." + sha) for name in _cached(store))


def test_pending_answers_are_retried_then_accepted(store: CloudStore, emu: Emulator) -> None:
    emu.configure(content_pending=2, hidden_tools={"get_download_url"})
    emu.reset_calls()
    assert store.read_bytes("files/note.md") == BODY
    assert _calls(emu)["get_file_content"] == 3


def test_content_that_never_verifies_fails_and_caches_nothing(store: CloudStore, emu: Emulator) -> None:
    emu.configure(content_inexact=True, hidden_tools={"get_download_url"})
    before = _cached(store)
    emu.reset_calls()
    with pytest.raises(ContentUnverified) as err:
        store.read_bytes("files/note.md")
    assert "files/note.md" in str(err.value) and "not byte-exact" in str(err.value)
    assert _calls(emu)["get_file_content"] == 3
    assert _cached(store) == before


def test_always_pending_text_with_a_download_tool_reads_the_bytes(store: CloudStore, emu: Emulator) -> None:
    emu.configure(content_pending=-1)
    assert store.read_bytes("files/note.md") == BODY


def test_recall_skips_an_unverifiable_memory_with_a_warning(cloud: Backend, emu: Emulator) -> None:
    cloud.data("write", "We decided to use JWT for auth.", "--title", "Auth tokens")
    cloud.data("write", "Redis caches JWT sessions.", "--title", "Session cache")
    shutil.rmtree(user_dirs().cache)  # a new machine: no file text, no recall cache
    emu.configure(content_inexact=True, hidden_tools={"get_download_url"})
    env = cloud.run("recall", "JWT")
    assert env["data"]["hits"] == []
    skipped = [w for w in env["warnings"] if "recall skipped this memory" in w]
    assert len(skipped) == 2, env["warnings"]
    emu.configure(content_inexact=False, hidden_tools=())
    hits = cloud.data("recall", "JWT")["hits"]
    assert sorted(h["title"] for h in hits) == ["Auth tokens", "Session cache"]
