"""log and report: what the workspace's agents remembered, for the people who answer for it."""

from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run


def register(app: typer.Typer) -> None:
    app.command("log")(log_cmd)
    app.command("report")(report_cmd)


def log_cmd(
    since: Annotated[str | None, typer.Option("--since", help="Events on or after DATE (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Events on or before DATE.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Only events by this agent.")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="Only memories of this kind.")] = None,
    team: Annotated[str | None, typer.Option("--team", help="Only this team.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most N events (newest first).")] = 100,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print directly, even on a terminal.")] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """The timeline: writes, supersedes, archives and team changes, newest first.

    One line per event: time, event, agent, kind, title, the superseded or superseding id.
    On a terminal it goes through $BOX_MEMORY_PAGER, $PAGER or `less -FRX`, as git log does.
    """
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.audit.timeline import LogRequest, timeline
        from box_memory.workspace.resolve import open_workspace

        req = LogRequest(since=since, until=until, agent=agent, kind=kind, team=team, limit=limit)
        res = timeline(open_workspace(o.workspace), req)
        return Outcome(res, log_lines(res.data["events"]), page=not no_pager)

    run("log", o, go)


def log_line(ev: dict[str, Any]) -> str:
    when = str(ev["at"])[:16].replace("T", " ")
    link = ""
    if ev["supersedes"]:
        link += f"  supersedes {', '.join(ev['supersedes'])}"
    if ev["superseded_by"]:
        link += f"  superseded by {ev['superseded_by']}"
    ident = f"  [dim]{ev['id']}[/dim]" if ev["id"] else ""
    return (
        f"{when:<16}  [bold]{ev['event']:<11}[/bold] {escape(ev['agent'] or '-'):<14} "
        f"{escape(ev['kind']):<11} {escape(ev['title'])}{link}{ident}"
    )


def log_lines(events: list[dict[str, Any]]) -> list[str]:
    return [log_line(ev) for ev in events] or ["No events match."]


def report_cmd(
    output: Annotated[
        str,
        typer.Option("--output", "-o", help="The HTML file to write (self-contained).", show_default=False),
    ],
    weeks: Annotated[int, typer.Option("--weeks", help="Weeks of history in the chart.")] = 12,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """One self-contained HTML page for a review: activity by agent, decisions, chains, health.

    No network, scripts, external styles or fonts: it opens on an air-gapped machine.
    """
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.audit.report import write_report
        from box_memory.workspace.resolve import open_workspace

        res = write_report(open_workspace(o.workspace), output, weeks=weeks)
        lines = [f"Wrote {escape(res.data['output'])} ({res.data['bytes']:,} bytes)"]
        lines += [escape(s) for s in res.data["summary"]]
        return Outcome(res, lines)

    run("report", o, go)
