"""`box-memory import` on hostile sources: links out of the source tree, the workspace itself,
FIFOs and devices given as the source."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import snapshot
from tests.transfer.test_import import copy_source, do_import

SECRET = "root:$6$saltsalt$SECRETHASH:19000:0:99999:7:::\n"


def secret_file(tmp_path: Path) -> Path:
    """Stands in for /etc/shadow: a file outside the source that must never become a memory."""
    outside = tmp_path / "etc" / "shadow.md"
    outside.parent.mkdir()
    outside.write_text(SECRET)
    return outside


def assert_no_secret(ws: Path) -> None:
    for p in ws.rglob("*"):
        if p.is_file():
            assert b"SECRETHASH" not in p.read_bytes(), p


@pytest.mark.parametrize(
    ("fixture", "link"),
    [
        ("markdown/notes", "shadow.md"),
        ("basic-memory/project", "people/shadow.md"),
        ("claude-code/project", "services/CLAUDE.md"),
        ("claude-code/project", ".claude/rules/shadow.md"),
    ],
)
def test_a_link_out_of_the_source_is_never_followed(
    cli, ws: Path, tmp_path: Path, fixture: str, link: str
) -> None:
    src = copy_source(tmp_path, fixture)
    (src / link).parent.mkdir(parents=True, exist_ok=True)
    (src / link).symlink_to(secret_file(tmp_path))
    # A linked folder that leads out of the source is not entered either.
    (src / "linked-dir").symlink_to(tmp_path / "etc", target_is_directory=True)
    env = do_import(cli, ws, str(src))
    reasons = {e["ref"]: e["reason"] for e in env["data"]["errors"]}
    assert reasons[str(src / link)].startswith("a symbolic link out of the source (to ")
    assert env["data"]["imported"] > 0  # the rest of the source imports
    assert_no_secret(ws)


def test_a_link_that_stays_inside_the_source_is_read(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "markdown/notes")
    (src / "alias.md").symlink_to(src / "deploy-window.md")
    data = do_import(cli, ws, str(src))["data"]
    assert data["imported"] == 3 and data["already_imported"] == 1  # the same bytes, once


def test_importing_the_workspace_into_itself_is_refused(cli, ws: Path, snap) -> None:
    cli.json("write", "Deploys on Tuesdays.", "--title", "Deploy window", "-w", str(ws))
    before = snap(ws)
    for source in (ws, ws / "memories"):
        for how in ((), ("--from", "markdown")):
            env = do_import(cli, ws, str(source), *how, code=2)
            assert "inside the workspace" in env["errors"][0]["message"], env
    assert snap(ws) == before


def test_a_source_holding_the_workspace_skips_the_workspace_files(cli, tmp_path: Path) -> None:
    """Notes with the workspace in a sub-folder: every run, the first included, leaves the
    workspace's own memory files out, so a second run adds nothing."""
    notes = copy_source(tmp_path, "markdown/notes")
    ws = notes / "box"
    cli.json("init", "--path", str(ws))
    cli.json("write", "Deploys on Tuesdays.", "--title", "Old deploy note", "-w", str(ws))
    first = do_import(cli, ws, str(notes))
    assert first["data"]["imported"] == 3
    assert any("of the workspace itself" in w for w in first["warnings"])
    after_first = snapshot(ws)
    second = do_import(cli, ws, str(notes))["data"]
    assert second["imported"] == 0 and second["already_imported"] == 3
    assert snapshot(ws) == after_first


def test_a_fifo_or_device_as_the_source_is_named_not_missing(cli, ws: Path, tmp_path: Path, snap) -> None:
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    before = snap(ws)
    for how in ((), ("--from", "markdown"), ("--from", "mem0")):
        env = do_import(cli, ws, str(fifo), *how, code=2)
        assert env["errors"][0]["code"] != "not_found"
        assert "is a FIFO" in env["errors"][0]["message"], env
    if Path("/dev/null").exists():
        env = do_import(cli, ws, "/dev/null", code=2)
        assert "device" in env["errors"][0]["message"], env
    assert snap(ws) == before
    missing = do_import(cli, ws, str(tmp_path / "gone"), code=1)
    assert missing["errors"][0]["code"] == "not_found"


def test_files_claude_code_names_outside_the_source_must_be_regular_markdown(
    cli, ws: Path, tmp_path: Path
) -> None:
    """A parent folder's CLAUDE.md and an `@path` import outside the source are read only when
    they are regular markdown files, never through a link; the ones read are listed."""
    mono = copy_source(tmp_path, "claude-code/monorepo")
    src = mono / "apps" / "web"
    secret = secret_file(tmp_path)
    (mono / "CLAUDE.md").unlink()
    (mono / "CLAUDE.md").symlink_to(secret)  # the parent's CLAUDE.md leads to /etc/shadow
    (mono / "docs" / "style.md").unlink()
    (mono / "docs" / "style.md").symlink_to(secret)
    (src / "CLAUDE.md").write_text(
        (src / "CLAUDE.md").read_text() + f"- Keys: @{tmp_path}/etc/passwd\n- Also @{secret.parent}\n"
    )
    (tmp_path / "etc" / "passwd").write_text("root:x:0:0:SECRETHASH\n")
    env = do_import(cli, ws, str(src))
    data = env["data"]
    assert data["read_outside_source"] == []
    reasons = {e["ref"]: e["reason"] for e in data["errors"]}
    assert reasons[str(mono / "CLAUDE.md")] == "a symbolic link outside the source; not followed"
    assert reasons[str(mono / "docs" / "style.md")] == "a symbolic link outside the source; not followed"
    assert any("passwd" in w and "not a markdown file" in w for w in env["warnings"])
    assert data["imported"] == 4  # web CLAUDE.md, its setup.md and deploy.md imports, the frontend rule
    assert_no_secret(ws)


def test_a_file_named_on_the_command_line_is_read_even_as_a_link(cli, ws: Path, tmp_path: Path) -> None:
    """The rule is about links found inside a source; the source the user names is theirs."""
    real = copy_source(tmp_path, "claude-code/project") / "CLAUDE.md"
    link = tmp_path / "elsewhere" / "CLAUDE.md"
    link.parent.mkdir()
    link.symlink_to(real)
    data = do_import(cli, ws, str(link))["data"]
    assert data["failed"] == 0 and data["imported"] == 4
