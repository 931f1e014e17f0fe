"""A file name collision (Box 409 Conflict, or an existing local file) keeps the memory's slug
and title as asked: only the file name takes -2, -3, and the index maps the slug to that file."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cloud.conftest import Backend


@pytest.mark.parametrize("kind", ["cloud", "local"])
def test_name_clash_keeps_slug_and_title(make: Any, kind: str) -> None:
    b: Backend = make(kind)
    # Files that are not memories the index knows hold the names the write would take.
    b.put("memories/decision__deploy-plan.md", b"\x00not a memory\x00")
    b.put("memories/decision__deploy-plan-2.md", b"\x00not a memory either\x00")
    env = b.run("write", "We decided to deploy on Tuesdays.", "--title", "Deploy plan", "--kind", "decision")
    data = env["data"]
    assert (data["slug"], data["title"]) == ("deploy-plan", "Deploy plan")
    assert data["file"] == "memories/decision__deploy-plan-3.md"
    idx = json.loads(b.path("memories/_index.json").read_bytes())
    assert idx["by_slug"]["deploy-plan"] == data["id"]
    entry = idx["entries"][idx["by_id"][data["id"]]]
    assert (entry["slug"], entry["filename"]) == ("deploy-plan", "decision__deploy-plan-3.md")
    # The clashing files are untouched; the memory is found by its slug, title and id.
    assert b.path("memories/decision__deploy-plan.md").read_bytes() == b"\x00not a memory\x00"
    for ref in ("deploy-plan", "[[Deploy plan]]", data["id"]):
        got = b.data("get", ref)
        assert got["id"] == data["id"] and "Tuesdays" in got["body"]
        assert got["frontmatter"]["slug"] == "deploy-plan"
