"""init, write, get: the foundation commands."""

from __future__ import annotations

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
        str, typer.Argument(help="Workspace name (and folder name under the current dir).")
    ] = "box-memory",
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
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Create a workspace (idempotent) and make it the default. [/box-init]"""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.errors import InvalidInput

        chosen = backend or ("cloud" if parent is not None else "local")
        if chosen == "cloud":
            if path is not None:
                raise InvalidInput("--path is for a local workspace; a cloud one takes --parent FOLDER_ID")
            return init_cloud(name, parent, team or [], layout, reinit)
        if chosen != "local":
            raise InvalidInput(f"unknown backend {chosen!r} (expected local or cloud)")
        return init_local(name, path, team or [], layout, reinit)

    run("init", o, go)


def init_local(name: str, path: Path | None, teams: list[str], layout: str, reinit: bool) -> Outcome:
    from box_memory.errors import InvalidInput
    from box_memory.ids import validate_team, validate_title
    from box_memory.store import open_local
    from box_memory.workspace import init_workspace, read_user_config_for_update, write_user_config

    validate_title(name)
    for t in teams:  # every check before the folder is created: bad input changes nothing
        validate_team(t)
    if layout not in ("sibling", "folder"):
        raise InvalidInput(f"unknown layout {layout!r} (expected sibling or folder)")
    warnings: list[str] = []
    offered = None
    if path is None:
        offered, warnings = _offer_box_drive(name)
    root = (path or offered or Path.cwd() / name).expanduser()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} exists and is not a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = (e.strerror or type(e).__name__).lower()
        raise InvalidInput(f"cannot create the workspace folder {root}: {reason}") from None
    root = root.resolve()
    ws, report = init_workspace(open_local(root), name, teams=teams, layout=layout, reinit=reinit)
    cfg, cfg_warnings = read_user_config_for_update()
    warnings += cfg_warnings
    cfg["default_workspace"] = str(root)
    write_user_config(cfg)
    data = {
        "workspace": str(root),
        "backend": "local",
        "name": ws.name,
        "existed": report["existed"],
        "created": report["created"],
        "teams": ws.config.teams,
        "layout": ws.config.companion_layout,
        "default": True,
    }
    if path is None:
        from box_memory.names import box_drive_roots

        drives = box_drive_roots()
        data["box_drive_root"] = str(drives[0]) if drives else None
    verb = "Workspace already existed at" if report["existed"] else "Created workspace at"
    lines = [f"{verb} [bold]{escape(str(root))}[/bold] (now the default)"]
    if report["existed"] and report["created"]:
        lines.append(f"Added: {', '.join(report['created'])}")
    lines.append(f"Teams: {', '.join(ws.config.teams)}")
    return Outcome(data, lines, warnings=warnings)


def _offer_box_drive(name: str) -> tuple[Path | None, list[str]]:
    """Without --path: the Box Drive folder found on this machine, offered for the workspace.

    On a terminal the offer is a question (default yes, asked on stderr); otherwise the workspace
    goes to the current folder, as always, with a warning naming the Box Drive folder.
    """
    from box_memory.names import box_drive_root_of, box_drive_roots, check_name

    drives = box_drive_roots()
    if not drives or box_drive_root_of(Path.cwd()) is not None:
        return None, []
    check_name(name, "workspace name")
    target = drives[0] / name
    if sys.stdin.isatty():
        question = f"Box Drive found at {drives[0]}. Create the workspace in {target}?"
        return (target if typer.confirm(question, default=True, err=True) else None), []
    return None, [
        f"Box Drive found at {drives[0]}, but the workspace is made in the current folder: "
        f"pass --path {target} to keep it in Box"
    ]


def init_cloud(name: str, parent: str | None, teams: list[str], layout: str, reinit: bool) -> Outcome:
    """Cloud init: folder NAME under Box folder `parent` (default the root, after a warning)."""
    from box_memory.store import init_cloud_workspace

    data = init_cloud_workspace(name, parent=parent or "0", teams=teams, layout=layout, reinit=reinit)
    warnings = list(data.pop("warnings", []))
    if parent is None:
        warnings.insert(
            0,
            "no --parent given: the workspace folder is created in your Box root (All Files), which is "
            "broad; pass --parent FOLDER_ID to put it elsewhere",
        )
    verb = "Workspace already existed at" if data["existed"] else "Created workspace at"
    lines = [
        f"{verb} [bold]{escape(data['workspace'])}[/bold] '{escape(data['name'])}' (now the default)",
        f"  Box folder: {data['web_url']}",
        f"  tier: {data['tier']}; metadata template: {data['metadata_template_key'] or 'none'}",
    ]
    if data["existed"] and data["created"]:
        lines.append(f"Added: {', '.join(data['created'])}")
    lines.append(f"Teams: {', '.join(data['teams'])}")
    return Outcome(data, lines, warnings=warnings)


def _read_content(content: str | None) -> str | bytes:
    from box_memory.errors import InvalidInput
    from box_memory.memories import MAX_CONTENT_BYTES

    if content is None:
        raise InvalidInput("no content: pass it as an argument, or '-' to read stdin")
    if content != "-":
        return content
    raw = sys.stdin.buffer.read(MAX_CONTENT_BYTES + 1)
    if len(raw) > MAX_CONTENT_BYTES:
        raise InvalidInput(f"content is larger than {MAX_CONTENT_BYTES // 1024} KiB")
    return raw


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
        from box_memory.memories import WriteRequest, write_memory
        from box_memory.workspace import open_workspace

        body = _read_content(content)
        if isinstance(body, bytes):
            from box_memory.memories import check_content

            body = check_content(body)
        ws = open_workspace(o.workspace)
        res = write_memory(
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
        warnings = res.pop("warnings", [])
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
        return Outcome(res, lines, warnings=warnings)

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
        from box_memory.memories import get_memory
        from box_memory.workspace import open_workspace

        ws = open_workspace(o.workspace)
        res = get_memory(ws, ref, history=history)
        warnings = res.pop("warnings", [])
        if res.get("current_id"):
            warnings.append(f"memory {res['id']} is superseded; the current memory is {res['current_id']}")
        # Piped or redirected, a plain `get` prints the memory file exactly as stored.
        piped = not (history or o.json or o.quiet or sys.stdout.isatty())
        raw = None if not piped else ws.store.read_bytes(res["path"]).decode("utf-8", "surrogateescape")
        return Outcome(res, _get_lines(res), warnings=warnings, raw=raw)

    run("get", o, go)


def _get_lines(res: dict[str, Any]) -> list[str]:
    from box_memory import frontmatter

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
