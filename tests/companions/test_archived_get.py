"""A superseded companion is archived, not indexed; `get` and `get --history` still find it."""

from __future__ import annotations

from pathlib import Path


def test_get_and_history_reach_archived_companions(ws: Path, cli) -> None:
    binary = ws / "files" / "plan.pdf"
    binary.write_bytes(b"%PDF-1.4 first\n")
    first = cli.json("companion", str(binary), "--body", "First look.", "-w", str(ws))["data"]
    binary.write_bytes(b"%PDF-1.4 second\n")
    second = cli.json("companion", str(binary), "--body", "Second look.", "-w", str(ws))["data"]
    first_id, second_id = first["id"], second["id"]
    assert first_id != second_id
    old = cli.json("get", first_id, "-w", str(ws))["data"]
    assert old["archived"] is True and old["path"].startswith("_archive/companions/")
    assert old["frontmatter"]["status"] == "superseded" and old["current_id"] == second_id
    for ref in (first_id, second_id):
        hist = cli.json("get", ref, "--history", "-w", str(ws))["data"]["history"]
        assert [h["id"] for h in hist] == [first_id, second_id]
    # An id nobody wrote is still not found.
    cli.json("get", "mem_01HXYZA1B2C3D4E5F6G7H8J9ZZ", "-w", str(ws), code=1)
