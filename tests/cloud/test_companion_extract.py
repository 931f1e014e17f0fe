"""`companion FILE --extract`: Box AI structured extraction fills the companion, marked ai_extracted.

The emulator's extraction is deterministic: it reads `key: value` lines of the file (here a PDF
whose bytes carry them), so the filled fields can be checked exactly.
"""

from __future__ import annotations

from typing import Any

from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend

PDF = (
    b"%PDF-1.4\n"
    b"Summary: Services agreement between Acme and Beta\n"
    b"Parties: Acme Corp; Beta LLC\n"
    b"Dates: 2026-03-01\n"
    b"Amounts: 12000 USD\n"
    b"%%EOF\n"
)
WANT = {
    "summary": "Services agreement between Acme and Beta",
    "parties": "Acme Corp; Beta LLC",
    "dates": "2026-03-01",
    "amounts": "12000 USD",
}


def test_extract_fills_the_companion_and_keeps_the_answer_verbatim(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    cloud.put("files/contract.pdf", PDF)
    emu.reset_calls()
    data = cloud.data("companion", "files/contract.pdf", "--extract")
    assert data["ai_extracted"] is True and data["extracted"] == WANT
    text = cloud.path(data["path"]).read_text()
    assert "ai_extracted: true" in text and "## Box AI extraction" in text
    assert '"parties": "Acme Corp; Beta LLC"' in text  # the model's answer, verbatim
    calls = [c for c in emu.calls if c.name == "ai_extract_structured_from_fields"]
    assert len(calls) == 1 and calls[0].arguments["file_ids"] == [
        emu.fs.id_for_path(f"{cloud.name}/files/contract.pdf")
    ]


def test_the_newer_catalogue_uses_the_enhanced_extraction(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud-newer")
    cloud.put("files/contract.pdf", PDF)
    data = cloud.data("companion", "files/contract.pdf", "--extract")
    assert data["extracted"] == WANT
    assert [c.name for c in emu.calls if c.name.startswith("ai_")] == [
        "ai_extract_structured_from_fields_enhanced"
    ]


def test_without_box_ai_it_says_why_and_writes_the_skeleton(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    cloud.put("files/contract.pdf", PDF)
    emu.configure(hidden_tools={"ai_extract_structured_from_fields"})
    env = cloud.run("companion", "files/contract.pdf", "--extract")
    assert env["data"]["ai_extracted"] is False
    assert any("Box AI is not available" in w and "skeleton" in w for w in env["warnings"])
    text = cloud.path(env["data"]["path"]).read_text()
    assert "ai_extracted" not in text and "_To fill in" in text


def test_extract_is_off_by_default(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud")
    cloud.put("files/contract.pdf", PDF)
    emu.reset_calls()
    data = cloud.data("companion", "files/contract.pdf")
    assert data["ai_extracted"] is False
    assert not [c for c in emu.calls if c.name.startswith("ai_")]


def test_a_local_workspace_explains_that_box_ai_needs_box(make: Any) -> None:
    local: Backend = make("local")
    local.put("files/contract.pdf", PDF)
    env = local.run("companion", "files/contract.pdf", "--extract")
    assert env["data"]["ai_extracted"] is False
    assert any("needs a Box workspace" in w for w in env["warnings"])
