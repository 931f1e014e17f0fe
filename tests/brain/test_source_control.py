"""Box Brain as its design says: sources can be turned off and on, imported recall is global for
the user (unless a source is narrowed to its workspace), and recall filters apply to the section."""

from __future__ import annotations

import os
from pathlib import Path

from tests.brain.helpers import entries, put, sync
from tests.conftest import Cli


def _source(tmp_path: Path, name: str, text: str) -> Path:
    drive = tmp_path / name
    put(drive, "notes.txt", text)
    return drive


def test_disable_stops_syncs_without_purging_and_enable_resumes(cli: Cli, tmp_path: Path) -> None:
    drive = _source(tmp_path, "Box", "The pelican runbook.\n")
    first = sync(cli, "--path", str(drive))
    sid = str(first["source"]["id"])
    off = cli.json("brain", "source", "disable", sid)["data"]["source"]
    assert off["enabled"] is False
    status = cli.json("brain", "status")["data"]["sources"][0]
    assert status["enabled"] is False
    put(drive, "more.txt", "The heron runbook.\n")
    # Explicit, --if-due and no-argument runs all skip it; its entries stay.
    for args in (["--path", str(drive)], ["--path", str(drive), "--if-due"]):
        run = sync(cli, *args)
        assert run["status"] == "skipped" and "disabled" in run["incomplete_reasons"][0]
    env = cli.json("brain-sync")
    assert [r["status"] for r in env["data"]["runs"]] == ["skipped"]
    assert set(entries()) == {"notes.txt"}
    assert cli.json("brain", "source", "enable", sid)["data"]["source"]["enabled"] is True
    assert sync(cli, "--path", str(drive))["counts"]["new"] == 1
    # brain-sync --disable does the same as `brain source disable`.
    assert sync(cli, "--path", str(drive), "--disable")["status"] == "skipped"
    assert cli.json("brain", "status")["data"]["sources"][0]["enabled"] is False


def test_all_syncs_every_enabled_source_now(cli: Cli, tmp_path: Path) -> None:
    one = _source(tmp_path, "One", "alpha\n")
    two = _source(tmp_path, "Two", "beta\n")
    sync(cli, "--path", str(one))
    sync(cli, "--path", str(two))
    sid_two = str(cli.json("brain", "status")["data"]["sources"][1]["id"])
    cli.json("brain", "source", "disable", sid_two)
    # Not due (interval 60 min): a plain no-argument run skips both; --all runs the enabled one now.
    assert [r["status"] for r in cli.json("brain-sync")["data"]["runs"]] == ["skipped", "skipped"]
    runs = cli.json("brain-sync", "--all")["data"]["runs"]
    assert [(r["source"]["root"], r["status"]) for r in runs] == [
        (str(one.resolve()), "completed"),
        (str(two.resolve()), "skipped"),
    ]
    bad = cli.json("brain-sync", "--all", "--path", str(one), code=2)
    assert "--all" in bad["errors"][0]["message"]


def test_imported_recall_is_global_unless_narrowed(cli: Cli, tmp_path: Path) -> None:
    drive = _source(tmp_path, "Box", "the narwhal memo\n")
    one, two = tmp_path / "one", tmp_path / "two"
    cli.json("init", "--path", str(one))
    cli.json("init", "--path", str(two))
    sync(cli, "--path", str(drive), "-w", str(one))
    assert len(cli.json("recall", "narwhal", "-w", str(one))["data"]["brain"]) == 1
    assert len(cli.json("recall", "narwhal", "-w", str(two))["data"]["brain"]) == 1
    narrowed = sync(cli, "--path", str(drive), "-w", str(one), "--only-workspace")
    assert narrowed["source"]["settings"]["only_workspace"] is True
    assert len(cli.json("recall", "narwhal", "-w", str(one))["data"]["brain"]) == 1
    assert cli.json("recall", "narwhal", "-w", str(two))["data"]["brain"] == []


def test_recall_filters_apply_to_the_brain_section(cli: Cli, ws: Path, tmp_path: Path) -> None:
    drive = tmp_path / "Box"
    put(drive, "auth-strategy.csv", "auth,strategy,owner\nsso,later,ops\n")
    put(drive, "auth-old.txt", "the old auth strategy notes\n")
    os.utime(drive / "auth-old.txt", (1_600_000_000, 1_600_000_000))  # 2020-09-13
    sync(cli, "--path", str(drive))
    assert len(cli.json("recall", "auth strategy", "-w", str(ws))["data"]["brain"]) == 2
    # A document has no memory kind, tag, status or team: such a filter leaves the section empty.
    for flt in (["--kind=decision"], ["--tag", "security"], ["--status", "active"], ["--team", "default"]):
        assert cli.json("recall", "auth strategy", *flt, "-w", str(ws))["data"]["brain"] == [], flt
    # --since / --until filter on the document's modified time.
    recent = cli.json("recall", "auth strategy", "--since", "2024-01-01", "-w", str(ws))["data"]["brain"]
    assert [h["name"] for h in recent] == ["auth-strategy.csv"]
    old = cli.json("recall", "auth strategy", "--until", "2021-01-01", "-w", str(ws))["data"]["brain"]
    assert [h["name"] for h in old] == ["auth-old.txt"]
