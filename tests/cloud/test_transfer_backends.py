"""import and export on both backends: a local folder and a Box workspace behind the emulator."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cloud.conftest import Backend

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def test_import_then_export_round_trip(bk: Backend, tmp_path: Path, make) -> None:
    src = FIXTURES / "mem0" / "get_all.json"
    data = bk.data("import", str(src))
    assert data["format"] == "mem0" and data["imported"] == 3 and data["failed"] == 1
    again = bk.data("import", str(src))
    assert again["imported"] == 0 and again["already_imported"] == 3
    hit = bk.data("recall", "oat milk")["hits"][0]
    mem = bk.data("get", hit["id"])["frontmatter"]
    assert mem["created_at"] == "2024-07-20T17:15:30.123Z"
    assert mem["sources"][0]["ref"] == "mem0:0b9d4a2e-6c1f-4f7e-9a51-3f2d8c7e1a01"

    first = bk.data("write", "We decided to page on p99.", "--title", "Paging policy")["id"]
    second = bk.data("write", "We decided to page on p95.", "--supersedes", first)["id"]
    out = tmp_path / "out.jsonl"
    exported = bk.data("export", "--include-superseded", "-o", str(out))
    assert exported["count"] == 5
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["id"] for r in records} >= {first, second}

    fresh = make("local")
    assert fresh.data("import", str(out))["imported"] == 5
    chain = fresh.data("get", first, "--history")["history"]
    assert [h["id"] for h in chain] == [first, second]
    for r in records:
        assert fresh.data("get", r["id"])["frontmatter"] == r["frontmatter"]
