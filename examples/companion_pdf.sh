#!/usr/bin/env bash
# A companion for a PDF: describe it once, pinned to its sha256; detect when the PDF changes.
# No Box account needed. Usage: bash examples/companion_pdf.sh [FOLDER]
set -euo pipefail
BM=${BOX_MEMORY:-box-memory}
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/box-memory-companion.XXXXXX")}
export BOX_MEMORY_HOME="${BOX_MEMORY_HOME:-$DIR/.home}"
WS="$DIR/workspace"
$BM init demo --path "$WS" -q

# A small, valid one-page PDF standing in for a real report.
python3 - "$WS/files/q3-report.pdf" <<'PY'
import sys
objs = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 144] /Contents 4 0 R >>"]
text = b"BT /F1 18 Tf 20 80 Td (Q3 revenue: 14.7M, up 23%) Tj ET"
objs.append(b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream")
out, offsets = bytearray(b"%PDF-1.4\n"), []
for i, body in enumerate(objs, 1):
    offsets.append(len(out))
    out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
xref = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
open(sys.argv[1], "wb").write(out)
PY

printf '%s\n' "## What's in this file" "" "One-page Q3 summary: revenue 14.7M, up 23% year on year." "" \
  "## What the agent did NOT verify" "" "- [ ] The figure against the ledger." |
  $BM companion "$WS/files/q3-report.pdf" --body - --tag finance -w "$WS"
echo "== check (current) =="
$BM companion "$WS/files/q3-report.pdf" --check -w "$WS"

printf '%% revised\n' >> "$WS/files/q3-report.pdf"
echo "== check after the PDF changed (stale, exit 6) =="
set +e; $BM companion "$WS/files/q3-report.pdf" --check -w "$WS"; rc=$?; set -e
test "$rc" -eq 6
echo "== every stale companion =="
set +e; $BM companion --stale -w "$WS"; set -e
echo "== regenerate: the old companion is superseded and archived =="
echo "One-page Q3 summary, revised: revenue 14.7M." | $BM companion "$WS/files/q3-report.pdf" --body - -w "$WS"
$BM companion "$WS/files/q3-report.pdf" --check -w "$WS"
ls "$WS/_archive/companions/"
