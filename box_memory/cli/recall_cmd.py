"""recall: find memories by id, [[Title]], slug, filters or free text. [/box-recall]"""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run

if TYPE_CHECKING:
    from box_memory.recall.service import RecallResult


def register(app: typer.Typer) -> None:
    app.command("recall")(recall_cmd)


def recall_cmd(
    query: Annotated[
        str | None,
        typer.Argument(
            help="mem_ id, Box file id, [[Title]], slug, kind:/tag:/team:/status: filters, or free text."
            " Optional when a filter option (or --id) is given.",
            show_default=False,
        ),
    ] = None,
    id_: Annotated[
        str | None,
        typer.Option("--id", help="Recall this memory id (mem_...); the same as giving it as QUERY."),
    ] = None,
    kind: Annotated[str | None, typer.Option("--kind", "-k", help="Only this kind.")] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Only with this tag (repeat = AND).")] = None,
    team: Annotated[str | None, typer.Option("--team", help="Only this team.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Only this status.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="updated_at on or after DATE.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="updated_at on or before DATE.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most N hits.")] = 10,
    include_superseded: Annotated[
        bool,
        typer.Option(
            "--include-superseded", help="Also show superseded, archived and expired memories (flagged)."
        ),
    ] = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full", help='Also print the best match\'s whole memory (for "what did we decide about X").'
        ),
    ] = False,
    no_brain: Annotated[
        bool, typer.Option("--no-brain", help="Leave out Box Brain (source-backed) hits.")
    ] = False,
    ask: Annotated[
        str | None,
        typer.Option(
            "--ask",
            metavar="QUESTION",
            help="Box workspace with Box AI: ask Box AI QUESTION over the top hits' files (marked as AI).",
        ),
    ] = None,
    hub: Annotated[
        str | None,
        typer.Option(
            "--hub",
            metavar="HUB_ID",
            help="With --ask: ask this Box Hub (default: box_hub_id in _box-memory.json); "
            "while Box AI still indexes it, the top hits' files are asked instead.",
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Find memories, best first. Never writes to the workspace. [/box-recall]

    QUERY is a memory id (mem_...), a Box file id, [[Title]], a slug, filters such as
    kind:decision tag:auth team:ops status:active (tag: repeats as AND), or free text; filters
    and free text combine. Filter options alone are a query (`recall --kind decision --tag auth`).

    Box Brain (source-backed) hits: --since/--until apply to the document's Box modified time;
    --kind, --tag, --status and --team leave that section empty (a document has none of them).
    """
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.errors import UsageProblem
        from box_memory.format.ids import is_memory_id
        from box_memory.recall.query import RecallRequest
        from box_memory.recall.service import recall
        from box_memory.workspace.resolve import open_workspace

        text = query
        if id_ is not None:
            if query is not None and query.strip() != id_.strip():
                raise UsageProblem("give the memory id either as QUERY or with --id, not both")
            if not is_memory_id(id_.strip()):
                raise UsageProblem(f"--id expects a memory id (mem_ + 26 characters), got {id_!r}")
            text = id_.strip()
        if not (text or "").strip() and not (kind or tag or team or status or since or until):
            raise UsageProblem(
                "missing QUERY: give words, a mem_ id, [[Title]], a slug, or a filter such as --kind/--tag"
            )
        if hub is not None and ask is None:
            raise UsageProblem("--hub names the Box Hub --ask questions go to: give --ask QUESTION too")

        ws = open_workspace(o.workspace)
        res = recall(
            ws,
            RecallRequest(
                query=text or "",
                kind=kind,
                tags=tag or [],
                team=team,
                status=status,
                since=since,
                until=until,
                limit=limit,
                include_superseded=True if include_superseded else None,
                full=full,
                brain=not no_brain,
            ),
        )
        result = res.result
        best = res.data.get("full")
        if ask is not None:
            from box_memory.recall.ask import ask_over

            result = ask_over(ws, result, ask, hub=hub)
        elif ws.config.settings.get("ai_recall_enabled") is True:
            from box_memory.recall.ask import ask_by_setting

            result = ask_by_setting(ws, result)
        # --json prints the envelope only: no human lines to build
        lines = [] if o.json else _lines(res, verbose, sys.stdout.isatty())
        if result.data.get("ask") and not o.json:
            a = result.data["ask"]
            lines += [f"[magenta]{escape(a['label'])}[/magenta]", escape(a["answer"])]
            if a.get("asked_by"):
                lines.append(f"  asked because {a['asked_by']} is on in _box-memory.json")
            if a.get("hub", {}).get("answered"):
                lines.append(f"  from Box Hub {a['hub']['id']}")
            for s in a["sources"]:
                name = escape(str(s.get("title") or s.get("name") or ""))
                lines.append(f"  from {s.get('id') or s['file_id']}  {name}  {s['url']}")
        return Outcome(result, lines, raw=best["content"] if best else None)

    run("recall", o, go)


def _lines(res: "RecallResult", verbose: bool, tty: bool) -> list[str]:
    """Plain text off a terminal; rich markup (highlighted matches) on one."""
    data = res.data
    esc = escape
    if data.get("full"):
        f = data["full"]
        return [f"[bold]{f['id']}[/bold]  [dim]{esc(f['path'])}[/dim]", esc(f["content"].rstrip("\n"))]
    lines: list[str] = []
    for i, h in enumerate(data["hits"], 1):
        flag = ""
        if h.get("flag") or h.get("superseded"):
            flag = f"  [yellow]({h.get('flag') or 'superseded'} - current: {h.get('current_id')})[/yellow]"
        lines.append(
            f"{i:>2}. [bold]{esc(h['title'])}[/bold]  {h['kind']} · {h['status']} · team {esc(h['team'])}"
            f"  [dim]score {h['score']:g} ({h['matched_on']})[/dim]{flag}"
        )
        tags = f"  tags: {esc(', '.join(h['tags']))}" if h["tags"] else ""
        lines.append(f"    [dim]{h['id']}  {esc(h['path'])}  {h['updated_at']}{tags}[/dim]")
        if h["excerpt"]:
            text = _highlight(h["excerpt"], res.marks.get(h["id"], [])) if tty else h["excerpt"]
            lines.append(f"    {text}")
    if data.get("brain"):
        lines.append("Box Brain (source-backed):")
        lines.append(f"  [dim]{esc(data.get('brain_boundary') or '')}[/dim]")
        for h in data["brain"]:
            lines.append(f"  - [bold]{esc(h['name'])}[/bold]  {esc(h['url'] or h['path'] or '')}")
            if h.get("excerpt"):
                spans = [(a, b) for a, b in h.get("highlights", [])]
                text = _highlight(h["excerpt"], spans) if tty else esc(h["excerpt"])
                lines.append(f"    [dim]{text}[/dim]")
    if verbose:
        c = data["cache"]
        lines.append(
            f"[dim]route {data['route']}; cache: {c['folders']} folders, re-read {c['reread_folders']} "
            f"folders / {c['reread_files']} files in {c['refresh_ms']} ms"
            f"{' (rebuilt)' if c['rebuilt'] else ''}[/dim]"
        )
    return lines


def _highlight(text: str, marks: list[tuple[int, int]]) -> str:
    out: list[str] = []
    pos = 0
    for a, b in sorted(marks):
        if a < pos:
            continue
        out.append(escape(text[pos:a]))
        out.append(f"[bold yellow]{escape(text[a:b])}[/bold yellow]")
        pos = b
    out.append(escape(text[pos:]))
    return "".join(out)
