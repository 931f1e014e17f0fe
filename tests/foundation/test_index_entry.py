"""IndexEntry: a typed, read-only view of one `_index.json` entry that keeps the entry as stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from box_memory.format.model import IndexEntry


def test_path_is_local_path_else_filename_in_the_folder() -> None:
    assert IndexEntry("memories", {"local_path": "teams/a/memories/x.md", "filename": "y.md"}).path == (
        "teams/a/memories/x.md"
    )
    assert IndexEntry("memories", {"filename": "x.md"}).path == "memories/x.md"
    empty = {"local_path": "", "filename": "x.md"}
    assert IndexEntry("teams/a/memories/", empty).path == "teams/a/memories/x.md"
    assert IndexEntry("", {"filename": "x.md"}).path == "x.md"


def test_typed_fields_read_through_and_unknown_keys_stay() -> None:
    raw = {"id": "mem_1", "status": "active", "kind": "fact", "title": "T", "x-plugin": {"k": [1]}}
    view = IndexEntry("memories", raw)
    typed = (view.id, view.status, view.kind, view.title, view.updated_at)
    assert typed == ("mem_1", "active", "fact", "T", "")
    assert view.get("x-plugin") == {"k": [1]} and view.raw is raw
    with pytest.raises(AttributeError):  # read-only
        view.folder = "elsewhere"  # type: ignore[misc]


def test_an_index_without_local_path_is_read_and_left_as_it_was(cli, ws: Path) -> None:
    """A plugin-made index has no `local_path`: export still finds the memory by filename, and
    reading the workspace does not rewrite the index."""
    cli.json("write", "Body of the memory.", "--title", "Plugin made", "-w", str(ws))
    index = ws / "memories" / "_index.json"
    data = json.loads(index.read_text())
    for e in data["entries"]:
        del e["local_path"]
        e["x-plugin"] = "kept"
    index.write_text(json.dumps(data, indent=2))
    before = index.read_bytes()
    out = ws.parent / "export.jsonl"
    env = cli.json("export", "-o", str(out), "-w", str(ws))
    assert env["data"]["count"] == 1
    record = json.loads(out.read_text())
    assert record["frontmatter"]["title"] == "Plugin made" and "Body of the memory." in record["body"]
    assert index.read_bytes() == before
