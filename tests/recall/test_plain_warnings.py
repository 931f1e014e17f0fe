"""Warnings that change what a hit means are said in plain output too: once each, on stderr."""

from __future__ import annotations

from pathlib import Path

from tests.companions.test_read_as_stale import _companion, _flip
from tests.conftest import Cli
from tests.recall.test_edits_in_place import edit


def test_plain_recall_says_the_index_is_stale_once_on_stderr(ws: Path, cli: Cli) -> None:
    cli.json("write", "The deploy uses a canary.", "--title", "Deploy plan", "-w", str(ws))
    cli.json("recall", "deploy", "-w", str(ws))
    (path,) = (ws / "memories").glob("*deploy-plan.md")
    edit(path, "a canary.", "a canary, then quokkafire.")
    env = cli.json("recall", "quokkafire", "-w", str(ws))
    (stale,) = [w for w in env["warnings"] if "may be stale" in w]
    plain = cli("recall", "quokkafire", "-w", str(ws))
    assert plain.exit_code == 0 and "Deploy plan" in plain.stdout
    assert plain.stderr.count("may be stale") == 1 and stale in plain.stderr
    assert "may be stale" not in plain.stdout


def test_plain_recall_says_a_companion_is_stale_once_on_stderr(ws: Path, cli: Cli) -> None:
    _companion(cli, ws)
    _flip(ws / "files" / "budget.pdf", keep_mtime=False)
    plain = cli("recall", "budget", "-w", str(ws))
    assert plain.exit_code == 0
    assert plain.stderr.count("is stale: its binary changed") == 1
    verbose = cli("recall", "budget", "--verbose", "-w", str(ws))
    assert verbose.stderr.count("is stale: its binary changed") == 1
