"""Hostile input to the brain commands (issue #25): numbers past SQLite's integer range, a FIFO
or /dev/zero in place of the brain store, and editors that leave a FIFO, invalid UTF-8 or cannot
be parsed. Each is one line with the documented exit code; nothing changes; nothing hangs."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from box_memory.paths import user_dirs
from tests.brain.helpers import put
from tests.helpers.child import run_bounded

HANG_LIMIT_S = 60  # far above a normal run; a hang fails here instead of stalling the suite
MEMORY_LIMIT = 2 * 1024**3  # address space of the child: reading /dev/zero fails fast, not the machine
HUGE = "9" * 30  # past 2**63 - 1
DECISION = "We decided to use PostgreSQL for the main database because of its reliability.\n"


@pytest.fixture
def proposed(cli: Any, ws: Path, tmp_path: Path) -> dict[str, Any]:
    """A local source synced once, with its one proposed review candidate."""
    src = tmp_path / "src"
    put(src, "notes.md", DECISION)
    cli.json("brain-sync", "--path", str(src), "-w", str(ws))
    [cand] = cli.json("brain", "review")["data"]["candidates"]
    return cand


def one_error(env: dict[str, Any]) -> dict[str, Any]:
    [err] = env["errors"]
    assert err["code"] != "internal_error" and "Error:" not in err["message"], err
    return err


@pytest.mark.parametrize(
    "args",
    [
        ("accept", HUGE),
        ("accept", "#" + HUGE),
        ("reject", HUGE),
        ("review", "edit", HUGE, "--title", "New"),
        ("accept", "9" * 5000),  # past Python's own int() digit limit too
    ],
)
def test_a_candidate_id_past_sqlite_range_is_not_found(cli, ws: Path, proposed, args) -> None:
    env = cli.json("brain", *args, *(("-w", str(ws)) if args[0] == "accept" else ()), code=1)
    assert one_error(env)["code"] == "not_found"
    assert cli.json("brain", "review")["data"]["candidates"] == [proposed]


@pytest.mark.parametrize("ref", ["²", "١", "x7"])
def test_a_candidate_id_that_is_not_ascii_digits_is_a_usage_error(cli, proposed, ref: str) -> None:
    env = cli.json("brain", "reject", ref, code=2)
    assert "review candidate ids are numbers" in one_error(env)["message"]


@pytest.mark.parametrize("command", ["runs", "items", "review"])
def test_a_limit_past_sqlite_range_means_all(cli, proposed, command: str) -> None:
    data = cli.json("brain", command, "--limit", HUGE)["data"]
    assert len(next(iter(data.values()))) == 1


def test_a_source_ref_of_unicode_digits_is_not_found(cli, proposed) -> None:
    env = cli.json("brain", "runs", "--source", "²", code=1)
    assert one_error(env)["code"] == "not_found"


# --- the brain store is not a regular file ---------------------------------------------------


def bm(*args: str, home: Path, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOX_") and k not in ("VISUAL", "EDITOR")}
    env["BOX_MEMORY_HOME"] = str(home)
    env.update(env_extra or {})
    return run_bounded(*args, env=env, timeout=HANG_LIMIT_S, memory=MEMORY_LIMIT)


@pytest.mark.parametrize("command", [("status",), ("runs",), ("review",), ("purge", "1")])
def test_a_fifo_at_the_brain_store_is_named(tmp_path: Path, command: tuple[str, ...]) -> None:
    home = tmp_path / "home"
    store = home / "data" / "brain.sqlite3"
    store.parent.mkdir(parents=True)
    os.mkfifo(store)
    done = bm("brain", *command, home=home)
    assert done.returncode == 1, done
    [line] = done.stderr.strip().splitlines()
    assert "Box Brain store" in line and "FIFO" in line
    assert stat.S_ISFIFO(os.lstat(store).st_mode)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_brain_store_linked_to_a_device_is_refused_and_not_chmod_ed(
    tmp_path: Path, dev_zero_mode: int
) -> None:
    home = tmp_path / "home"
    store = home / "data" / "brain.sqlite3"
    store.parent.mkdir(parents=True)
    store.symlink_to("/dev/zero")
    before = dev_zero_mode
    done = bm("brain", "status", home=home)
    assert done.returncode == 1 and "character device" in done.stderr, done
    assert stat.S_IMODE(os.stat("/dev/zero").st_mode) == before


def test_a_brain_store_that_is_no_database_is_one_line(cli) -> None:
    path = user_dirs().brain_db
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not SQLite" * 400)
    env = cli.json("brain", "status", code=1)
    err = one_error(env)
    assert err["code"] == "brain_store_unusable" and "not a usable SQLite database" in err["message"]


def test_recall_goes_on_when_the_brain_store_is_a_fifo(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    assert bm("init", "--path", str(ws), home=home).returncode == 0
    assert bm("write", "Use Postgres", "--title", "Database", "-w", str(ws), home=home).returncode == 0
    store = home / "data" / "brain.sqlite3"
    store.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(store)
    done = bm("recall", "postgres", "-w", str(ws), home=home)
    assert done.returncode == 0 and "Database" in done.stdout, done


# --- review edit's editor ------------------------------------------------------------------


def editor_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def edit_in_subprocess(cli, proposed, tmp_path: Path, editor: str) -> subprocess.CompletedProcess[str]:
    home = Path(os.environ["BOX_MEMORY_HOME"])  # the store the fixture synced into
    return bm("brain", "review", "edit", str(proposed["id"]), home=home, env_extra={"EDITOR": editor})


@pytest.mark.skipif(os.name != "posix", reason="a POSIX shell editor")
def test_an_editor_that_leaves_a_fifo_is_refused_at_once(cli, proposed, tmp_path: Path) -> None:
    editor = editor_script(tmp_path, 'rm -f "$1" && mkfifo "$1"')
    started = time.monotonic()
    done = edit_in_subprocess(cli, proposed, tmp_path, editor)
    assert time.monotonic() - started < HANG_LIMIT_S
    assert done.returncode == 2, done
    [line] = done.stderr.strip().splitlines()
    assert "FIFO" in line and "nothing changed" in line
    assert cli.json("brain", "review")["data"]["candidates"] == [proposed]


@pytest.mark.skipif(os.name != "posix", reason="a POSIX shell editor")
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("printf 'Title \\377\\376\\n\\nStatement\\n' > \"$1\"", "not valid UTF-8"),
        ('rm -f "$1" && ln -s /dev/zero "$1"', "symbolic link"),
        ('rm -f "$1"', "removed the edited file"),
    ],
)
def test_an_editor_that_writes_something_unreadable_changes_nothing(
    cli, proposed, tmp_path: Path, body: str, expected: str
) -> None:
    done = edit_in_subprocess(cli, proposed, tmp_path, editor_script(tmp_path, body))
    assert done.returncode == 2, done
    [line] = done.stderr.strip().splitlines()
    assert expected in line and "Traceback" not in done.stderr
    assert cli.json("brain", "review")["data"]["candidates"] == [proposed]


@pytest.mark.parametrize(
    ("editor", "expected"),
    [
        ("vi 'unclosed", "cannot be split into words"),
        ("/nonexistent/editor-x", "could not be started"),
        ("  ", "names no command"),
    ],
)
def test_an_editor_command_that_cannot_run_is_a_usage_error(
    cli, proposed, monkeypatch: pytest.MonkeyPatch, editor: str, expected: str
) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", editor)
    env = cli.json("brain", "review", "edit", str(proposed["id"]), code=2)
    assert expected in one_error(env)["message"]
    assert cli.json("brain", "review")["data"]["candidates"] == [proposed]


def test_a_body_on_stdin_that_is_not_utf8_changes_nothing(cli, proposed) -> None:
    cid = str(proposed["id"])
    env = cli.json("brain", "review", "edit", cid, "--body", "-", input=b"\xff\xfe body", code=2)
    assert "not valid UTF-8" in one_error(env)["message"]
    assert cli.json("brain", "review")["data"]["candidates"] == [proposed]


@pytest.mark.skipif(os.name != "posix", reason="a POSIX shell editor")
def test_a_good_editor_still_edits(cli, proposed, tmp_path: Path) -> None:
    editor = editor_script(tmp_path, "printf 'New title\\n\\nThe new statement.\\n' > \"$1\"")
    done = edit_in_subprocess(cli, proposed, tmp_path, editor)
    assert done.returncode == 0, done
    [cand] = cli.json("brain", "review")["data"]["candidates"]
    assert (cand["title"], cand["statement"]) == ("New title", "The new statement.")
