"""A local (Box Drive) source reads the text of PDF and Office files, and its recall hits carry the
file's absolute path and a file:// URL so a person can open them."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from tests.brain.helpers import entries, items, sync
from tests.conftest import Cli


def _zip(parts: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types/>')
        for name, xml in parts.items():
            z.writestr(name, xml)
    return buf.getvalue()


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'

DOCX = _zip(
    {
        "word/document.xml": f"<w:document {W}><w:body>"
        "<w:p><w:r><w:t>Retention policy: keep invoices</w:t></w:r>"
        '<w:r><w:t xml:space="preserve"> seven years &amp; archive them.</w:t></w:r></w:p>'
        "<w:p><w:r><w:t>Owner: the albatross team.</w:t></w:r></w:p>"
        "</w:body></w:document>"
    }
)
XLSX = _zip(
    {
        "xl/sharedStrings.xml": "<sst><si><t>region</t></si><si><t>cormorant quota</t></si></sst>",
        "xl/worksheets/sheet1.xml": '<worksheet><sheetData><row><c t="s"><v>0</v></c>'
        "<c><v>42</v></c></row></sheetData></worksheet>",
    }
)
PPTX = _zip(
    {
        "ppt/slides/slide2.xml": f"<p:sld {A}><a:p><a:r><a:t>Second: the puffin rollout</a:t></a:r></a:p>"
        "</p:sld>",
        "ppt/slides/slide1.xml": f"<p:sld {A}><a:p><a:r><a:t>First: kickoff</a:t></a:r></a:p></p:sld>",
    }
)


def _pdf(text: str) -> bytes:
    """A one-page PDF whose content stream draws `text` in Helvetica (xref offsets computed)."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


def test_office_files_are_read_through_their_xml(cli: Cli, ws: Path, tmp_path: Path) -> None:
    drive = tmp_path / "Box"
    drive.mkdir()
    (drive / "policy.docx").write_bytes(DOCX)
    (drive / "quota.xlsx").write_bytes(XLSX)
    (drive / "deck.pptx").write_bytes(PPTX)
    (drive / "broken.docx").write_bytes(b"not a zip")
    sync(cli, "--path", str(drive))
    got = items()
    assert {k: got[k]["status"] for k in got} == {
        "policy.docx": "indexed",
        "quota.xlsx": "indexed",
        "deck.pptx": "indexed",
        "broken.docx": "metadata_only",
    }
    text = entries()
    assert (
        "Retention policy: keep invoices seven years & archive them.\nOwner: the albatross team."
        in text["policy.docx"]
    )
    assert "cormorant quota" in text["quota.xlsx"] and "42" in text["quota.xlsx"]
    deck = text["deck.pptx"]
    assert deck.index("First: kickoff") < deck.index("Second: the puffin rollout")
    hits = cli.json("recall", "albatross", "-w", str(ws))["data"]["brain"]
    assert [h["name"] for h in hits] == ["policy.docx"]
    assert hits[0]["local_path"] == str((drive / "policy.docx").resolve())
    assert hits[0]["url"] == (drive / "policy.docx").resolve().as_uri()


def test_pdf_text_is_imported(cli: Cli, ws: Path, tmp_path: Path) -> None:
    pytest.importorskip("pypdf", reason="PDF text needs pypdf (a declared dependency)")
    drive = tmp_path / "Box"
    drive.mkdir()
    (drive / "minutes.pdf").write_bytes(_pdf("Board minutes: approve the gannet budget"))
    sync(cli, "--path", str(drive))
    assert items()["minutes.pdf"]["status"] == "indexed"
    assert "approve the gannet budget" in entries()["minutes.pdf"]
    hits = cli.json("recall", "gannet budget", "-w", str(ws))["data"]["brain"]
    assert [h["name"] for h in hits] == ["minutes.pdf"]
    assert hits[0]["url"].startswith("file://")
