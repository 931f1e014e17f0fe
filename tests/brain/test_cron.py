"""`brain-sync --print-cron` prints a line that works under cron's empty environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONSOLE = Path(sys.executable).parent / "box-memory"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOX_")}
    return {**env, "BOX_MEMORY_HOME": str(home), **extra}


@pytest.mark.skipif(not CONSOLE.exists() or shutil.which("env") is None, reason="needs the console script")
def test_printed_cron_line_syncs_under_env_i(tmp_path: Path) -> None:
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "travel-policy.md").write_text("# Travel policy\nEconomy class under six hours.\n")
    ws = tmp_path / "ws"  # the source's workspace: the user's default, named in the line
    subprocess.run(
        [str(CONSOLE), "init", "--path", str(ws), "--json"], env=_env(home), capture_output=True, check=True
    )
    printed = subprocess.run(
        [str(CONSOLE), "brain-sync", "--print-cron", "--path", str(docs), "--json"],
        env=_env(home, BOX_ACCESS_TOKEN="sekrit-token-value"),
        cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    env = json.loads(printed.stdout)
    data = env["data"]
    assert data["command"][0] == str(CONSOLE) and os.path.isabs(data["command"][0])
    assert data["env"]["BOX_MEMORY_HOME"] == str(home)
    assert "sekrit" not in printed.stdout and any("BOX_ACCESS_TOKEN" in w for w in env["warnings"])
    assert not (home / "data" / "brain.sqlite3").exists()  # printing syncs nothing
    line = data["line"]
    assert line.startswith("*/15 * * * * ")
    assert data["command"][-4:-2] == ["--workspace", str(ws.resolve())]
    command = line.split(" ", 5)[5]

    # cron: an empty environment, /bin/sh, another working directory.
    ran = subprocess.run(
        ["env", "-i", "/bin/sh", "-c", command], cwd="/", capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    status = subprocess.run(
        [str(CONSOLE), "brain", "status", "--json"],
        env=_env(home), capture_output=True, text=True, check=True,
    )  # fmt: skip
    sources = json.loads(status.stdout)["data"]["sources"]
    assert [s["root"] for s in sources] == [str(docs)]
    assert sources[0]["workspace"] == str(ws.resolve())
    assert sources[0]["last_run_status"] == "completed"

    # The plain form prints just the line; a second run right away is not due, still exit 0.
    plain = subprocess.run(
        [str(CONSOLE), "brain-sync", "--print-cron"],
        env=_env(home), capture_output=True, text=True, check=True,
    )  # fmt: skip
    generic = plain.stdout.strip().split(" ", 5)[5]
    assert "--if-due" in generic and "--path" not in generic
    again = subprocess.run(
        ["env", "-i", "/bin/sh", "-c", generic + " --json"], capture_output=True, text=True, check=False
    )
    assert again.returncode == 0 and json.loads(again.stdout)["data"]["status"] == "skipped"
