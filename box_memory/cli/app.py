"""The `box-memory` Typer application: each command is a thin layer over one library call."""

from __future__ import annotations

from typing import Annotated

import typer

from box_memory import __version__

app = typer.Typer(
    name="box-memory",
    help="Durable, auditable memory for AI agents, stored as markdown files in Box.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is plain: "[/box-init]" is a slash command, not markup
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"box-memory {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Durable, auditable memory for AI agents, stored as markdown files in Box."""


def _register() -> None:
    from box_memory.cli import (
        auth_cmd,
        brain_cmd,
        companion_cmd,
        index_cmds,
        mcp_cmd,
        memory_cmds,
        recall_cmd,
        serve_cmd,
        status_cmd,
        team_cmd,
    )

    for module in (
        memory_cmds,
        companion_cmd,
        index_cmds,
        status_cmd,
        team_cmd,
        recall_cmd,
        auth_cmd,
        mcp_cmd,
        brain_cmd,
        serve_cmd,
    ):
        module.register(app)


_register()


def main() -> None:
    app()
