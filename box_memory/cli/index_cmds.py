"""index-rebuild: regenerate indexes from the memory files, or (`--check`) only report drift."""

from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run

SHOW = 10  # items of each list shown in human output (--json has them all)


def register(app: typer.Typer) -> None:
    app.command("index-rebuild")(index_rebuild_cmd)


def index_rebuild_cmd(
    folder: Annotated[
        str | None,
        typer.Argument(help="Only this folder (e.g. memories/, teams/eng/memories/, or teams/eng)."),
    ] = None,
    team: Annotated[str | None, typer.Option("--team", help="Only this team's folders.")] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; print the diff; exit 6 on drift.")
    ] = False,
    companions_only: Annotated[
        bool, typer.Option("--companions-only", help="Only the companion folders (files/, companions/).")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Rebuild folder indexes and the rollup from the memory files. [/box-index-rebuild]"""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.maintenance.index_rebuild import index_rebuild
        from box_memory.workspace.resolve import open_workspace

        ws = open_workspace(o.workspace)
        res = index_rebuild(ws, folder, team=team, check=check, companions_only=companions_only)
        return Outcome(
            res, _lines(res.data) + [f"[red]error:[/red] {escape(e['message'])}" for e in res.errors]
        )

    run("index-rebuild", o, go)


def _lines(r: dict[str, Any]) -> list[str]:
    folders = r["folders"]
    if r["check"]:
        d = r["diff"]
        head = (
            "[yellow]Drift found[/yellow]"
            if r["drift"]
            else "[green]Indexes match the files[/green]"
            if r.get("complete", True)
            else "[yellow]Not fully checked[/yellow]"
        ) + f" ({len(folders)} folder(s), {r['memories']} memories, {r['companions']} companions)"
        lines = [head]
        for key in ("added", "removed", "changed"):
            items = d[key]
            if items:
                lines.append(f"  {key} ({len(items)}):")
                for it in items[:SHOW]:
                    extra = f" [{', '.join(it['fields'])}]" if it.get("fields") else ""
                    lines.append(f"    {it['folder']}{it['id']}{extra}")
                if len(items) > SHOW:
                    lines.append(f"    ... {len(items) - SHOW} more (--json lists all)")
        for f in folders:
            if f["reasons"]:
                lines.append(f"  {f['folder']}: {'; '.join(f['reasons'])}")
        roll = r["rollup"]
        if roll.get("drift"):
            lines.append(f"  rollup _index.json: {roll.get('state')}, {_counts(roll)} (it may lag)")
        if r["drift"]:
            lines.append("Run `box-memory index-rebuild` to repair.")
        return lines
    written = sum(1 for f in folders if f["written"])
    lines = [
        f"Rebuilt {written} folder index(es)"
        + (" and the rollup" if r["rollup"].get("written") else "")
        + f": {r['memories']} memories, {r['companions']} companions"
    ]
    changed = sum(len(v) for v in r["diff"].values())
    if changed:
        d = r["diff"]
        lines.append(f"  {len(d['added'])} added, {len(d['removed'])} removed, {len(d['changed'])} changed")
    for key, label in (
        ("orphans", "orphan(s): listed, kept on disk"),
        ("duplicate_ids", "duplicate id(s): fix by hand, then rebuild"),
        ("slug_conflicts", "active slug conflict(s)"),
        ("conflict_copies", "index conflict copy(ies) merged"),
        ("stale_companions", "stale/orphaned companion(s): run `box-memory companion FILE`"),
    ):
        if r[key]:
            lines.append(f"  {len(r[key])} {label}")
    for a in r["archived"]:
        if a.get("archived_to"):
            lines.append(f"  archived {escape(str(a['path']))} -> {escape(str(a['archived_to']))}")
    return lines


def _counts(roll: dict[str, Any]) -> str:
    return ", ".join(f"{k} {roll[k]}" for k in ("added", "removed", "changed") if roll.get(k))
