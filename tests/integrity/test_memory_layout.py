"""The monthly memory layout on a local workspace: bad input changes nothing, the rollup is never
rewritten by a write once large, `status` suggests the layout past its threshold, switching back
keeps month folders readable, and an import is idempotent across folders. Plus the default
layout's rollup cadence (hourly, the plugin's own)."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from box_memory.maintenance.status import SUGGEST_MONTHLY_BYTES
from tests.conftest import snapshot

MONTH = datetime.now(UTC).strftime("%Y-%m")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _monthly(cli: Any, ws: Path) -> None:
    data = cli.json("init", "--path", str(ws), "--memory-layout", "monthly")["data"]
    assert data["memory_layout"] == "monthly"


def _pad_rollup(ws: Path, age_s: float) -> bytes:
    """Make the rollup large (past the lazy-refresh size) and `age_s` old; returns its bytes."""
    roll = ws / "_index.json"
    data = json.loads(roll.read_bytes())
    data["padding"] = "x" * (1024 * 1024 + 10)
    roll.write_text(json.dumps(data))
    t = time.time() - age_s
    os.utime(roll, (t, t))
    return roll.read_bytes()


def test_an_unknown_memory_layout_is_refused_and_nothing_is_made(cli: Any, tmp_path: Path) -> None:
    root = tmp_path / "new-ws"
    env = cli.json("init", "--path", str(root), "--memory-layout", "weekly", code=2)
    assert env["errors"][0]["message"] == "unknown memory layout 'weekly' (expected flat or monthly)"
    assert not root.exists()


def test_an_unknown_layout_leaves_an_existing_workspace_as_it_was(cli: Any, ws: Path) -> None:
    before = snapshot(ws)
    cli.json("init", "--path", str(ws), "--memory-layout", "Monthly", code=2)
    assert snapshot(ws) == before


def test_under_the_monthly_layout_a_write_never_rewrites_a_large_rollup(cli: Any, ws: Path) -> None:
    _monthly(cli, ws)
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    before = _pad_rollup(ws, age_s=10 * 3600)  # hours old: the flat layout would refresh it
    new = cli.json("write", "second", "--title", "Second", "-w", str(ws))["data"]
    assert (ws / "_index.json").read_bytes() == before
    status = cli.json("status", "-w", str(ws))["data"]
    assert status["index_health"]["rollup"]["state"] == "lagging"
    assert status["index_health"]["ok"]
    cli.json("index-rebuild", "-w", str(ws))
    roll = json.loads((ws / "_index.json").read_bytes())
    assert roll["by_id"][new["id"]] is not None
    assert roll["entries"][roll["by_id"][new["id"]]]["folder_path"] == f"memories/{MONTH}/"


def test_a_large_rollup_two_minutes_old_is_left_to_lag_by_a_write(cli: Any, ws: Path) -> None:
    # The plugin's own write refreshes the rollup when it is over an hour old; a minute was too
    # eager: a team writing every few minutes rewrote the whole rollup on every write.
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    before = _pad_rollup(ws, age_s=120)
    cli.json("write", "second", "--title", "Second", "-w", str(ws))
    assert (ws / "_index.json").read_bytes() == before
    _pad_rollup(ws, age_s=2 * 3600)
    third = cli.json("write", "third", "--title", "Third", "-w", str(ws))["data"]
    assert third["id"] in {e["id"] for e in json.loads((ws / "_index.json").read_bytes())["entries"]}


def test_status_suggests_the_monthly_layout_past_the_threshold(cli: Any, ws: Path) -> None:
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    assert cli.json("status", "-w", str(ws))["data"]["layout_advice"] is None
    index = ws / "memories" / "_index.json"
    data = json.loads(index.read_bytes())
    data["padding"] = "x" * (SUGGEST_MONTHLY_BYTES + 1)  # as large as ~11,000 memories make it
    index.write_text(json.dumps(data))
    os.utime(index, (time.time() + 5, time.time() + 5))  # not older than its files
    status = cli.json("status", "-w", str(ws))["data"]
    advice = status["layout_advice"]
    assert advice["folder"] == "memories/"
    assert advice["switch"] == f"box-memory init --path {ws} --memory-layout monthly"
    assert any(step.startswith(advice["switch"]) for step in status["next"]), status["next"]
    human = cli("status", "-w", str(ws))
    assert "large index: memories/_index.json is" in human.stdout
    _monthly(cli, ws)
    assert cli.json("status", "-w", str(ws))["data"]["layout_advice"] is None


def test_switching_back_to_flat_keeps_month_folders_read(cli: Any, ws: Path) -> None:
    _monthly(cli, ws)
    month = cli.json("write", "the zanzibar plan", "--title", "Month memory", "-w", str(ws))["data"]
    cli.json("init", "--path", str(ws), "--memory-layout", "flat")
    flat = cli.json("write", "the zanzibar note", "--title", "Flat memory", "-w", str(ws))["data"]
    assert flat["folder"] == "memories/" and month["folder"] == f"memories/{MONTH}/"
    hits = {h["id"] for h in cli.json("recall", "zanzibar", "-w", str(ws))["data"]["hits"]}
    assert {month["id"], flat["id"]} <= hits
    assert not cli.json("index-rebuild", "--check", "-w", str(ws))["data"]["drift"]


def test_a_month_folder_is_not_read_before_a_layout_is_chosen(cli: Any, ws: Path) -> None:
    # The plugin's own workspaces never get a listing of memories/ for month folders.
    folders = [f["folder"] for f in cli.json("status", "-w", str(ws))["data"]["index_health"]["folders"]]
    assert not any(f.startswith("memories/2") for f in folders)
    (ws / "memories" / "2020-01").mkdir()
    folders = [f["folder"] for f in cli.json("status", "-w", str(ws))["data"]["index_health"]["folders"]]
    assert "memories/2020-01/" not in folders
    _monthly(cli, ws)
    folders = [f["folder"] for f in cli.json("status", "-w", str(ws))["data"]["index_health"]["folders"]]
    assert "memories/2020-01/" not in folders  # no index there: a folder, not yet an index folder
    cli.json("index-rebuild", "-w", str(ws))
    folders = [f["folder"] for f in cli.json("status", "-w", str(ws))["data"]["index_health"]["folders"]]
    assert "memories/2020-01/" in folders


def test_an_import_into_month_folders_is_idempotent(cli: Any, ws: Path) -> None:
    _monthly(cli, ws)
    src = FIXTURES / "basic-memory" / "project"
    first = cli.json("import", str(src), "-w", str(ws))["data"]
    assert first["imported"] == 4
    assert len(json.loads((ws / "memories" / MONTH / "_index.json").read_bytes())["entries"]) == 4
    again = cli.json("import", str(src), "-w", str(ws))["data"]
    assert again["imported"] == 0 and again["already_imported"] == 4


def test_stale_temp_files_in_this_month_folder_are_removed_by_the_next_writer(cli: Any, ws: Path) -> None:
    _monthly(cli, ws)
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    dead = ws / "memories" / MONTH / ".bm-tmp-0123456789ab-note__dead.md"
    dead.write_bytes(b"half")
    os.utime(dead, (time.time() - 120, time.time() - 120))
    cli.json("write", "second", "--title", "Second", "-w", str(ws))
    assert not dead.exists()
