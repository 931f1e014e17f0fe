"""A server's writes record the same layout of a large index as a look at every entry would.

A large index's save records where its values lie, whether `by_id` is in step with the entries,
their file names' digest and whether their slugs are plain (`workspace.index.Layout`): a later CLI
write appends to the bytes on the strength of it. A server keeps the index parsed between its
writes and carries what the last save found of the entries (`EntryFacts`) to the next, looking
at the appended entries alone. Whatever the mix of writes - appends, a supersede (an entry
replaced), unicode titles, a slug that is not plain, a CLI write in between - the layout recorded
after each write is the one a look at every entry of the file would record, and a CLI write
after the server's appends to the bytes and writes exactly what a full parse would.

"Large" is a few entries here (the thresholds lowered, as tests/integrity/test_index_append.py
does), so the tests run the code a 10,000-memory folder runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import box_memory.workspace.index as index_mod
from box_memory.serve.server import MemoryServer
from box_memory.workspace.resolve import open_workspace
from box_memory.write.commit import keep_folders
from tests.conftest import Cli
from tests.integrity.test_index_append import checked_write, lower_thresholds, spy_parses
from tests.integrity.util import bm_json

PATH = "memories/_index.json"
IN_STEP, INDEXED_NAMES = index_mod._in_step, index_mod._indexed_names  # as they are, unspied


@pytest.fixture
def root(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Path:
    lower_thresholds(monkeypatch)
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    for n in range(5):  # past COMPACT_ABOVE before the server starts
        cli.json("write", f"Seed note {n}.", "--title", f"Seed {n}", "-w", str(root))
    return root


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each look at every entry a save makes for the layout (a spy: the real one still runs)."""
    seen: list[str] = []
    for name in ("_in_step", "_indexed_names"):
        real = getattr(index_mod, name)

        def spy(*a: Any, _real: Any = real, _name: str = name) -> Any:
            seen.append(_name)
            return _real(*a)

        monkeypatch.setattr(index_mod, name, spy)
    return seen


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return spy_parses(monkeypatch)


def recorded(root: Path) -> list[Any] | None:
    hint = index_mod._checked_before(open_workspace(str(root))).get(index_mod._LAYOUT + PATH)
    return hint[1:] if isinstance(hint, list) else None


def from_scratch(root: Path) -> list[Any] | None:
    """The layout a save that looks at every entry records for the index file as it is."""
    raw = (root / PATH).read_bytes()
    data = orjson.loads(raw)
    entries = data["entries"]
    if not IN_STEP(data.get("by_id"), entries):
        return None
    names = INDEXED_NAMES(entries, data)
    digest = index_mod.names_digest(names) if names is not None else None
    return [len(entries), index_mod._spans(data, len(raw)), index_mod._plain_slugs(entries), digest]


def _write(server: MemoryServer, title: str, **more: Any) -> dict[str, Any]:
    out, is_error = server.call("write", {"content": f"Notes on {title}.", "title": title, **more})
    assert not is_error, out
    return out["data"]


def test_each_server_write_records_the_layout_a_look_at_every_entry_would(
    root: Path, cli: Cli, looks: list[str], parses: list[str]
) -> None:
    index_mod.keep_parsed()
    try:
        server = MemoryServer(workspace=str(root))
        first = _write(server, "Server one")
        assert recorded(root) == from_scratch(root) is not None
        looks.clear()
        for title in ('Café "quoted" naïve', "Emoji 🚀 launch plan", "Server four"):
            _write(server, title)
            assert recorded(root) == from_scratch(root)
        assert looks == [], looks  # appends only: the entries were not looked at again
        # A supersede replaces the old entry: every entry is looked at, and the layout still holds.
        _write(server, "Server one, revised", supersedes=first["id"])
        assert looks, "a replaced entry must not be taken from the last save's facts"
        assert recorded(root) == from_scratch(root)
        looks.clear()
        _write(server, "日本語のメモ")  # a slug that is not plain ASCII, if slugify keeps it
        _write(server, "Server six", tags=["auth", "ops"])
        assert recorded(root) == from_scratch(root)
        assert looks == []
        # Another process's write in between: the file changed, so it is parsed and looked at anew.
        bm_json("write", "From the CLI.", "--title", "CLI one", "-w", str(root))
        _write(server, "Server seven")
        assert looks, "an index another process wrote must be looked at whole"
        assert recorded(root) == from_scratch(root)
    finally:
        index_mod.forget_parsed()
        keep_folders(None)  # this process writes as a CLI from here on
    # A CLI write after the server's appends to the bytes on the strength of that layout, and
    # writes exactly what a parse of the whole index, an append and a dump would.
    checked_write(cli, root, parses, "CLI two")  # (and parsed no index)


def test_a_new_memory_id_is_told_from_a_known_one_without_a_set_of_every_id(root: Path) -> None:
    """The kept data's `by_id` is in step with its entries, so an id it lacks is new; once this
    index appended an entry of its own, an id it lacks may be that entry's, and the set decides."""
    ws = open_workspace(str(root))
    idx = index_mod.load_index(ws, "memories")
    idx.finalize("unknown")
    idx.to_bytes()
    again = index_mod.FolderIndex("memories", idx.data, _facts=idx._facts)
    assert again._as_saved()
    entry = {**again.entries[0], "id": "mem_01JZZZZZZZZZZZZZZZZZZZZZZZ", "filename": "x.md", "slug": "x"}
    again.upsert(entry)
    assert not again._as_saved()  # appended since: the set of ids answers from here on
    again.upsert({**entry, "title": "the same id again"})
    assert [e["id"] for e in again.entries].count(entry["id"]) == 1
    assert again.dirty  # a replacement, never a second entry with that id
