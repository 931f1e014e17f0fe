"""`brain status` shows each source's last run counts, as the seed's status line does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.brain.helpers import put, sync


def _row(cli: Any) -> dict[str, str]:
    res = cli("brain", "status")
    assert res.exit_code == 0, res.stdout
    lines = res.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("id\t"))
    headers = lines[head].split("\t")
    return dict(zip(headers, lines[head + 1].split("\t"), strict=True))


def test_status_shows_the_last_runs_counts(cli: Any, ws: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    put(docs, "a.md", "alpha notes\n")
    put(docs, "b.md", "beta notes\n")
    sync(cli, "--path", str(docs), "-w", str(ws))
    row = _row(cli)
    assert (row["indexed"], row["unchanged"], row["deleted"], row["failed"]) == ("2", "0", "0", "0")
    source = cli.json("brain", "status")["data"]["sources"][0]
    assert source["last_run_counts"] == {"indexed": 2, "unchanged": 0, "deleted": 0, "failed": 0}

    (docs / "b.md").unlink()
    put(docs, "c.md", "gamma notes\n")
    sync(cli, "--path", str(docs), "-w", str(ws))
    row = _row(cli)
    assert (row["indexed"], row["unchanged"], row["deleted"], row["failed"]) == ("1", "1", "1", "0")
    assert row["entries"] == "2"


def test_a_skipped_run_keeps_the_last_counts(cli: Any, ws: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    put(docs, "a.md")
    sync(cli, "--path", str(docs), "-w", str(ws))
    cli.json("brain", "source", "disable", str(docs))
    sync(cli, code=0)  # a disabled source is skipped: no new run, the counts stay the last run's
    assert _row(cli)["indexed"] == "1"
