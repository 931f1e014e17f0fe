"""`brain-sync --print-cron` ticks at least as often as the shortest source interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.brain.helpers import put, sync


def _schedule(cli: Any, *args: str) -> str:
    data = cli.json("brain-sync", "--print-cron", *args)["data"]
    assert data["line"].startswith(data["schedule"] + " ")
    return str(data["schedule"])


def test_schedule_follows_the_shortest_interval(cli: Any, ws: Path, tmp_path: Path) -> None:
    slow, fast = tmp_path / "slow", tmp_path / "fast"
    put(slow, "a.md", "slow notes\n")
    put(fast, "b.md", "fast notes\n")
    assert _schedule(cli) == "*/15 * * * *"  # nothing configured: the default
    sync(cli, "--path", str(slow), "-w", str(ws))  # interval 60
    assert _schedule(cli) == "*/15 * * * *"
    sync(cli, "--path", str(fast), "--interval", "5", "-w", str(ws))
    assert _schedule(cli) == "*/5 * * * *"  # every source: the shortest wins
    assert _schedule(cli, "--path", str(fast)) == "*/5 * * * *"
    assert _schedule(cli, "--path", str(slow)) == "*/15 * * * *"  # one source: its own

    # A disabled source does not set the pace.
    cli.json("brain", "source", "disable", str(fast))
    assert _schedule(cli) == "*/15 * * * *"


def test_given_interval_sets_the_schedule_and_goes_in_the_line(cli: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    put(docs, "a.md")
    data = cli.json("brain-sync", "--print-cron", "--path", str(docs), "--interval", "10")["data"]
    assert data["schedule"] == "*/10 * * * *"
    assert data["command"][-4:] == ["--interval", "10", "--if-due", "--quiet"]
    # 7 minutes: the next even step below it, so no run waits past its interval.
    assert _schedule(cli, "--path", str(docs), "--interval", "7") == "*/6 * * * *"
    assert _schedule(cli, "--path", str(docs), "--interval", "240") == "*/15 * * * *"
