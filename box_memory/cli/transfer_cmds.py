"""import, export: bring memories in from other tools, take them out as JSONL or markdown."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
    app.command("export")(export_cmd)


def import_cmd(
    source: Annotated[Path, typer.Argument(help="Folder or file to import from.")],
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="basic-memory | claude-code | mem0 | markdown | box-memory (alias jsonl; "
            "detected when omitted).",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would be written; write nothing.")
    ] = False,
    team: Annotated[str | None, typer.Option("--team", help="Team folder to import into.")] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Import memories from basic-memory, Claude Code, mem0 or a markdown folder (idempotent).

    An unchanged item is skipped; a changed one supersedes what it imported before."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.transfer.importer import import_memories
        from box_memory.workspace.resolve import open_workspace

        ws = open_workspace(o.workspace)
        result = import_memories(ws, source, fmt=from_, team=team, dry_run=dry_run)
        data = result.data
        lines: list[str] = []
        if data["detected"]:
            lines.append(f"Detected format: {escape(data['detected'])}")
        if dry_run:
            lines.append(
                f"Dry run: would import {data['would_import']} of {data['items']} items "
                f"({data['updated']} updates, {data['already_imported']} already imported, "
                f"{data['failed']} failed); nothing written"
            )
        else:
            lines.append(
                f"Imported {data['imported']} of {data['items']} items "
                f"({data['updated']} updated, {data['already_imported']} already imported, "
                f"{data['failed']} failed)"
            )
        if data["by_kind"]:
            lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in data["by_kind"].items()))
        for t in data["first_titles"]:
            lines.append(f"  - {escape(t)}")
        shown_of = data["would_import"] if dry_run else data["imported"]
        if len(data["first_titles"]) < (shown_of or 0):
            lines.append(f"  ... and {shown_of - len(data['first_titles'])} more")
        for path in data["read_outside_source"]:  # files the source format itself names
            lines.append(f"  read from outside the source: {escape(path)}")
        return Outcome(result, lines)

    run("import", o, go)


def export_cmd(
    format_: Annotated[
        str, typer.Option("--format", help="jsonl (one memory per line) or markdown-zip.")
    ] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="File to write (jsonl defaults to stdout; a zip needs one)."),
    ] = None,
    include_superseded: Annotated[
        bool, typer.Option("--include-superseded", help="Also export superseded and archived memories.")
    ] = False,
    since: Annotated[
        str | None, typer.Option("--since", help="Only memories updated on or after this date.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Replace --output if it is an existing regular file.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Export memories as JSON Lines (re-importable with `import`) or a zip of the markdown files."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.transfer.export import ExportRequest, export_memories
        from box_memory.workspace.resolve import open_workspace

        req = ExportRequest(format_, output, include_superseded, since, force)
        stdout = None if o.json else sys.stdout.buffer
        req.check(to_stdout=stdout is not None)  # before the workspace is looked for
        result = export_memories(open_workspace(o.workspace), req, stdout)
        lines = (
            [f"Exported {result.data['count']} memories to {escape(str(output))}"]
            if output is not None
            else []
        )
        return Outcome(result, lines)

    run("export", o, go)
