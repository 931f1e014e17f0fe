"""`init` into a folder that holds the user's files asks (on a terminal) or refuses, and says what
it kept; `init OTHER --path SAME` on a workspace says the old name was kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.foundation import terminal


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A user's folder: notes, a subfolder, and markdown of their own in `memories/`."""
    root = tmp_path / "notes"
    (root / "memories").mkdir(parents=True)
    (root / "memories" / "todo.md").write_text("# my todo list\n")
    (root / "plan.txt").write_text("the plan\n")
    return root


def test_a_non_empty_folder_is_refused_off_a_terminal_and_nothing_changes(
    cli: Cli, folder: Path, snap: Callable[[Path], dict[str, bytes]]
) -> None:
    before = snap(folder)
    env = cli.json("init", "mine", "--path", str(folder), code=2)
    message = env["errors"][0]["message"]
    assert message.startswith(f"{folder} is not empty (memories/, plan.txt)"), message
    assert "nothing was created" in message and "--non-empty" in message
    assert snap(folder) == before
    assert sorted(p.name for p in folder.iterdir()) == ["memories", "plan.txt"]
    res = cli("init", "mine", "--path", str(folder))
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {folder} is not empty"), res.stderr


def test_non_empty_makes_the_workspace_and_says_what_was_kept(cli: Cli, folder: Path) -> None:
    env = cli.json("init", "mine", "--path", str(folder), "--non-empty")
    assert env["data"]["kept"] == ["memories/", "plan.txt"]
    assert (folder / "_box-memory.json").is_file()
    assert (folder / "plan.txt").read_text() == "the plan\n"
    assert (folder / "memories" / "todo.md").read_text() == "# my todo list\n"
    [md] = [w for w in env["warnings"] if "memories/ already held" in w]
    assert "todo.md" in md
    other = folder.parent / "other"
    other.mkdir()
    (other / "a.txt").write_text("a")
    res = cli("init", "two", "--path", str(other), "--non-empty")
    assert res.exit_code == 0
    assert "Kept what was there, as it was: a.txt" in res.stdout


def test_os_litter_does_not_make_a_folder_non_empty(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    (root / ".DS_Store").write_bytes(b"\0\0")
    env = cli.json("init", "fresh", "--path", str(root))
    assert env["data"]["kept"] == []


@pytest.mark.parametrize(("answer", "made"), [(b"y\n", True), (b"n\n", False), (b"\n", False)])
def test_on_a_terminal_init_asks_before_using_a_non_empty_folder(
    folder: Path, answer: bytes, made: bool
) -> None:
    s = terminal.start(["init", "mine", "--path", str(folder)])
    shown = s.read_until("[y/N]")
    assert f"{folder} already holds 2 files and folders (memories/, plan.txt)" in shown, shown
    s.send(answer)
    code, shown = s.finish()
    assert (folder / "_box-memory.json").is_file() is made
    if made:
        assert code == 0 and "Kept what was there, as it was: memories/, plan.txt" in shown, shown
    else:
        assert code == 2 and "nothing was created" in shown, shown
        assert sorted(p.name for p in folder.iterdir()) == ["memories", "plan.txt"]


def test_init_with_another_name_on_a_workspace_says_the_name_was_kept(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    cli.json("init", "team-memory", "--path", str(root))
    env = cli.json("init", "other", "--path", str(root))
    assert env["data"]["existed"] is True and env["data"]["name"] == "team-memory"
    assert env["data"]["name_kept_instead_of"] == "other"
    [w] = [w for w in env["warnings"] if "kept that name" in w]
    assert "'team-memory'" in w and "'other'" in w
    res = cli("init", "other", "--path", str(root))
    assert f"Workspace already existed at {root} 'team-memory' (now the default)" in res.stdout
    assert "kept that name ('other' was not used" in res.stderr
    # Without a name, the workspace's own is meant: nothing to say.
    env = cli.json("init", "--path", str(root))
    assert env["data"]["name"] == "team-memory" and "name_kept_instead_of" not in env["data"]
    assert not [w for w in env["warnings"] if "kept that name" in w]
