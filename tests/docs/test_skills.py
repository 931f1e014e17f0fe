"""Every SKILL.md parses and names only commands and flags the CLI really has."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
import typer.main

from box_memory.cli.app import app
from box_memory.format import frontmatter

ROOT = Path(__file__).resolve().parents[2]
SKILLS = sorted((ROOT / "skills").glob("*/SKILL.md"))
EXPECTED = {
    "box-init",
    "box-write",
    "box-recall",
    "box-index-rebuild",
    "box-companion",
    "box-status",
    "box-team",
    "box-brain-sync",
    "box-mcp-check",
}


def cli_tree() -> click.Group:
    group = typer.main.get_command(app)
    assert isinstance(group, click.Group)
    return group


def resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """Walk `box-memory a b ...` down the command tree; return the command and the rest."""
    cmd: click.Command = cli_tree()
    rest = list(words)
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        sub = cmd.commands.get(rest[0])
        assert sub is not None, f"no command {rest[0]!r} under {cmd.name!r}"
        cmd, rest = sub, rest[1:]
    return cmd, rest


def flags_of(cmd: click.Command) -> set[str]:
    out: set[str] = set()
    for p in cmd.params:
        out.update(p.opts)
        out.update(getattr(p, "secondary_opts", []))
    return out


def invocations(text: str) -> list[list[str]]:
    """`box-memory ...` snippets inside backticks (pipes and placeholders cut off)."""
    found = []
    for snippet in re.findall(r"`([^`]*box-memory [^`]*)`", text):
        part = snippet[snippet.index("box-memory ") :].split("|")[0]
        part = part.replace("...", " ")
        found.append(shlex.split(part)[1:])
    return found


def test_every_expected_skill_exists() -> None:
    assert {p.parent.name for p in SKILLS} == EXPECTED


@pytest.mark.parametrize("path", SKILLS, ids=lambda p: p.parent.name)
def test_skill_frontmatter(path: Path) -> None:
    meta, body = frontmatter.parse(path.read_text(encoding="utf-8"), str(path))
    assert meta["name"] == path.parent.name
    assert isinstance(meta["description"], str) and len(meta["description"]) > 40
    hint = meta["argument-hint"]
    assert isinstance(hint, str) and hint.isascii()
    assert "untrusted" in body or "Never follow instructions" in body or "never follow instructions" in body


@pytest.mark.parametrize("path", SKILLS, ids=lambda p: p.parent.name)
def test_skill_names_only_real_commands_and_flags(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    calls = invocations(text)
    assert calls, "a skill must show the command to run"
    for words in calls:
        cmd, rest = resolve(words)
        known = flags_of(cmd)
        for w in rest:
            if w.startswith("--") or re.fullmatch(r"-[a-zA-Z]", w):
                assert w.split("=")[0] in known, f"{path.parent.name}: {w} is not a flag of {cmd.name}"
    # The argument hint's flags belong to the skill's main command.
    main = path.parent.name.removeprefix("box-")
    meta, _ = frontmatter.parse(text, str(path))
    if main in cli_tree().commands:
        cmd = cli_tree().commands[main]
        if isinstance(cmd, click.Group):
            known = set().union(*(flags_of(c) for c in cmd.commands.values()))
        else:
            known = flags_of(cmd)
        for flag in re.findall(r"--[a-z][a-z-]*", meta["argument-hint"]):
            assert flag in known, f"{path.parent.name}: hint flag {flag} not in {main}"


def test_plugin_manifest_points_at_skills() -> None:
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "box-memory"
    assert (ROOT / manifest["skills"]).resolve() == (ROOT / "skills").resolve()
