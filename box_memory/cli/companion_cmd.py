"""companion: describe a binary in a markdown memory pinned to its sha256; check and list staleness."""

import sys
from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run


def register(app: typer.Typer) -> None:
    app.command("companion")(companion_cmd)


def companion_cmd(
    file: Annotated[
        str | None, typer.Argument(help="The binary, a path inside the workspace (e.g. files/report.pdf).")
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Only answer current|stale|orphaned|missing (exit 6 unless current)."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Write a new companion even when the current one is up to date.")
    ] = False,
    body: Annotated[
        str | None, typer.Option("--body", help="Companion text, or '-' to read stdin (default: a skeleton).")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Extra tag (repeatable).")] = None,
    team: Annotated[str | None, typer.Option("--team", help="Team scope of the binary.")] = None,
    stale: Annotated[
        bool,
        typer.Option(
            "--stale", help="List every stale or orphaned companion (exit 6 if any); --team narrows it."
        ),
    ] = False,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent or person reviewing the file.")] = None,
    extract: Annotated[
        bool,
        typer.Option(
            "--extract",
            help="Box workspace with Box AI: fill summary, parties, dates, amounts by Box AI extraction.",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Write or check the companion of a binary (streamed sha256, never chunked); plugin: /box-companion."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.errors import InvalidInput
        from box_memory.workspace.resolve import open_workspace

        if stale:
            if file is not None or check or force or body is not None or tag:
                raise InvalidInput(
                    "--stale lists the whole workspace: give no FILE, --check, --force, --body or --tag"
                )
            return _stale(open_workspace(o.workspace), team)
        if file is None:
            raise InvalidInput("no FILE given: pass the binary's path (or --stale to list stale companions)")
        if check:
            if force or body is not None or tag:
                raise InvalidInput("--check writes nothing: drop --force, --body and --tag")
            return _check(open_workspace(o.workspace), file, team)
        if extract and body is not None:
            raise InvalidInput("--extract fills the companion from Box AI: drop --body")
        text = _read_body(body)
        return _write(open_workspace(o.workspace), file, text, tag or [], team, force, agent, extract)

    run("companion", o, go)


def _read_body(body: str | None) -> str | bytes | None:
    from box_memory.errors import InvalidInput
    from box_memory.write.checks import MAX_CONTENT_BYTES

    if body != "-":
        return body
    raw = sys.stdin.buffer.read(MAX_CONTENT_BYTES + 1)
    if len(raw) > MAX_CONTENT_BYTES:
        raise InvalidInput(f"body is larger than {MAX_CONTENT_BYTES // 1024} KiB")
    return raw


def _write(
    ws: Any,
    file: str,
    body: str | bytes | None,
    tags: list[str],
    team: str | None,
    force: bool,
    agent: str | None,
    extract: bool = False,
) -> Outcome:
    from box_memory.write.companions import CompanionRequest, write_companion

    result = write_companion(
        ws,
        CompanionRequest(
            file=file, body=body, tags=tags, team=team, force=force, agent=agent, extract=extract
        ),
    )
    res = result.data
    action = res["action"]
    if action == "unchanged":
        lines = [
            f"Up to date: [bold]{res['id']}[/bold] {escape(res['path'])} "
            f"(sha256 {res['sha256'][:12]}…) - not rewritten; --force writes a new one"
        ]
    else:
        verb = "Wrote" if action == "created" else "Regenerated"
        lines = [
            f"{verb} [bold]{res['id']}[/bold] '{escape(res['title'])}'",
            f"  file: {escape(res['path'])}",
            f"  binary: {escape(res['binary'])} ({res['mime_type']}, {res['size_bytes']} bytes)",
            f"  sha256: {res['sha256']}",
        ]
        if res.get("supersedes"):
            lines.append(f"  supersedes: {res['supersedes']} (archived as {escape(res['archived'])})")
        if res.get("extracted_by") == "setting":
            lines.append("  fields: filled by Box AI Extract (ai_extract_enabled is on in _box-memory.json)")
        elif res.get("ai_extracted"):
            lines.append("  fields: filled by Box AI Extract (--extract)")
    return Outcome(result, lines)


def _check(ws: Any, file: str, team: str | None) -> Outcome:
    from box_memory.write.companion_state import check_companion

    result = check_companion(ws, file, team=team)
    res = result.data
    state = res["state"]
    if state == "missing":
        line = f"missing: {escape(res['binary'])} has no companion (expected {escape(res['expected_path'])})"
    elif state == "orphaned":
        line = f"orphaned: {escape(res['path'])} describes {escape(str(res['binary']))}, which is gone"
    else:
        line = f"{state}: {escape(res['path'])} pins {res['hash_algo']}:{res['pinned']}"
        if state == "stale":
            why = escape(str(res.get("error") or "it cannot be read"))
            line += f", the binary is now {res['current']}" if res.get("current") else f"; {why}"
    return Outcome(result, [line])


def _stale(ws: Any, team: str | None) -> Outcome:
    from box_memory.write.companion_state import stale_list

    result = stale_list(ws, team)
    rows = result.data["stale"]
    lines = [f"{len(rows)} of {result.data['checked']} companion(s) stale or orphaned"]
    table = None
    if rows:
        table = (
            ["state", "companion", "binary", "id"],
            [[r["state"], escape(r["path"]), escape(str(r["binary"])), r["id"]] for r in rows],
        )
    return Outcome(result, lines, table=table)
