"""What a person meets in a terminal: `serve` typed by hand, help and recall at the terminal's
width, every argument described, one "Did you mean" for a mistyped command.

Terminal tests run the real console entry point in a pseudo-terminal (tests/foundation/terminal.py).
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import click
import typer.main

from box_memory.cli.app import app
from tests.conftest import Cli
from tests.foundation import terminal


def test_serve_typed_into_a_terminal_says_what_it_waits_for_and_ctrl_c_ends_it(tmp_path: Path) -> None:
    s = terminal.start(["serve"], cwd=tmp_path)
    shown = s.read_until("streamable-http")
    assert "waiting for an MCP client on stdin" in shown, shown
    assert "Ctrl-C" in shown and "Ctrl-D" in shown, shown
    assert "box-memory serve --transport streamable-http" in shown, shown
    s.read_until("\x00", timeout=1.0)  # the server is now in its read loop
    s.send(b"\x03")
    code, shown = s.finish(timeout=15)
    assert code in (130, -signal.SIGINT), (code, shown)


def test_serve_under_a_client_prints_nothing_but_the_protocol(tmp_path: Path) -> None:
    """Spawned by an MCP client (stdin a pipe), the terminal hint is not printed."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "box_memory", "serve"],
        input=b"",
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0 and proc.stdout == b""
    assert b"waiting for an MCP client" not in proc.stderr


def _arguments(cmd: click.Command, path: list[str]) -> list[tuple[str, click.Parameter]]:
    out = [(" ".join(path), p) for p in cmd.params if p.param_type_name == "argument"]
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            out += _arguments(sub, [*path, name])
    return out


def test_every_positional_argument_is_described() -> None:
    args = _arguments(typer.main.get_command(app), ["box-memory"])
    assert len(args) > 10
    undescribed = [(where, p.name) for where, p in args if not getattr(p, "hidden", False) and not p.help]
    assert undescribed == []


def test_help_uses_the_terminal_width_and_shows_the_arguments() -> None:
    code, shown = terminal.run(["write", "--help"], cols=120)
    assert code == 0, shown
    assert re.search(r"\[CONTENT\]\s+Memory text, or '-' to read stdin", shown), shown
    assert "Positional arguments" not in shown  # one arguments section, not two
    lines = shown.splitlines()
    assert max(len(line) for line in lines) > 80 and all(len(line) <= 120 for line in lines), shown
    # The --title help is one sentence that fits two 120-column lines (four at 80).
    title = next(i for i, line in enumerate(lines) if "--title" in line)
    assert "the old title" in lines[title] + lines[title + 1], shown

    code, shown = terminal.run(["get", "--help"], cols=120)
    assert "REF  Memory id, [[Title]], slug or Box file id" in shown, shown
    code, shown = terminal.run(["brain-sync", "--help"], cols=120)
    assert "5..10080" in shown, shown

    code, shown = terminal.run(["--help"], cols=120)
    assert code == 0, shown
    for summary in (
        "Write or check the companion of a binary (streamed sha256, never chunked)",
        "Serve recall, get, write, log, report and the other memory tools over MCP.",
        "Counts by team, kind and status; index health; recent memories; top tags; what next.",
    ):
        assert summary in shown, shown
    assert "..." not in shown.split("Commands:")[1], shown


def test_recall_lines_fit_a_120_column_terminal_and_wrap_between_words(cli: Cli, ws: Path) -> None:
    words = "deployment pipeline configuration requires careful coordination between the release teams"
    title = "A rather long title about deployment pipeline configuration and coordination between many teams"
    cli.json(
        "write",
        " ".join([words] * 6),
        "--title",
        title,
        "--tag",
        "coordination",
        "--tag",
        "pipeline",
        "--tag",
        "deployment",
        "-w",
        str(ws),
    )
    code, shown = terminal.run(["recall", "deployment", "-w", str(ws)], cols=120)
    assert code == 0, shown
    lines = [line for line in shown.splitlines() if line.strip()]
    assert all(len(line) <= 120 for line in lines), "\n".join(lines)
    assert any(line.startswith(" 1. A rather long title") for line in lines), shown
    # Every word of the title and excerpt is whole on some line: nothing was cut mid-word.
    shown_words = set(" ".join(lines).split())
    assert set(title.split()) <= shown_words, shown
    assert set(words.split()) <= shown_words, shown
    # Continuation lines are indented under the text, not at the left edge.
    assert all(line.startswith(" ") for line in lines), shown


def test_a_mistyped_command_suggests_once(cli: Cli) -> None:
    res = cli("recal", "x")
    assert res.exit_code == 2
    assert res.stderr.count("Did you mean 'recall'?") == 1, res.stderr
    env = cli.json("recal", "x", code=2)
    assert env["errors"][0]["message"].count("Did you mean") == 1, env
    env = cli.json("team", "crate", "x", code=2)
    assert env["errors"][0]["message"].count("Did you mean 'create'?") == 1, env
