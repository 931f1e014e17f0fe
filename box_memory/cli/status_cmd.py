"""status: a read-only snapshot of the workspace. [/box-status]"""

from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run


def register(app: typer.Typer) -> None:
    app.command("status")(status_cmd)


def status_cmd(
    check_indexes: Annotated[
        bool,
        typer.Option("--check-indexes", help="Also compare every index with its files (parses them all)."),
    ] = False,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Box: detect the tier and capabilities again and save them (after a plan change).",
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Counts by team, kind and status; index health; recent memories; top tags; what next."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.maintenance.status import status
        from box_memory.workspace.resolve import open_workspace

        res = status(
            open_workspace(o.workspace), check_indexes=check_indexes, refresh=refresh, cache=o.verbose
        )
        return Outcome(res, _lines(res.data))

    run("status", o, go)


def _box_drive_line(bd: dict[str, Any] | None) -> list[str]:
    if bd is None:
        return []
    if bd["inside"]:
        return [f"Box Drive: inside {escape(str(bd['root']))} (Box Drive syncs it)"]
    if not bd.get("found", True):
        return ["Box Drive: not on this machine (this folder is not synced to Box)"]
    return ["Box Drive: not inside the Box Drive folder (nothing here syncs to Box)"]


def _lines(d: dict[str, Any]) -> list[str]:
    w = d["workspace"]
    t = d["totals"]
    lines = [
        f"[bold]box-memory workspace: {escape(str(w['name']))}[/bold]",
        f"Root:      {escape(str(w['root']))}  ({w['backend']}, tier {w['tier']})",
        f"Layout:    companions {w['companion_layout']}, memories {w.get('memory_layout', 'flat')},"
        f" default team {w['default_team']}",
        *_box_drive_line(w.get("box_drive")),
        "",
        f"Memories:  {t['memories']}   companions: {t['companions']}   files: {t['files']}",
    ]
    comp = d.get("companions") or {}
    if comp.get("stale") or comp.get("orphaned"):
        lines.append(f"  companions: {comp['stale']} stale, {comp['orphaned']} orphaned")
    if d["by_status"]:
        lines.append("  by status: " + ", ".join(f"{k} {v}" for k, v in d["by_status"].items()))
    if d["by_kind"]:
        lines.append("  by kind:   " + ", ".join(f"{k} {v}" for k, v in d["by_kind"].items()))
    lines.append("Teams:")
    for name, row in d["teams"].items():
        lines.append(
            f"  {name:<16} {row['memories']} memories, {row['companions']} companions, {row['files']} files"
        )
    h = d["index_health"]
    lines.append(
        f"Index health: {'[green]ok[/green]' if h['ok'] else '[yellow]needs attention[/yellow]'}"
        f" ({len(h['folders'])} folder indexes, rollup {h['rollup']['state']})"
    )
    for f in h["folders"]:
        if f["drift"]:
            lines.append(f"  drift: {f['folder']} - {'; '.join(f['drift'])}")
    if d.get("layout_advice"):
        lines.append(f"  large index: {escape(d['layout_advice']['message'])}")
    if h.get("lock"):
        lk = h["lock"]
        lines.append(
            f"  lock held by {lk.get('writer')} (pid {lk.get('pid')}) for {lk['age_s']}s"
            + (" - stale" if lk["stale"] else "")
        )
    if d["recent"]:
        lines.append("Most recent:")
        for e in d["recent"]:
            lines.append(f"  - {escape(str(e['title']))} ({e['kind']}, {e['updated_at']}, {e['team']})")
    if d["top_tags"]:
        lines.append("Top tags: " + ", ".join(f"{x['tag']} {x['count']}" for x in d["top_tags"]))
    if "recall_cache" in d:
        c = d["recall_cache"]
        size = f"{c['bytes'] / 1e6:.1f} MB" if c["exists"] else "not built yet"
        lines.append(f"Recall cache: {escape(c['path'])} ({size}, schema {c['schema']})")
    lines.append("Next:")
    lines += [f"  {escape(s)}" for s in d["next"]]
    return lines
