"""The `box-memory` Typer application: each command is a thin layer over one library call.

`main()` builds only the command being run (typer turns every parameter of every registered
command into click objects at start-up, ~20 ms for all of them); `app`, the full application with
every command, is built on first access for tests, docs and `--help`.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated, Any

import typer

from box_memory import __version__

# Command name -> the module under box_memory.cli that registers it (in help order).
COMMAND_MODULES: dict[str, str] = {
    "init": "memory_cmds",
    "write": "memory_cmds",
    "get": "memory_cmds",
    "recall": "recall_cmd",
    "companion": "companion_cmd",
    "index-rebuild": "index_cmds",
    "status": "status_cmd",
    "team": "team_cmd",
    "auth": "auth_cmd",
    "mcp-check": "mcp_cmd",
    "brain-sync": "brain_cmd",
    "brain": "brain_cmd",
    "serve": "serve_cmd",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"box-memory {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Durable, auditable memory for AI agents, stored as markdown files in Box."""


def build_app(modules: list[str]) -> typer.Typer:
    new = typer.Typer(
        name="box-memory",
        help="Durable, auditable memory for AI agents, stored as markdown files in Box.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # help text is plain: "[/box-init]" is a slash command, not markup
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    new.callback()(_root)
    for name in modules:
        importlib.import_module(f"box_memory.cli.{name}").register(new)
    return new


def all_modules() -> list[str]:
    return list(dict.fromkeys(COMMAND_MODULES.values()))


def __getattr__(name: str) -> Any:
    if name == "app":
        full = build_app(all_modules())
        globals()["app"] = full
        return full
    raise AttributeError(name)


def main() -> None:
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in COMMAND_MODULES:
        build_app([COMMAND_MODULES[command]])(prog_name="box-memory")
    elif command is None and sys.argv[1:2] == ["--version"]:
        build_app([])(prog_name="box-memory")
    else:
        build_app(all_modules())(prog_name="box-memory")
