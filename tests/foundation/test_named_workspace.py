"""A workspace named by path that is not there is reported as that path, not as "no workspace here"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli


def test_an_explicit_path_that_does_not_exist_is_named(cli: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "does" / "not" / "exist"
    env = cli.json("recall", "x", "-w", str(missing), code=3)
    assert env["errors"][0]["message"] == f"workspace folder {missing} does not exist"
    res = cli("status", "-w", str(missing))
    assert res.exit_code == 3
    assert res.stderr.strip() == f"error: workspace folder {missing} does not exist"
    assert not missing.exists() and not missing.parent.exists()  # nothing was created

    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    env = cli.json("recall", "x", "-w", str(a_file), code=3)
    assert env["errors"][0]["message"] == f"workspace folder {a_file} is not a folder"


def test_the_environment_and_the_default_are_named_too(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BOX_MEMORY_WORKSPACE", str(gone))
    env = cli.json("recall", "x", code=3)
    assert env["errors"][0]["message"] == f"BOX_MEMORY_WORKSPACE names {gone}, which does not exist"
    monkeypatch.delenv("BOX_MEMORY_WORKSPACE")
    cli.json("init", "--path", str(gone))
    config = tmp_path / "gone" / "_box-memory.json"
    assert json.loads(config.read_text())  # a real workspace, made default
    for p in sorted(gone.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    gone.rmdir()
    env = cli.json("recall", "x", code=3)
    message = env["errors"][0]["message"]
    assert message.startswith(f"the default workspace {gone} (set by `box-memory init`) does not exist")
