"""Where the Box Drive folder is: `init` offers it, `status` says whether a workspace is in it.

Box Drive's folder is simulated on a simulated macOS (`BOX_MEMORY_PLATFORM=darwin`) with a fake
HOME holding `Library/CloudStorage/Box-Box` (File Provider) or `Box` beside Box Drive's data folder
(older installs); tests/foundation/test_box_drive.py covers Windows and Linux.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "darwin")
    monkeypatch.delenv("USERPROFILE", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home


def test_init_without_path_offers_the_macos_box_drive_folder_off_a_terminal(cli, fake_home, tmp_path):
    box = fake_home / "Library" / "CloudStorage" / "Box-Box"
    box.mkdir(parents=True)
    env = cli.json("init", "demo")
    assert env["data"]["workspace"] == str((tmp_path / "work" / "demo").resolve())
    assert env["data"]["box_drive_root"] == str(box)
    offer = [x for x in env["warnings"] if "Box Drive found" in x]
    assert offer == [
        f"Box Drive found at {box}, but the workspace is made in the current folder: "
        f"pass --path {box / 'demo'} to keep it in Box"
    ]
    status = cli.json("status", "-w", env["data"]["workspace"])["data"]["workspace"]
    assert status["box_drive"] == {"inside": False, "root": None, "found": True}


def test_the_older_home_box_folder_is_found_too(cli, fake_home):
    (fake_home / "Box").mkdir()
    (fake_home / "Library" / "Application Support" / "Box" / "Box").mkdir(parents=True)
    env = cli.json("init", "demo")
    assert env["data"]["box_drive_root"] == str(fake_home / "Box")


def test_no_box_drive_no_offer(cli, fake_home):
    env = cli.json("init", "demo")
    assert env["data"]["box_drive_root"] is None
    assert not [x for x in env["warnings"] if "Box Drive" in x]


def test_init_inside_box_drive_is_not_offered_elsewhere_and_status_says_inside(cli, fake_home, monkeypatch):
    box = fake_home / "Library" / "CloudStorage" / "Box-Box"
    (box / "projects").mkdir(parents=True)
    monkeypatch.chdir(box / "projects")
    env = cli.json("init", "demo")
    assert env["data"]["workspace"] == str((box / "projects" / "demo").resolve())
    assert not [x for x in env["warnings"] if "Box Drive found" in x]
    status = cli.json("status", "-w", env["data"]["workspace"])["data"]["workspace"]
    assert status["box_drive"] == {"inside": True, "root": str(box), "found": True}
    text = cli("status", "-w", env["data"]["workspace"]).stdout
    assert f"Box Drive: inside {box}" in text


def _init_on_a_terminal(answer: bytes, home: Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """`box-memory init demo --json` with a pseudo-terminal as stdin, answering the question."""
    master, slave = pty.openpty()
    env = {**os.environ, "HOME": str(home)}
    env.pop("USERPROFILE", None)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "box_memory", "init", "demo", "--json"],
            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
        )  # fmt: skip
        os.write(master, answer)
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.parametrize(("answer", "in_box"), [(b"\n", True), (b"y\n", True), (b"n\n", False)])
def test_on_a_terminal_init_asks_and_uses_the_box_drive_folder(fake_home, tmp_path, answer, in_box):
    import json

    box = fake_home / "Library" / "CloudStorage" / "Box-Box"
    box.mkdir(parents=True)
    res = _init_on_a_terminal(answer, fake_home, tmp_path / "work")
    assert res.returncode == 0, res.stderr
    assert b"Box Drive found at" in res.stderr  # the question goes to stderr, stdout stays JSON
    data = json.loads(res.stdout)["data"]
    expected = (box / "demo") if in_box else (tmp_path / "work" / "demo")
    assert data["workspace"] == str(expected.resolve())
    assert (expected / "_box-memory.json").is_file()
