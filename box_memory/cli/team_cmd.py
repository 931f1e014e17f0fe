"""team create|ls|inspect|conflicts|remove. [/box-team]"""

from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run

team_app = typer.Typer(
    name="team",
    help="Create, list, inspect and remove team subtrees (teams/<name>/). [/box-team]",
    no_args_is_help=True,
)

NameArg = Annotated[str, typer.Argument(help="Team name (lowercase kebab-case).")]


def register(app: typer.Typer) -> None:
    app.add_typer(team_app, name="team")


@team_app.command("create")
def create_cmd(
    name: NameArg,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Create teams/<name>/ with empty indexes and add it to the config (idempotent)."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.maintenance.teams import create_team
        from box_memory.workspace.resolve import open_workspace

        result = create_team(open_workspace(o.workspace), name)
        res = result.data
        verb = "already exists" if res["existed"] else "created"
        lines = [f"Team [bold]{res['team']}[/bold] {verb}."]
        lines += [f"  {f}" for f in res["folders"]]
        if res["existed"] and res["created"]:
            lines.append(f"  added missing: {', '.join(res['created'])}")
        lines.append(f"Note: {res['note']}")
        lines.append(f"Write to it: box-memory write ... --team {res['team']}")
        return Outcome(result, lines)

    run("team create", o, go)


@team_app.command("ls")
def ls_cmd(
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List teams with their counts."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.maintenance.teams import list_teams
        from box_memory.workspace.resolve import open_workspace

        result = list_teams(open_workspace(o.workspace))
        rows = [
            [
                r["team"] + (" (default)" if r["default"] else ""),
                str(r["memories"]),
                str(r["companions"]),
                str(r["files"]),
            ]
            for r in result.data["teams"]
        ]
        return Outcome(result, [], table=(["team", "memories", "companions", "files"], rows))

    run("team ls", o, go)


@team_app.command("inspect")
def inspect_cmd(
    name: NameArg,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Show one team: counts by status and kind, recent memories, top tags, files."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.maintenance.teams import inspect_team
        from box_memory.workspace.resolve import open_workspace

        result = inspect_team(open_workspace(o.workspace), name)
        return Outcome(result, _inspect_lines(result.data))

    run("team inspect", o, go)


def _inspect_lines(r: dict[str, Any]) -> list[str]:
    lines = [f"Team: [bold]{r['team']}[/bold]" + (" (default)" if r["default"] else "")]
    lines.append(f"Memories ({r['memories']}), companions ({r['companions']}), files ({r['files']})")
    if r["by_status"]:
        lines.append("  by status: " + ", ".join(f"{k} {v}" for k, v in r["by_status"].items()))
    if r["by_kind"]:
        lines.append("  by kind:   " + ", ".join(f"{k} {v}" for k, v in r["by_kind"].items()))
    if r["recent"]:
        lines.append("Most recent:")
        lines += [f"  - {escape(str(e['title']))} ({e['kind']}, {e['updated_at']})" for e in r["recent"]]
    if r["top_tags"]:
        lines.append("Top tags: " + ", ".join(f"{t['tag']} {t['count']}" for t in r["top_tags"]))
    if r["files_list"]:
        lines.append("Files:")
        lines += [
            f"  - {escape(f['path'])} (companion: {'yes' if f['companion'] else 'no'})"
            for f in r["files_list"]
        ]
    return lines


@team_app.command("conflicts")
def conflicts_cmd(
    include_all: Annotated[
        bool, typer.Option("--all", help="Include superseded and archived memories.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Slugs and titles that appear in more than one team (reported, never resolved)."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.maintenance.teams import team_conflicts
        from box_memory.workspace.resolve import open_workspace

        result = team_conflicts(open_workspace(o.workspace), include_all=include_all)
        res = result.data
        lines: list[str] = []
        for label, key, field in (("slug", "slugs", "slug"), ("title", "titles", "title")):
            for c in res[key]:
                lines.append(f"Same {label} in several teams: {escape(str(c[field]))}")
                lines += [
                    f"  {m['team']:<16} {m['id']} ({m['status']}, updated {m['updated_at']})"
                    for m in c["memories"]
                ]
        if not lines:
            lines.append("No cross-team conflicts.")
        else:
            lines.append(
                "Resolve by hand: leave as is, write a shared memory and supersede each team's "
                "version, or retitle one."
            )
        return Outcome(result, lines)

    run("team conflicts", o, go)


@team_app.command("remove")
def remove_cmd(
    name: NameArg,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Confirm: stop tracking the team and archive its folder.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Stop tracking a team and move teams/<name>/ to _archive/teams/<name>/ (nothing is deleted)."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.errors import InvalidInput
        from box_memory.maintenance.teams import remove_team
        from box_memory.workspace.resolve import open_workspace

        if not yes:
            raise InvalidInput(
                f"`team remove {name}` drops the team from the config and moves teams/{name}/ to "
                "_archive/teams/ (no file is deleted); pass --yes to confirm"
            )
        result = remove_team(open_workspace(o.workspace), name)
        res = result.data
        lines = [f"Team [bold]{res['team']}[/bold] removed from the config."]
        if res["archived_to"]:
            lines.append(f"  teams/{res['team']}/ moved to {res['archived_to']} (every file kept)")
        return Outcome(result, lines)

    run("team remove", o, go)
