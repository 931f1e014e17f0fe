"""The `box-memory` Typer application: each command is a thin layer over one library call.

`main()` builds only the command being run (typer turns every parameter of every registered
command into click objects at start-up, ~20 ms for all of them); `app`, the full application with
every command, is built on first access for tests, docs and `--help`.
"""

import gc
import importlib
import shutil
import sys
import time
from collections.abc import Sequence
from typing import Annotated, Any

import click
import typer
import typer.core
import typer.main

from box_memory import __version__

# Command name -> the module under box_memory.cli that registers it (in help order).
COMMAND_MODULES: dict[str, str] = {
    "init": "memory_cmds",
    "write": "memory_cmds",
    "get": "memory_cmds",
    "recall": "recall_cmd",
    "fetch": "fetch_cmd",
    "companion": "companion_cmd",
    "index-rebuild": "index_cmds",
    "status": "status_cmd",
    "log": "audit_cmds",
    "report": "audit_cmds",
    "team": "team_cmd",
    "auth": "auth_cmd",
    "mcp-check": "mcp_cmd",
    "brain-sync": "brain_cmd",
    "brain": "brain_cmd",
    "serve": "serve_cmd",
    "import": "transfer_cmds",
    "export": "transfer_cmds",
}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"box-memory {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    json_: Annotated[
        bool, typer.Option("--json", help="Print one JSON envelope on stdout (as --json after the command).")
    ] = False,
) -> None:
    """Durable, auditable memory for AI agents, stored as markdown files in Box."""


def _hoist_json(argv: list[str]) -> bool:
    """`box-memory --json status` means `box-memory status --json`: a `--json` before the command
    name moves to the end of the options (before a `--`). True when the command runs with --json."""
    end = argv.index("--") if "--" in argv else len(argv)
    lead = 0
    while lead < end and argv[lead].startswith("-"):
        lead += 1
    if lead < end and "--json" in argv[:lead]:
        argv[:lead] = [a for a in argv[:lead] if a != "--json"]
        end = argv.index("--") if "--" in argv else len(argv)
        argv.insert(end, "--json")
    end = argv.index("--") if "--" in argv else len(argv)
    return "--json" in argv[:end]


class CliGroup(typer.core.TyperGroup):
    """With --json anywhere, usage errors (missing argument, unknown option or command, bad value)
    are the one JSON envelope on stdout with exit 2, like every other error."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if not _hoist_json(argv):
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        try:
            return super().main(argv, prog_name, complete_var, False, **extra)
        except click.UsageError as e:
            from box_memory.cli.output import Opts, Outcome, emit
            from box_memory.result import failure

            path = e.ctx.command_path.split(" ", 1)[1:] if e.ctx is not None else []
            command = path[0] if path else (next((a for a in argv if not a.startswith("-")), "box-memory"))
            outcome = Outcome(failure("usage_error", e.format_message(), 2))
            emit(command, Opts(json=True), outcome, time.perf_counter())
            raise SystemExit(2) from None


class _Argument(typer.core.TyperArgument):
    """typer's argument, keeping its help. click 8.5 gave `click.Argument` a `help` of its own, and
    typer 0.24's constructor sets `self.help` before calling click's, which resets it to None: every
    positional argument lost its description in `--help`."""

    def __init__(self, *, help: str | None = None, **attrs: Any) -> None:
        super().__init__(help=help, **attrs)
        self.help = help


class _Command(typer.core.TyperCommand):
    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Nothing: typer's "Arguments" section already lists them (click 8.5 would add a second,
        "Positional arguments", now that arguments keep their help)."""


# The classes typer.main builds commands and arguments with (typer is pinned below 0.25).
typer.main.TyperArgument = _Argument  # type: ignore[misc]
typer.main.TyperCommand = _Command  # type: ignore[misc]

_read_params = typer.main.get_params_from_function
_params_of: dict[Any, Any] = {}


def _params_once(func: Any) -> Any:
    """typer reads a command's parameters from its signature twice per build (for its click
    parameters, then for the names its callback passes on), each time evaluating every annotation
    and copying every `Option`: once per function is enough (nothing changes what it returns)."""
    got = _params_of.get(func)
    if got is None:
        got = _params_of[func] = _read_params(func)
    return got


typer.main.get_params_from_function = _params_once


def _one_suggestion(app: typer.Typer) -> None:
    """click already says "Did you mean 'recall'?" for a mistyped command; typer's own copy of
    that hint (on by default) would say it a second time."""
    app.suggest_commands = False
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _one_suggestion(group.typer_instance)


def help_width() -> int:
    """Help is as wide as the terminal (click stops at 80 columns unless told), at least 80."""
    return max(shutil.get_terminal_size((80, 24)).columns, 80)


def build_app(modules: list[str]) -> typer.Typer:
    new = typer.Typer(
        name="box-memory",
        cls=CliGroup,
        help="Durable, auditable memory for AI agents, stored as markdown files in Box.\n\n"
        "A command's calls to Box end by BOX_MEMORY_DEADLINE_S seconds in all (default 180; 0 for "
        "none); brain-sync, fetch, and serve as a whole, are exempt.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # help text is plain: "[/box-init]" is a slash command, not markup
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": help_width()},
    )
    new.callback()(_root)
    for name in modules:
        importlib.import_module(f"box_memory.cli.{name}").register(new)
    _one_suggestion(new)
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
    # What is loaded by now (the standard library, typer, click) stays until the process ends:
    # the cyclic collector need not walk it again, neither in the collections the command's own
    # imports set off nor in the last one at exit (~5 ms of a recall's CPU in all).
    gc.freeze()
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    if command in COMMAND_MODULES:
        build_app([COMMAND_MODULES[command]])(prog_name="box-memory")
    elif command is None and sys.argv[1:2] == ["--version"]:
        build_app([])(prog_name="box-memory")
    else:
        build_app(all_modules())(prog_name="box-memory")
