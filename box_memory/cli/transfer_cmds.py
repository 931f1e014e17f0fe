"""import, export: bring memories in from other tools, take them out as JSONL or markdown."""

from __future__ import annotations

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
            help="basic-memory | claude-code | mem0 | markdown | box-memory (detected when omitted).",
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
    """Import memories from basic-memory, Claude Code, mem0 or a markdown folder (idempotent)."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.importer import run_import
        from box_memory.workspace import open_workspace

        ws = open_workspace(o.workspace)
        report = run_import(ws, source, fmt=from_, team=team, dry_run=dry_run)
        data = report.as_dict()
        warnings = [f"{e['ref']}: {e['reason']}" for e in report.errors] + report.warnings
        lines: list[str] = []
        if report.detected:
            lines.append(f"Detected format: {escape(report.detected)}")
        if dry_run:
            lines.append(
                f"Dry run: would import {data['would_import']} of {data['items']} items "
                f"({data['already_imported']} already imported, {data['failed']} failed); nothing written"
            )
        else:
            lines.append(
                f"Imported {data['imported']} of {data['items']} items "
                f"({data['already_imported']} already imported, {data['failed']} failed)"
            )
        if data["by_kind"]:
            lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in data["by_kind"].items()))
        for t in data["first_titles"]:
            lines.append(f"  - {escape(t)}")
        written = data["would_import"] if dry_run else data["imported"]
        nothing = written == 0 and data["already_imported"] == 0
        status, code = ("error", 1) if nothing else ("ok", 0)
        errors = [{"code": "nothing_imported", "message": "no item of the source could be imported"}]
        return Outcome(data, lines, warnings=warnings, status=status, exit_code=code,
                       errors=errors if nothing else [])  # fmt: skip

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
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Export memories as JSON Lines (re-importable with `import`) or a zip of the markdown files."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.errors import InvalidInput
        from box_memory.export import EXPORT_FORMATS, iter_memories, jsonl_lines, parse_since, write_zip
        from box_memory.workspace import open_workspace

        if format_ not in EXPORT_FORMATS:
            raise InvalidInput(f"unknown export format {format_!r} (expected jsonl or markdown-zip)")
        if output is None and (format_ != "jsonl" or o.json):
            raise InvalidInput(
                "--output FILE is required for markdown-zip and with --json (stdout carries the envelope)"
            )
        if output is not None and output.is_dir():
            raise InvalidInput(f"--output {output} is a folder; name a file")
        cutoff = parse_since(since)
        ws = open_workspace(o.workspace)
        items, warnings = iter_memories(ws, include_superseded=include_superseded, since=cutoff)
        if output is None:
            out = sys.stdout.buffer
            for line in jsonl_lines(items):
                out.write(line)
            out.flush()
        else:
            tmp = output.with_name(f".{output.name}.partial")
            try:
                if format_ == "jsonl":
                    with tmp.open("wb") as fh:
                        for line in jsonl_lines(items):
                            fh.write(line)
                else:
                    write_zip(items, tmp)
                tmp.replace(output)
            finally:
                tmp.unlink(missing_ok=True)
        by_status: dict[str, int] = {}
        for x in items:
            s = str(x.record["frontmatter"].get("status"))
            by_status[s] = by_status.get(s, 0) + 1
        data = {
            "format": format_,
            "output": str(output) if output is not None else None,
            "count": len(items),
            "by_status": by_status,
            "include_superseded": include_superseded,
            "since": since,
        }
        lines = [f"Exported {len(items)} memories to {escape(str(output))}"] if output is not None else []
        return Outcome(data, lines, warnings=warnings)

    run("export", o, go)
