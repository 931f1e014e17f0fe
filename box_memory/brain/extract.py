"""Text of PDF and Office (DOCX, XLSX, PPTX) files in a local (Box Drive) source.

Office files are zip archives of XML: the text is read straight from the XML parts (`<w:t>` runs
in word/document.xml, shared and inline strings of xl/, `<a:t>` runs of ppt/slides/) with a regex,
so no entity is ever expanded and nothing but those parts is read; every part is read with a cap on
its decompressed size (a zip bomb gets truncated, not unpacked). PDF text comes from pypdf (a
maintained pure-Python library) when it is installed; without it a PDF stays metadata only.
The text is untrusted document data, cut to `limit` characters by the caller's settings.
"""

from __future__ import annotations

import html
import io
import re
import zipfile

MAX_PART_BYTES = 8 * 1024 * 1024  # decompressed bytes read from one XML part
MAX_PARTS = 400  # slides/sheets read at most
OFFICE = ("docx", "xlsx", "pptx")

_PARA_END = re.compile(r"</w:p>|</a:p>|</si>|</row>|</c>")
_RUN = {
    "docx": re.compile(r"<w:t(?:\s[^>]*)?>([^<]*)</w:t>"),
    "pptx": re.compile(r"<a:t(?:\s[^>]*)?>([^<]*)</a:t>"),
    "xlsx": re.compile(r"<(?:t|v)(?:\s[^>]*)?>([^<]*)</(?:t|v)>"),
}


class NoText(Exception):
    """The file holds no extractable text (the reason is the message)."""


def _read_part(z: zipfile.ZipFile, name: str) -> str:
    with z.open(name) as f:
        data = f.read(MAX_PART_BYTES)
    return data.decode("utf-8", "replace")


def _runs(xml: str, kind: str, limit: int) -> str:
    out: list[str] = []
    size = 0
    pos = 0
    rx = _RUN[kind]
    for m in rx.finditer(xml):
        # A paragraph, cell or shared string ending between two runs becomes a line break.
        if _PARA_END.search(xml, pos, m.start()):
            out.append("\n")
        out.append(html.unescape(m.group(1)))
        size += len(m.group(1))
        pos = m.end()
        if size > limit:
            break
    return "".join(out)


def _slide_no(name: str) -> int:
    m = re.search(r"(\d+)\.xml$", name)
    return int(m.group(1)) if m else 0


def office_text(data: bytes, ext: str, limit: int) -> str:
    """The text of a DOCX, XLSX or PPTX file (raises NoText when there is none)."""
    try:
        z = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as e:
        raise NoText(f"not a readable .{ext} file ({e})") from None
    with z:
        names = z.namelist()
        if ext == "docx":
            parts = [n for n in names if n == "word/document.xml"]
        elif ext == "pptx":
            parts = sorted((n for n in names if re.fullmatch(r"ppt/slides/slide\d+\.xml", n)), key=_slide_no)
        else:
            parts = [n for n in names if n == "xl/sharedStrings.xml"] + sorted(
                (n for n in names if re.fullmatch(r"xl/worksheets/sheet\d+\.xml", n)), key=_slide_no
            )
        chunks: list[str] = []
        total = 0
        for name in parts[:MAX_PARTS]:
            try:
                text = _runs(_read_part(z, name), ext, limit)
            except (zipfile.BadZipFile, OSError, RuntimeError, EOFError) as e:
                raise NoText(f"cannot read {name} in the .{ext} file ({e})") from None
            if text.strip():
                chunks.append(text.strip())
                total += len(text)
            if total > limit:
                break
    text = "\n\n".join(chunks)
    if not text.strip():
        raise NoText(f"no text found in the .{ext} file")
    return text


def pdf_text(data: bytes, limit: int) -> str:
    """The text of a PDF through pypdf (raises NoText when pypdf is missing or finds no text)."""
    try:
        from pypdf import PdfReader
        from pypdf.errors import PyPdfError
    except ImportError:
        raise NoText("PDF text needs the pypdf package (pip install pypdf)") from None
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # malformed-PDF chatter is not ours to print
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise NoText("the PDF is encrypted")
        chunks: list[str] = []
        total = 0
        for page in reader.pages:
            text = page.extract_text() or ""
            if text.strip():
                chunks.append(text.strip())
                total += len(text)
            if total > limit:
                break
    except NoText:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, RecursionError, OSError) as e:
        raise NoText(f"cannot read the PDF ({type(e).__name__})") from None
    text = "\n\n".join(chunks)
    if not text.strip():
        raise NoText("no text layer in the PDF (scanned?)")
    return text
