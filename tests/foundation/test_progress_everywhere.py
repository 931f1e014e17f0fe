"""No long command is silent on a terminal: export counts what it reads, a rebuild counts its
reading before the lock, and any command past the delay keeps a line going (its name and time)
while nothing else reports; none of it under --json, --quiet, a pipe or `serve`. The import
summary says how many memories its sample of titles leaves out.

The CLI runs in a pseudo-terminal (tests/foundation/terminal.py); BOX_MEMORY_PROGRESS_AFTER_S=0
shows progress at once, so small workspaces suffice.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.foundation import terminal
from tests.recall.helpers import put, reindex

NOW = {"BOX_MEMORY_PROGRESS_AFTER_S": "0"}


@pytest.fixture
def filled(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    for n in range(1, 40):
        put(root, f"Progress memory {n}", n=n)
    reindex(root)
    return root


def test_export_shows_what_it_reads(filled: Path, tmp_path: Path) -> None:
    code, shown = terminal.run(["export", "-w", str(filled), "-o", str(tmp_path / "out.jsonl")], env=NOW)
    assert code == 0, shown
    assert "Reading memories" in shown and "/39 memories" in shown, shown
    assert "Exported 39 memories" in shown


def test_a_command_without_bars_of_its_own_still_shows_it_is_working(filled: Path) -> None:
    code, shown = terminal.run(["status", "-w", str(filled)], env=NOW)
    assert code == 0, shown
    assert (
        shown.lstrip().startswith(("⠋ status", "⠙ status", "⠹ status", "⠸ status")) or "status ━" in shown
    ), shown


def test_nothing_under_json_quiet_or_a_pipe(filled: Path, tmp_path: Path) -> None:
    out = str(tmp_path / "out.jsonl")
    for extra in (["--json"], ["--quiet"]):
        for args in (["export", "-o", out, "--force"], ["status"]):
            code, shown = terminal.run([*args, "-w", str(filled), *extra], env=NOW)
            assert code == 0, shown
            assert "Reading memories" not in shown and "━" not in shown, (args, extra, shown)
    import os

    for args in (["export", "-o", out, "--force"], ["status"], ["index-rebuild"]):
        res = subprocess.run(
            [sys.executable, "-m", "box_memory", *args, "-w", str(filled)],
            env={**os.environ, **NOW},
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0 and "━".encode() not in res.stderr, (args, res.stderr)


def test_import_summary_says_how_many_titles_it_left_out(cli: Cli, ws: Path, tmp_path: Path) -> None:
    src = tmp_path / "notes"
    src.mkdir()
    for n in range(1, 16):
        (src / f"note{n:02}.md").write_text(f"# Imported note {n}\n\nText {n}.\n")
    dry = cli("import", str(src), "--dry-run", "-w", str(ws))
    assert dry.exit_code == 0, dry.stdout
    assert "  ... and 5 more" in dry.stdout, dry.stdout
    res = cli("import", str(src), "-w", str(ws))
    assert res.exit_code == 0, res.stdout
    lines = res.stdout.splitlines()
    assert sum(1 for ln in lines if ln.startswith("  - ")) == 10
    assert lines[-1] == "  ... and 5 more", res.stdout
    again = cli("import", str(src), "-w", str(ws))
    assert "more" not in again.stdout  # nothing imported, nothing left out


def test_the_delay_counts_from_the_command_not_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild reads folder after folder, each under the delay: once the command has run past
    it, the next step's bar shows at once (before, each step waited the delay on its own)."""
    import os
    import pty
    import select
    import time

    from box_memory import progress

    leader, follower = pty.openpty()
    stream = os.fdopen(follower, "w", encoding="utf-8")
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setenv("BOX_MEMORY_PROGRESS_AFTER_S", "0.3")
    try:
        progress.allow(True)
        time.sleep(0.35)  # the command's first steps
        with progress.task("Reading teams/ops/memories/", 3, "files") as t:
            for _ in range(3):
                t.advance()
    finally:
        progress.allow(False)
        stream.flush()
    shown = b""
    while select.select([leader], [], [], 0.2)[0]:
        shown += os.read(leader, 65536)
    stream.close()
    os.close(leader)
    assert "Reading teams/ops/memories/" in terminal.ANSI.sub("", shown.decode("utf-8", "replace"))
