"""The CLI builds only the command being run, and still answers `--help` and shell completion for
every command: `box-memory --help`, `box-memory <cmd> --help` and typer's completion
(`_BOX_MEMORY_COMPLETE`), each through the real `main()` in a fresh process."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from typing import Any

import click
import typer

from box_memory.cli import app as app_module

# Runs main() once per (argv, extra env) given as JSON, in one process, and prints each run's
# stdout and exit code as one JSON list: the same lazy entry point a user's shell calls.
RUNNER = """
import contextlib, io, json, os, sys
from box_memory.cli.app import main
out = []
for argv, env in json.loads(sys.argv[1]):
    os.environ.update(env)
    sys.argv = ["box-memory", *argv]
    buf = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(buf):
        try:
            main()
        except SystemExit as e:
            code = e.code or 0
    for k in env:
        del os.environ[k]
    out.append([buf.getvalue(), code])
print(json.dumps(out))
"""


def _run_all(calls: list[tuple[list[str], dict[str, str]]]) -> list[tuple[str, int]]:
    env = {**os.environ, "COLUMNS": "200"}
    res = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(calls)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return [(text, code) for text, code in json.loads(res.stdout)]


def _root() -> click.Group:
    root = typer.main.get_command(app_module.app)
    assert isinstance(root, click.Group)
    return root


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `group`, with its words after `box-memory`."""
    found = []
    for name, cmd in group.commands.items():
        found.append(((*path, name), cmd))
        if isinstance(cmd, click.Group):
            found += _commands(cmd, (*path, name))
    return found


def _callbacks(app: typer.Typer) -> list[Any]:
    out: list[Any] = [app.registered_callback.callback] if app.registered_callback else []
    out += [c.callback for c in app.registered_commands]
    for g in app.registered_groups:
        if g.typer_instance is not None:
            out += _callbacks(g.typer_instance)
    return out


def test_command_signatures_are_not_strings_typer_must_evaluate() -> None:
    """typer reads each command's parameters from its signature on every run; string annotations
    (`from __future__ import annotations` in a command module) it evaluates twice per function,
    ~5 ms of `recall`'s start. The command modules keep real annotations."""
    callbacks = [cb for cb in _callbacks(app_module.app) if cb is not None]
    assert len(callbacks) > len(app_module.COMMAND_MODULES)
    for cb in callbacks:
        strings = [k for k, v in inspect.get_annotations(cb).items() if isinstance(v, str)]
        assert not strings, (cb.__module__, cb.__qualname__, strings)


def test_help_lists_every_command_and_each_command_has_its_own() -> None:
    commands = _commands(_root())
    outputs = _run_all([(["--help"], {})] + [([*path, "--help"], {}) for path, _ in commands])
    (top, code), rest = outputs[0], outputs[1:]
    assert code == 0
    lines = top.splitlines()
    for name in app_module.COMMAND_MODULES:
        short = _root().commands[name].get_short_help_str(limit=60)
        words = " ".join(short.split()[:4])
        assert any(line.split()[:1] == [name] and words in line for line in lines), (name, words, top)
    for (path, cmd), (text, code) in zip(commands, rest, strict=True):
        assert code == 0, (path, text)
        assert f"Usage: box-memory {' '.join(path)}" in text, (path, text)
        first = (cmd.help or "").strip().splitlines()[0] if cmd.help else ""
        assert " ".join(first.split()[:4]) in " ".join(text.split()), (path, first, text)


def _complete(words: str) -> dict[str, str]:
    return {
        "_BOX_MEMORY_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }


def test_shell_completion_answers_for_every_command() -> None:
    """Completing `box-memory <TAB>` names every command; `box-memory <cmd> --<TAB>` that
    command's own options, and a group's subcommands."""
    commands = _commands(_root())
    calls = [([], _complete("box-memory "))]
    for path, cmd in commands:
        calls.append(([], _complete(f"box-memory {' '.join(path)} --")))
        if isinstance(cmd, click.Group):
            calls.append(([], _complete(f"box-memory {' '.join(path)} ")))
    outputs = iter(_run_all(calls))

    def values(text: str) -> set[str]:
        return {line.split(",", 1)[1] for line in text.splitlines() if "," in line}

    top, code = next(outputs)
    assert code == 0 and values(top) >= set(app_module.COMMAND_MODULES), top
    for path, cmd in commands:
        text, code = next(outputs)
        options = {o for p in cmd.params if isinstance(p, click.Option) for o in p.opts if o.startswith("--")}
        assert code == 0 and values(text) >= options, (path, options, text)
        if isinstance(cmd, click.Group):
            text, code = next(outputs)
            assert code == 0 and values(text) >= set(cmd.commands), (path, text)


def test_a_build_reads_each_command_signature_once(monkeypatch: Any) -> None:
    """typer asks for a command's parameters for its click parameters and again for its callback
    (each time evaluating every annotation): one read per function is what a build costs."""
    reads: list[Any] = []

    def counted(func: Any) -> Any:
        reads.append(func)
        return typer.utils.get_params_from_function(func)

    monkeypatch.setattr(app_module, "_read_params", counted)
    monkeypatch.setattr(app_module, "_params_of", {})
    typer.main.get_command(app_module.build_app(["recall_cmd"]))
    assert reads, "the build read no signature"
    assert len(reads) == len(set(reads)), sorted(f.__name__ for f in reads)


FROZEN = """
import atexit, gc, sys
from box_memory.cli.app import main
atexit.register(lambda: sys.stderr.write(f"frozen {gc.get_freeze_count()}\\n"))
sys.argv = ["box-memory", "--version"]
main()
"""


def test_the_entry_point_keeps_what_is_loaded_out_of_the_cyclic_collector() -> None:
    """The standard library, typer and click stay loaded until the process ends: the entry point
    moves them out of the cyclic collector's reach (`gc.freeze`), which otherwise walks them in
    every full collection the command's imports set off and once more at exit."""
    res = subprocess.run(
        [sys.executable, "-c", FROZEN], capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    assert int(res.stderr.rsplit("frozen ", 1)[1]) > 10_000, res.stderr
