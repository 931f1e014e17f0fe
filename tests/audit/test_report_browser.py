"""The report rendered by a real headless browser (Chromium from the OS packages; `.ci/run`
installs it): the DOM it builds holds the chart and the graph, and the screenshot shows them.

Set BOX_MEMORY_REPORT_PNG=docs/report.png to keep the screenshot (the README shows it)."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from box_memory.audit.report import PALETTE
from tests.audit.demo import build
from tests.conftest import Cli

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; .ci/run does)"
    ),
    pytest.mark.slow,  # a headless browser renders the report
]
WIDTH, HEIGHT = 1280, 1600
CURRENT_NODE = (0xE6, 0xF4, 0xEA)  # the graph's fill for a chain's current memory


def chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    assert CHROMIUM is not None
    argv = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--hide-scrollbars", f"--user-data-dir={profile}", *args,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, timeout=120, check=True)


def png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """A PNG's width, height and rows of RGB bytes (8-bit RGB or RGBA, as Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        elif kind == b"IDAT":
            idat += body
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        prev = line
        rows.append(
            bytes(line) if bpp == 3 else bytes(x for j in range(0, stride, 4) for x in line[j : j + 3])
        )
    return width, height, rows


def colour_counts(rows: list[bytes], colours: list[tuple[int, int, int]]) -> dict[tuple[int, int, int], int]:
    want = {bytes(c): c for c in colours}
    out = dict.fromkeys(colours, 0)
    for row in rows:
        for i in range(0, len(row), 3):
            c = want.get(row[i : i + 3])
            if c is not None:
                out[c] += 1
    return out


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))


@pytest.fixture
def page(tmp_path: Path, cli: Cli) -> dict[str, Any]:
    ws = tmp_path / "ws"
    build(ws, cli, tmp_path)
    out = tmp_path / "report.html"
    data = cli.json("report", "-o", str(out), "-w", str(ws))["data"]
    return {"out": out, "data": data}


def test_the_browser_draws_the_chart_and_the_graph(tmp_path: Path, page: dict[str, Any]) -> None:
    url = page["out"].as_uri()
    dom = chromium(tmp_path / "profile-dom", "--dump-dom", url).stdout.decode("utf-8", "replace")
    # The DOM the browser built (not the file's text): both SVGs, their shapes, and no element
    # made from memory text (the hostile title stayed text).
    chart = re.search(r'<svg id="chart".*?</svg>', dom, re.S)
    graph = re.search(r'<svg id="chains".*?</svg>', dom, re.S)
    assert chart and graph, dom[:2000]
    weeks = page["data"]["per_week"]["weeks"]
    assert chart.group(0).count('class="bar"') == sum(1 for w in weeks for n in w["by_agent"].values() if n)
    assert graph.group(0).count('class="node"') == sum(len(c) for c in page["data"]["chains"]) == 7
    assert "<script" not in dom and "<img" not in dom

    shot = tmp_path / "report.png"
    chromium(tmp_path / "profile-shot", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", url)
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (WIDTH, HEIGHT)
    agents = page["data"]["per_week"]["agents"]
    bars = colour_counts(rows, [_rgb(PALETTE[i]) for i in range(len(agents))] + [CURRENT_NODE])
    # Each agent's colour fills far more than its 10x10 legend square: the bars are drawn.
    for i, agent in enumerate(agents):
        assert bars[_rgb(PALETTE[i])] > 800, (agent, bars)
    # Three current memories, each a 190x46 box: the graph is drawn.
    assert bars[CURRENT_NODE] > 3 * 150 * 40, bars
    background = sum(row.count(b"\xff\xff\xff") for row in rows[:5])
    assert background > 0  # the page itself rendered (white), not an error page
    keep = os.environ.get("BOX_MEMORY_REPORT_PNG")
    if keep:
        shutil.copyfile(shot, keep)
