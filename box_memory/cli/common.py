"""Options every command accepts after its name (`box-memory recall x --json`)."""

from typing import Annotated

import typer

from box_memory.cli.output import Opts

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON envelope on stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="More detail (tracebacks on failure).")]
WorkspaceOpt = Annotated[
    str | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Workspace folder, or box:<folder_id> for a Box cloud workspace.",
        show_default=False,
    ),
]


def opts(json_: bool, quiet: bool, verbose: bool, workspace: str | None = None) -> Opts:
    return Opts(json=json_, quiet=quiet, verbose=verbose, workspace=workspace)
