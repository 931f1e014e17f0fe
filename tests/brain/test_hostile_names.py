"""Untrusted names from a brain source: a name that is not UTF-8 skips that item, not the run."""

from __future__ import annotations

import os
import sys

import pytest

from tests.brain.helpers import items, put, sync


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="needs a file system that takes any bytes")
def test_a_non_utf8_file_name_is_skipped_and_the_run_is_partial(cli, tmp_path):
    drive = tmp_path / "Box"
    put(drive, "good.md", "The kestrel plan.\n")
    (drive / os.fsdecode(b"bad\xff.txt")).write_text("bytes in the name\n")
    (drive / os.fsdecode(b"dir\xfe")).mkdir()
    run = sync(cli, "--path", str(drive))
    assert run["status"] == "partial", run
    assert "skipped bad\\xff.txt: its name is not valid UTF-8" in run["incomplete_reasons"]
    assert "skipped dir\\xfe: its name is not valid UTF-8" in run["incomplete_reasons"]
    assert set(items()) == {"good.md"}
    assert items()["good.md"]["status"] == "indexed"


@pytest.mark.skipif(sys.platform == "win32", reason="control characters in file names")
def test_brain_items_plain_output_escapes_control_and_bidi_characters(cli, tmp_path):
    drive = tmp_path / "Box"
    put(drive, "evil\x1b[2J\u202etxt.exe", "x\n")
    put(drive, "two\nlines.md", "y\n")
    sync(cli, "--path", str(drive))
    rows = cli.json("brain", "items")["data"]["items"]
    assert {r["box_id"] for r in rows} == {"evil\x1b[2J\u202etxt.exe", "two\nlines.md"}  # JSON keeps the data
    out = cli("brain", "items").stdout
    assert "\x1b" not in out and "\u202e" not in out
    assert "evil\\x1b[2J\\u202etxt.exe" in out
    lines = out.splitlines()
    assert len(lines) == 3, lines  # a header and one row per item: a newline cannot forge a row
    assert any("two\\nlines.md" in line for line in lines)
