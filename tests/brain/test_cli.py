"""The command line: settings, --if-due, no-argument runs, the brain group, recall integration."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from box_memory.brain.entry import BOUNDARY
from box_memory.paths import user_dirs
from tests.brain.helpers import entries, folder_id, put, sync


def test_settings_are_clamped_persisted_and_0_means_the_default(cli, emu, box):
    put(box, "a.md", "a\n")
    run = sync(
        cli, "--folder-id", "0", "--max-items", "20000", "--interval", "1", "--max-content-chars", "100",
        "--no-review", "--ai-summaries",
    )  # fmt: skip
    assert run["source"]["settings"] == {
        "interval_minutes": 5,
        "max_items": 10000,
        "include_content": True,
        "ai_summaries": True,
        "max_content_chars": 500,
        "review": False,
        "enabled": True,
        "only_workspace": False,
    }
    warnings = run["_envelope"]["warnings"]
    assert any("--max-items 20000 is outside 1..10000" in w for w in warnings)
    assert any("folder 0 is your whole Box account" in w for w in warnings)
    kept = sync(cli, "--folder-id", "0")
    assert kept["source"]["settings"]["max_items"] == 10000
    assert kept["source"]["settings"]["review"] is False
    reset = sync(cli, "--folder-id", "0", "--max-items", "0", "--interval", "0", "--no-ai-summaries")
    assert reset["source"]["settings"]["max_items"] == 200
    assert reset["source"]["settings"]["interval_minutes"] == 60
    assert reset["source"]["settings"]["ai_summaries"] is False
    status = cli.json("brain", "status")["data"]["sources"]
    assert len(status) == 1 and status[0]["settings"]["max_content_chars"] == 500


@pytest.mark.parametrize(
    "args",
    [
        ["--folder-id", "12", "--path", "."],
        ["--folder-id", "abc"],
        ["--folder-id", "1; rm -rf /"],
        ["--folder-id", "0", "--max-items", "-1"],
        ["--max-items", "5"],
        [],
    ],
)
def test_bad_input_is_a_usage_error_and_writes_nothing(cli, args):
    env = cli.json("brain-sync", *args, code=2)
    assert env["status"] == "error"
    assert len(env["errors"]) == 1
    assert not user_dirs().brain_db.exists()


def test_if_due_skips_until_the_interval_has_passed(cli, emu, box):
    put(box, "a.md", "a\n")
    first = sync(cli, "--folder-id", "0", "--if-due")  # a new source is always due
    assert first["status"] == "completed"
    emu.reset_calls()
    second = sync(cli, "--folder-id", "0", "--if-due")
    assert second["status"] == "skipped"
    assert second["incomplete_reasons"][0].startswith("not due until ")
    assert second["_envelope"]["exit_code"] == 0
    assert emu.calls == []


def test_no_arguments_run_every_due_source(cli, emu, box, tmp_path):
    put(box, "a.md", "a\n")
    drive = tmp_path / "drive"
    put(drive, "b.md", "b\n")
    sync(cli, "--folder-id", "0")
    sync(cli, "--path", str(drive))
    with sqlite_db() as db:  # both sources last ran two hours ago
        db.execute("UPDATE sources SET last_run_at = '2000-01-01T00:00:00.000Z'")
    env = cli.json("brain-sync")
    assert [r["status"] for r in env["data"]["runs"]] == ["completed", "completed"]
    assert [r["source"]["kind"] for r in env["data"]["runs"]] == ["box", "local"]
    assert env["data"]["counts"]["unchanged"] == 2
    again = cli.json("brain-sync")
    assert [r["status"] for r in again["data"]["runs"]] == ["skipped", "skipped"]
    assert again["status"] == "skipped"


def sqlite_db():
    import sqlite3

    return sqlite3.connect(user_dirs().brain_db)


def test_human_output_is_one_summary_line_per_source_and_nothing_on_stderr(cli, emu, box):
    put(box, "docs/a.md", "a\n")
    docs = folder_id(emu, "docs")
    res = cli("brain-sync", "--folder-id", docs)
    assert res.exit_code == 0
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"brain-sync box:{docs}: completed - 1 discovered, 1 indexed, 0 unchanged")
    assert res.stderr == ""  # no progress bar off a terminal


def test_an_explicit_workspace_that_does_not_exist_exits_3(cli, emu, tmp_path):
    env = cli.json("brain-sync", "--folder-id", "0", "-w", str(tmp_path / "nowhere"), code=3)
    assert env["errors"][0]["code"] == "workspace_not_found"


def test_status_runs_items_and_purge(cli, emu, box, ws):
    put(box, "docs/a.md", "alpha zebra\n")
    put(box, "docs/b.md", "beta zebra\n")
    docs = folder_id(emu, "docs")
    sync(cli, "--folder-id", docs)
    sync(cli, "--folder-id", "0")
    status = cli.json("brain", "status")["data"]
    assert status["exists"] is True
    assert [s["label"] for s in status["sources"]] == [f"box:{docs}", "box:0"]
    assert status["sources"][0]["items"]["indexed"] == 2
    assert status["sources"][0]["workspace"] == str(ws)
    assert status["sources"][0]["due"] is False
    runs = cli.json("brain", "runs", "--source", f"box:{docs}")["data"]["runs"]
    assert [r["status"] for r in runs] == ["completed"]
    assert runs[0]["counts"]["indexed"] == 2
    assert len(cli.json("brain", "items")["data"]["items"]) == 4
    assert len(cli.json("brain", "items", "--source", "2", "--status", "indexed")["data"]["items"]) == 2
    assert cli.json("brain", "items", "--status", "bogus", code=2)["errors"]
    assert len(cli.json("recall", "zebra", "-w", str(ws))["data"]["brain"]) == 4

    purged = cli.json("brain", "purge", f"box:{docs}")["data"]
    assert purged["removed"] == {"items": 2, "entries": 2, "runs": 1, "candidates": 0}
    assert len(entries(2)) == 2 and entries(1) == {}
    assert [h["source"] for h in cli.json("recall", "zebra", "-w", str(ws))["data"]["brain"]] == ["box:0"] * 2
    assert cli.json("brain", "purge", f"box:{docs}", code=1)["errors"][0]["code"] == "not_found"


def test_the_brain_group_without_a_store(cli):
    assert cli.json("brain", "status")["data"]["exists"] is False
    assert cli.json("brain", "runs")["data"]["runs"] == []
    assert cli.json("brain", "review")["data"]["candidates"] == []
    assert not user_dirs().brain_db.exists()


def test_recall_shows_at_most_8_brain_hits_with_box_urls_and_no_brain_leaves_them_out(cli, emu, box, ws):
    for n in range(10):
        put(box, f"runbooks/r{n}.md", f"Runbook {n}: restart the quokka service.\n")
    sync(cli, "--folder-id", "0", "--no-review")
    data = cli.json("recall", "quokka", "-w", str(ws))["data"]
    assert len(data["brain"]) == 8
    for hit in data["brain"]:
        assert hit["section"] == "Box Brain (source-backed)"
        assert hit["url"] == f"https://app.box.com/file/{hit['box_id']}"
        assert "quokka" in hit["excerpt"]
    assert data["brain_boundary"] == BOUNDARY  # the excerpts are untrusted: said in --json too
    no_brain = cli.json("recall", "quokka", "--no-brain", "-w", str(ws))["data"]
    assert no_brain["brain"] == [] and "brain_boundary" not in no_brain
    text = cli("recall", "quokka", "-w", str(ws)).stdout
    assert f"Box Brain (source-backed):\n  {BOUNDARY}\n" in text
    assert "https://app.box.com/file/" in text
    assert "Box Brain" not in cli("recall", "quokka", "--no-brain", "-w", str(ws)).stdout
    file_id = folder_id(emu, "runbooks/r3.md")
    by_id = cli.json("recall", file_id, "-w", str(ws))["data"]["brain"]
    assert by_id[0]["box_id"] == file_id


def test_brain_hits_show_in_every_workspace_of_the_user(cli, emu, box, tmp_path):
    """Global imported recall (the design): a source synced from one workspace is found from
    another; `--only-workspace` narrows it back (tests/brain/test_source_control.py)."""
    put(box, "a.md", "the narwhal memo\n")
    one, two = tmp_path / "one", tmp_path / "two"
    cli.json("init", "--path", str(one))
    cli.json("init", "--path", str(two))
    sync(cli, "--folder-id", "0", "-w", str(one))
    assert len(cli.json("recall", "narwhal", "-w", str(one))["data"]["brain"]) == 1
    assert len(cli.json("recall", "narwhal", "-w", str(two))["data"]["brain"]) == 1


def test_recall_with_a_brain_store_stays_off_the_network(cli, emu, box, ws):
    put(box, "a.md", "the okapi memo\n")
    sync(cli, "--folder-id", "0")
    code = (
        "import sys, json\n"
        "from typer.testing import CliRunner\n"
        "from box_memory.cli.app import app\n"
        f"res = CliRunner().invoke(app, ['recall', 'okapi', '-w', {str(ws)!r}, '--json'])\n"
        "hits = json.loads(res.stdout)['data']['brain']\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'httpx', 'httpx2', 'anyio'))\n"
        "print(json.dumps({'hits': len(hits), 'loaded': loaded}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"hits": 1, "loaded": []}


def test_the_store_is_private(cli, emu, box):
    put(box, "a.md", "a\n")
    sync(cli, "--folder-id", "0")
    db = user_dirs().brain_db
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    for side in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        if side.exists():
            assert stat.S_IMODE(side.stat().st_mode) == 0o600
    with sqlite_db() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize(
    "args",
    [
        ["brain-sync"],
        ["brain"],
        *[["brain", c] for c in ("status", "runs", "items", "review", "accept", "reject", "purge")],
    ],
)
def test_help(cli, args):
    res = cli(*args, "--help")
    assert res.exit_code == 0
    assert "Usage" in res.stdout
