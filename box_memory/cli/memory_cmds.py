"""init, write, get: the foundation commands."""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run


def register(app: typer.Typer) -> None:
    app.command("init")(init_cmd)
    app.command("write")(write_cmd)
    app.command("get")(get_cmd)


def init_cmd(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Workspace name (and folder name under the current dir); default box-memory. An "
            "existing workspace keeps its name.",
            show_default=False,
        ),
    ] = None,
    path: Annotated[
        Path | None, typer.Option("--path", help="Workspace folder (created if missing).")
    ] = None,
    parent: Annotated[
        str | None, typer.Option("--parent", help="Box folder id to create the workspace in (cloud).")
    ] = None,
    backend: Annotated[str | None, typer.Option("--backend", help="local or cloud.")] = None,
    team: Annotated[list[str] | None, typer.Option("--team", help="Team to create (repeatable).")] = None,
    layout: Annotated[str, typer.Option("--layout", help="Companion layout: sibling or folder.")] = "sibling",
    reinit: Annotated[
        bool, typer.Option("--reinit", help="Fill in missing keys and folders of an existing workspace.")
    ] = False,
    memory_layout: Annotated[
        str | None,
        typer.Option(
            "--memory-layout",
            help="Where new memories go: flat (memories/, the plugin's) or monthly (memories/YYYY-MM/,"
            " a write's cost bounded by one month). Also switches an existing workspace; nothing moves.",
            show_default=False,
        ),
    ] = None,
    non_empty: Annotated[
        bool,
        typer.Option(
            "--non-empty",
            help="Make a workspace of a folder that already holds other files (kept as they are); "
            "without it, init asks on a terminal and refuses otherwise.",
        ),
    ] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Create a workspace (idempotent) and make it the default. [/box-init]"""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.maintenance.init import InitRequest, init

        req = InitRequest(name, path, parent, backend, team or [], layout, reinit, non_empty, memory_layout)
        confirm = _confirm if sys.stdin.isatty() else None
        result = init(req, confirm=confirm)
        return Outcome(result, _init_lines(result.data))

    run("init", o, go)


def _confirm(question: str, default: bool) -> bool:
    from box_memory import progress

    with progress.paused():  # nothing drawn over the question
        return bool(typer.confirm(question, default=default, err=True))


def _init_lines(data: dict[str, Any]) -> list[str]:
    verb = "Workspace already existed at" if data["existed"] else "Created workspace at"
    if data["backend"] == "local":
        where, name = escape(data["workspace"]), escape(data["name"])
        lines = [f"{verb} [bold]{where}[/bold] '{name}' (now the default)"]
        if data.get("kept"):
            kept = data["kept"]
            more = f" and {len(kept) - 8} more" if len(kept) > 8 else ""
            lines.append(f"Kept what was there, as it was: {escape(', '.join(kept[:8]))}{more}")
    else:
        lines = [
            f"{verb} [bold]{escape(data['workspace'])}[/bold] '{escape(data['name'])}' (now the default)",
            f"  Box folder: {data['web_url']}",
            f"  tier: {data['tier']}; metadata template: {data['metadata_template_key'] or 'none'}",
        ]
    if data["existed"] and data["created"]:
        lines.append(f"Added: {', '.join(data['created'])}")
    lines.append(f"Teams: {', '.join(data['teams'])}")
    if data.get("memory_layout"):
        lines.append(f"Memory layout: {data['memory_layout']}")
    return lines


def _read_content(content: str | None) -> str:
    """The argument, or stdin's bytes as text (read bounded; the write checks the text once)."""
    from box_memory.errors import InvalidInput
    from box_memory.write.checks import MAX_CONTENT_BYTES, decode_text

    if content is None:
        raise InvalidInput("no content: pass it as an argument, or '-' to read stdin")
    if content != "-":
        return content
    return decode_text(sys.stdin.buffer.read(MAX_CONTENT_BYTES + 1))


def write_cmd(
    content: Annotated[str | None, typer.Argument(help="Memory text, or '-' to read stdin.")] = None,
    title: Annotated[
        str | None,
        typer.Option(
            "--title",
            "-t",
            help="Title (required unless the content's frontmatter has one, or --supersedes: "
            "a replacement keeps the old title, kind, tags, team and related unless given).",
        ),
    ] = None,
    kind: Annotated[
        str | None, typer.Option("--kind", "-k", help="decision|fact|task|observation|reference|note.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable).")] = None,
    team: Annotated[str | None, typer.Option("--team", help="Team folder to write into.")] = None,
    status: Annotated[str, typer.Option("--status", help="active or draft.")] = "active",
    supersedes: Annotated[
        str | None, typer.Option("--supersedes", help="Id of the memory this replaces.")
    ] = None,
    related: Annotated[
        list[str] | None, typer.Option("--related", help='Related "[[Title]]" (repeatable).')
    ] = None,
    confidence: Annotated[float | None, typer.Option("--confidence", help="0..1.")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent or person writing.")] = None,
    source: Annotated[
        list[str] | None, typer.Option("--source", help="TYPE:REF provenance (repeatable).")
    ] = None,
    new_slug: Annotated[
        bool, typer.Option("--new-slug", help="Keep both when the title exists already.")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Write a new memory (append-only). [/box-write]"""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.workspace.resolve import open_workspace
        from box_memory.write.memories import write_memory
        from box_memory.write.prepare import WriteRequest

        body = _read_content(content)
        ws = open_workspace(o.workspace)
        result = write_memory(
            ws,
            WriteRequest(
                content=body,
                title=title or "",
                kind=kind,
                tags=tag or [],
                team=team,
                status=status,
                supersedes=supersedes,
                related=related or [],
                confidence=confidence,
                agent=agent,
                sources=source or [],
                new_slug=new_slug,
            ),
        )
        res = result.data
        lines = [
            f"{'Already written' if res.get('already_written') else 'Wrote'} [bold]{res['id']}[/bold] "
            f"{res['kind']} '{escape(res['title'])}'",
            f"  file: {res['file']}",
        ]
        if res.get("supersedes"):
            lines.append(f"  supersedes: {res['supersedes']}")
        if res.get("inherited"):
            lines.append(f"  kept from the replaced memory: {', '.join(res['inherited'])}")
        if res.get("kind_changed_from"):
            lines.append(f"  kind changed: {res['kind_changed_from']} -> {res['kind']}")
        return Outcome(result, lines)

    run("write", o, go)


def get_cmd(
    ref: Annotated[str, typer.Argument(help="Memory id, [[Title]], slug or Box file id.")],
    history: Annotated[bool, typer.Option("--history", help="Show the whole supersede chain.")] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Print one memory; --history walks its supersede chain."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.workspace.resolve import open_workspace
        from box_memory.write.get import get_memory

        ws = open_workspace(o.workspace)
        result = get_memory(ws, ref, history=history)
        res = result.data
        # Piped or redirected, a plain `get` prints the memory file exactly as stored.
        piped = not (history or o.json or o.quiet or sys.stdout.isatty())
        raw = None if not piped else ws.store.read_bytes(res["path"]).decode("utf-8", "surrogateescape")
        return Outcome(result, _get_lines(res), raw=raw)

    run("get", o, go)


def _get_lines(res: dict[str, Any]) -> list[str]:
    from box_memory.format import frontmatter

    fm = res["frontmatter"]
    lines = [f"[dim]{res['path']}[/dim]"]
    lines.append(escape(frontmatter.render(fm, res["body"]).rstrip("\n")))
    if "history" in res:
        lines.append("")
        lines.append("[bold]History (oldest first):[/bold]")
        for h in res["history"]:
            mark = "->" if h["id"] == res["id"] else "  "
            created = h.get("created_at") or h["updated_at"]
            lines.append(f"{mark} {h['id']}  {h['status']:<10} {created}  {escape(str(h['title']))}")
    return lines
