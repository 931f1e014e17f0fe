"""Obsidian: new memories carry `aliases: [<title>]`, so a workspace opened as a vault resolves
`[[Title]]` to the file (named `<kind>__<slug>.md`); a supersede moves the alias to the current
memory. Other readers keep the key as they keep any unknown key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from box_memory.format import frontmatter
from tests.conftest import Cli


def meta(ws: Path, rel: str) -> dict[str, Any]:
    return frontmatter.parse((ws / rel).read_text(encoding="utf-8"))[0]


def test_a_new_memory_carries_its_title_as_alias_right_after_the_title(cli: Cli, ws: Path) -> None:
    d = cli.json("write", "We decided: JWT.", "--title", "Auth: tokens — v2", "-w", str(ws))["data"]
    m = meta(ws, d["file"])
    assert m["aliases"] == ["Auth: tokens — v2"]
    assert list(m)[:4] == ["id", "slug", "title", "aliases"]


def test_a_supersede_moves_the_alias_to_the_current_memory(cli: Cli, ws: Path) -> None:
    a = cli.json("write", "JWT.", "--title", "Auth tokens", "-w", str(ws))["data"]
    b = cli.json("write", "Sessions.", "--supersedes", a["id"], "-w", str(ws))["data"]
    old, new = meta(ws, a["file"]), meta(ws, b["file"])
    assert old["status"] == "superseded" and "aliases" not in old
    assert new["aliases"] == ["Auth tokens"]
    c = cli.json("write", "Tokens again.", "--supersedes", b["id"], "-w", str(ws))["data"]
    assert "aliases" not in meta(ws, b["file"]) and meta(ws, c["file"])["aliases"] == ["Auth tokens"]
    # In a vault, exactly one file answers to [[Auth tokens]]: the current memory.
    holders = [
        p.name
        for p in (ws / "memories").glob("*.md")
        if "Auth tokens" in (meta(ws, f"memories/{p.name}").get("aliases") or [])
    ]
    assert holders == [Path(c["file"]).name]


def test_a_successor_with_another_title_leaves_the_old_alias(cli: Cli, ws: Path) -> None:
    a = cli.json("write", "JWT.", "--title", "Auth tokens", "-w", str(ws))["data"]
    b = cli.json("write", "Sessions.", "--title", "Session auth", "--supersedes", a["id"], "-w", str(ws))[
        "data"
    ]
    assert meta(ws, a["file"])["aliases"] == ["Auth tokens"]  # the only memory of that name
    assert meta(ws, b["file"])["aliases"] == ["Session auth"]


def test_memories_written_before_are_not_rewritten_and_supersede_cleanly(cli: Cli, ws: Path) -> None:
    a = cli.json("write", "JWT.", "--title", "Auth tokens", "-w", str(ws))["data"]
    path = ws / a["file"]
    m, body = frontmatter.parse(path.read_text())
    del m["aliases"]  # as written before this version
    path.write_text(frontmatter.render(m, body))
    cli.json("index-rebuild", "-w", str(ws))
    before = path.read_bytes()
    cli.json("write", "Unrelated.", "--title", "Other", "-w", str(ws))
    cli.json("index-rebuild", "-w", str(ws))
    assert path.read_bytes() == before  # neither a write nor a rebuild adds the key to old files
    b = cli.json("write", "Sessions.", "--supersedes", a["id"], "-w", str(ws))["data"]
    assert "aliases" not in meta(ws, a["file"]) and meta(ws, b["file"])["aliases"] == ["Auth tokens"]


def test_rebuild_and_export_import_keep_the_key(cli: Cli, ws: Path, tmp_path: Path) -> None:
    a = cli.json("write", "JWT.", "--title", "Auth tokens", "--agent", "x", "-w", str(ws))["data"]
    before = (ws / a["file"]).read_bytes()
    assert cli.json("index-rebuild", "-w", str(ws))["exit_code"] == 0
    assert (ws / a["file"]).read_bytes() == before
    out = tmp_path / "out.jsonl"
    cli.json("export", "--output", str(out), "-w", str(ws))
    assert '"aliases"' in out.read_text()
    other = tmp_path / "other"
    cli.json("init", "--path", str(other))
    cli.json("import", str(out), "-w", str(other))
    (imported,) = (other / "memories").glob("*__*.md")
    assert frontmatter.parse(imported.read_text())[0]["aliases"] == ["Auth tokens"]


def test_a_supersede_completed_by_index_rebuild_drops_the_alias_too(
    cli: Cli, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = cli.json("write", "JWT.", "--title", "Auth tokens", "-w", str(ws))["data"]
    env = {**os.environ, "BOX_MEMORY_CRASH_AT": "write:file-created", "BOX_MEMORY_LOCK_STALE_S": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "box_memory", "write", "Sessions.", "--supersedes", a["id"], "-w", str(ws)],
        env=env,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert meta(ws, a["file"])["aliases"] == ["Auth tokens"]  # the crash came before the bookkeeping
    monkeypatch.setenv("BOX_MEMORY_LOCK_STALE_S", "1")
    time.sleep(1.2)  # the dead writer's lock goes stale
    cli.json("index-rebuild", "-w", str(ws))
    old = meta(ws, a["file"])
    assert old["status"] == "superseded" and "aliases" not in old
