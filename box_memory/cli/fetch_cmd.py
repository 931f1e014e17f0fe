"""fetch: bring the text of memories this machine holds only by their index entry into the recall
cache, paced under Box's per-user rate limit (recall/fill.py)."""

from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, run


def register(app: typer.Typer) -> None:
    app.command("fetch")(fetch_cmd)


def fetch_cmd(
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="At most this many memories (newest first).")
    ] = None,
    calls_per_minute: Annotated[
        float,
        typer.Option(
            "--calls-per-minute",
            min=0,
            help="Box calls a minute (default 950, 95% of Box's per-user limit; 0: unpaced).",
        ),
    ] = 950.0,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Bring the text of every memory here, so recall searches it all locally (paced on Box).

    A first recall on a big Box workspace reads the indexes only, and recall never downloads Box
    Drive online-only files; this fetches those memories' text into the recall cache."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory import settings
        from box_memory.recall.fill import FillRequest, fetch_text
        from box_memory.workspace.resolve import open_workspace

        notice = None if (json_ or quiet) else (lambda line: typer.echo(line, err=True))
        with settings.no_deadline():  # long by design (paced under Box's rate limit)
            req = FillRequest(calls_per_minute or None, limit, notice)
            res = fetch_text(open_workspace(o.workspace), req)
        return Outcome(res, _lines(res.data))

    run("fetch", o, go)


def _lines(d: dict[str, Any]) -> list[str]:
    if not d["fetched"] and not d["remaining"]:
        return ["Nothing to fetch: recall holds the text of every memory"]
    line = f"Fetched the text of {d['fetched']} memories in {d['seconds']:g} s"
    pace = d["pace"]
    if pace["achieved_per_minute"]:
        line += f" ({pace['calls']} paced calls, {pace['achieved_per_minute']:g} a minute)"
    out = [line]
    if d["remaining"]:
        out.append(f"{d['remaining']} memories still have their text on Box only (run fetch again)")
    return out
