"""Box Drive is found by what Box Drive leaves on its platform, not by a folder named `Box`.

The platform is set with BOX_MEMORY_PLATFORM (Linux runs these tests), HOME is a fake one, and the
markers are the folders Box's admin documentation names (see box_memory/paths.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Cli


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("USERPROFILE", raising=False)
    monkeypatch.delenv("LOCALAPPDATA", raising=False)
    monkeypatch.delenv("BOX_MEMORY_BOX_DRIVE", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


def _drive(cli: Cli) -> str | None:
    return cli.json("init", "probe")["data"]["box_drive_root"]  # type: ignore[no-any-return]


def test_on_linux_a_home_box_folder_is_not_box_drive(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's tour makes ~/Box/agent-memory on Linux, where Box Drive has no client."""
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "linux")
    ws = home / "Box" / "agent-memory"
    cli.json("init", "team-memory", "--path", str(ws))
    status = cli.json("status", "-w", str(ws))["data"]["workspace"]["box_drive"]
    assert status == {"inside": False, "root": None, "found": False}
    text = cli("status", "-w", str(ws)).stdout
    assert "Box Drive syncs it" not in text
    assert "Box Drive: not on this machine (this folder is not synced to Box)" in text
    env = cli.json("init", "other")  # no --path: nothing is offered
    assert env["data"]["box_drive_root"] is None
    assert not [w for w in env["warnings"] if "Box Drive" in w]
    # Even the macOS File Provider location means nothing on Linux.
    (home / "Library" / "CloudStorage" / "Box-Box").mkdir(parents=True)
    assert _drive(cli) is None


def test_macos_file_provider_folder_is_box_drive(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "darwin")
    fpe = home / "Library" / "CloudStorage" / "Box-Box"
    fpe.mkdir(parents=True)
    assert _drive(cli) == str(fpe)
    ws = fpe / "agent-memory"
    cli.json("init", "m", "--path", str(ws))
    assert "Box Drive: inside" in cli("status", "-w", str(ws)).stdout


def test_macos_home_box_counts_only_beside_box_drives_data(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "darwin")
    (home / "Box").mkdir()
    assert _drive(cli) is None  # a folder named Box, nothing more
    (home / "Library" / "Application Support" / "Box" / "Box").mkdir(parents=True)
    assert _drive(cli) == str(home / "Box")  # legacy kernel mode: Box Drive's data folder too


def test_windows_box_folder_counts_only_beside_box_drives_data(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "win32")
    (home / "Box").mkdir()
    assert _drive(cli) is None
    local = tmp_path / "LocalAppData"
    (local / "Box" / "Box").mkdir(parents=True)
    monkeypatch.setenv("LOCALAPPDATA", str(local))
    assert _drive(cli) == str(home / "Box")


def test_a_box_drive_folder_moved_by_an_admin_is_named(
    cli: Cli, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "linux")
    moved = tmp_path / "Cloud" / "Box"
    moved.mkdir(parents=True)
    monkeypatch.setenv("BOX_MEMORY_BOX_DRIVE", str(moved))
    assert _drive(cli) == str(moved)
