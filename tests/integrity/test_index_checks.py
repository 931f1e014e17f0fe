"""A large local index this user's box-memory saved or checked is not type-checked entry by entry
again while its file keeps the same stat signature (workspace/index.py: CHECKED_MIN_BYTES); any
other index - edited by another tool, or with no hint - is checked as before."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from box_memory.workspace import index


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    monkeypatch.setattr(index, "CHECKED_MIN_BYTES", 0)  # "large" is any index here
    seen: list[int] = []
    real = index._entries_well_typed

    def counting(entries: list[Any]) -> bool:
        seen.append(len(entries))
        return real(entries)

    monkeypatch.setattr(index, "_entries_well_typed", counting)
    return seen


def test_an_index_saved_by_the_last_write_is_not_checked_again(cli: Any, ws: Path, checks: list[int]) -> None:
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    checks.clear()
    cli.json("write", "second", "--title", "Second", "-w", str(ws))
    assert checks == []
    env = cli.json("recall", "second", "-w", str(ws))
    assert [h["title"] for h in env["data"]["hits"]] == ["Second"]


def test_an_index_another_tool_replaced_is_checked_and_refused_when_malformed(
    cli: Any, ws: Path, checks: list[int]
) -> None:
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    path = ws / "memories" / "_index.json"
    data = json.loads(path.read_bytes())
    data["entries"][0]["title"] = 5  # a number where the format has text
    path.write_text(json.dumps(data))
    checks.clear()
    env = cli.json("write", "second", "--title", "Second", "-w", str(ws), code=None)
    assert checks, "the replaced index was not checked"
    assert env["errors"][0]["code"] == "invalid_file"
    assert "title of the wrong type" in env["errors"][0]["message"]


def test_a_hint_file_that_is_not_json_is_ignored(cli: Any, ws: Path, checks: list[int]) -> None:
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    hints = list((Path(os.environ["BOX_MEMORY_HOME"]) / "cache" / "index-checks").glob("*.json"))
    assert hints
    for h in hints:
        h.write_bytes(b"\x00not json")
    checks.clear()
    cli.json("write", "second", "--title", "Second", "-w", str(ws))
    assert checks  # checked again, and the write went through
