"""A Box Brain source belongs to a workspace: without one brain-sync refuses (nothing is written),
and a folder synced from two Box servers is named with its servers when a reference is ambiguous."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from box_memory.brain.db import default_path
from box_memory.emulator.testing import running_emulator
from tests.brain.helpers import put, sync


@pytest.fixture
def _default_workspace() -> None:
    """No default workspace here (the package's conftest gives every other test one)."""


@pytest.mark.parametrize("kind", ["folder", "path"])
def test_a_sync_without_any_workspace_is_refused_and_writes_nothing(
    cli: Any, emu: Any, box: Path, tmp_path: Path, kind: str
) -> None:
    put(box, "a.md", "alpha\n")
    args = ["--folder-id", "0"] if kind == "folder" else ["--path", str(box)]
    env = cli.json("brain-sync", *args, code=3)
    [error] = env["errors"]
    assert error["code"] == "workspace_not_found"
    assert "belongs to a workspace" in error["message"] and "--workspace" in error["message"]
    assert "nothing was synced" in error["message"]
    assert not default_path().exists()
    assert cli.json("brain", "status")["data"]["sources"] == []

    # The printed cron line would be refused on every run: it is not printed either.
    printed = cli.json("brain-sync", "--print-cron", *args, code=3)
    assert "no line printed" in printed["errors"][0]["message"]


def test_the_default_workspace_binds_the_source_and_the_cron_line_names_it(cli: Any, tmp_path: Path) -> None:
    docs, ws = tmp_path / "docs", tmp_path / "ws"
    put(docs, "a.md", "alpha\n")
    cli.json("init", "--path", str(ws))  # the user's default from now on
    sync(cli, "--path", str(docs))
    [source] = cli.json("brain", "status")["data"]["sources"]
    assert source["workspace"] == str(ws.resolve())
    command = cli.json("brain-sync", "--print-cron", "--path", str(docs))["data"]["command"]
    assert command[command.index("--workspace") + 1] == str(ws.resolve())


def test_one_folder_on_two_servers_is_listed_with_its_servers(
    cli: Any, emu: Any, box: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(box, "a.md", "alpha\n")
    ws = tmp_path / "ws"
    cli.json("init", "--path", str(ws))
    sync(cli, "--folder-id", "0")
    with running_emulator(box, retry_after_s=0) as other:
        monkeypatch.setenv("BOX_MCP_URL", other.url)
        monkeypatch.setenv("BOX_ACCESS_TOKEN", other.token)
        sync(cli, "--folder-id", "0")
    sources = cli.json("brain", "status")["data"]["sources"]
    assert [(s["label"], s["server"]) for s in sources] == [("box:0", emu.url), ("box:0", other.url)]

    env = cli.json("brain", "source", "disable", "box:0", code=2)
    message = env["errors"][0]["message"]
    assert f"1: box:0 on {emu.url}" in message and f"2: box:0 on {other.url}" in message
    assert "give the source id" in message
    assert all(s["enabled"] for s in cli.json("brain", "status")["data"]["sources"])  # nothing changed
    cli.json("brain", "source", "disable", "2")
    assert [s["enabled"] for s in cli.json("brain", "status")["data"]["sources"]] == [True, False]
