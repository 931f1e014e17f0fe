"""brain-sync and the `brain` group: the Box Brain from the command line (docs/spec/brain-sync.md).

Cron friendly: one summary line per source on stdout, details in `--json`, a progress bar only on
a terminal (rich imported only then), exit 0 for completed/partial/skipped runs.
"""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, escape, run

brain_app = typer.Typer(
    name="brain",
    help="Inspect and act on the Box Brain (imported Box documents and review candidates).",
    no_args_is_help=True,
    add_completion=False,
)

SourceOpt = Annotated[
    str | None, typer.Option("--source", "-s", help="Source id, box:<folder_id> or folder path.")
]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", help="At most N rows.")]


source_app = typer.Typer(
    name="source",
    help="Turn a Box Brain source off or on (off: no more syncs; its entries stay until purge).",
    no_args_is_help=True,
    add_completion=False,
)


review_app = typer.Typer(
    name="review",
    help="Review candidates proposed by brain-sync; `review edit ID` changes one before acceptance.",
    add_completion=False,
)


def register(app: typer.Typer) -> None:
    app.command("brain-sync")(brain_sync_cmd)
    brain_app.add_typer(source_app, name="source")
    brain_app.add_typer(review_app, name="review")
    app.add_typer(brain_app, name="brain")


# ---------------------------------------------------------------------------------------------
# progress


class _Bar:
    """A rich progress bar on stderr, created on first use (rich is imported only on a terminal)."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None
        self._phase = ""

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=Console(file=sys.stderr),
                transient=True,
            )
            self._progress.start()
        label = "listing" if phase == "crawl" else "fetching"
        if phase != self._phase:
            self._phase = phase
            self._task = self._progress.add_task(label, total=total)
        self._progress.update(self._task, completed=done, total=total)

    def note(self, line: str) -> None:
        """One line of the run's plan (its pace, how long it will take), above the bar."""
        from rich.console import Console
        from rich.markup import escape

        console = self._progress.console if self._progress is not None else Console(file=sys.stderr)
        console.print(escape(line))

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()


# ---------------------------------------------------------------------------------------------
# brain-sync


def brain_sync_cmd(
    folder_id: Annotated[
        str | None, typer.Option("--folder-id", help="Box folder id to import (0 = the whole account).")
    ] = None,
    path: Annotated[
        Path | None, typer.Option("--path", help="Local (Box Drive) folder to import instead.")
    ] = None,
    max_items: Annotated[
        int | None, typer.Option("--max-items", help="Files per run (default 200, 1..10000; saved).")
    ] = None,
    interval: Annotated[
        int | None,
        typer.Option("--interval", help="Minutes between runs for --if-due, 5..10080 (default 60; saved)."),
    ] = None,
    if_due: Annotated[bool, typer.Option("--if-due", help="Run only when the interval has passed.")] = False,
    print_cron: Annotated[
        bool,
        typer.Option(
            "--print-cron",
            help="Print a crontab line for this sync (absolute command, its environment); sync nothing.",
        ),
    ] = False,
    content: Annotated[
        bool | None, typer.Option("--content/--no-content", help="Import document text (default on; saved).")
    ] = None,
    ai_summaries: Annotated[
        bool | None,
        typer.Option("--ai-summaries/--no-ai-summaries", help="Box AI summaries, at most 5 per run (saved)."),
    ] = None,
    max_content_chars: Annotated[
        int | None,
        typer.Option(
            "--max-content-chars", help="Characters kept per file, 500..100000 (default 10000; saved)."
        ),
    ] = None,
    review: Annotated[
        bool | None,
        typer.Option("--review/--no-review", help="Propose review candidates (default on; saved)."),
    ] = None,
    enable: Annotated[
        bool | None,
        typer.Option(
            "--enable/--disable",
            help="Turn the source on or off (saved); a disabled source is never synced, its entries stay.",
        ),
    ] = None,
    only_workspace: Annotated[
        bool | None,
        typer.Option(
            "--only-workspace/--every-workspace",
            help="Show its hits only in this workspace, or in every workspace of yours (default; saved).",
        ),
    ] = None,
    all_enabled: Annotated[
        bool, typer.Option("--all", help="Sync every enabled source now, due or not (no folder option).")
    ] = False,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Import one Box folder (or Box Drive folder) into the Box Brain; no folder: every due source."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        if print_cron:
            return _cron_outcome(folder_id, path, workspace, interval)
        from box_memory.brain.sync import SyncOptions, SyncRequest, brain_sync

        bar = _Bar() if (sys.stderr.isatty() and not json_ and not quiet) else None
        try:
            report = brain_sync(
                SyncRequest(
                    folder_id=folder_id,
                    path=path,
                    workspace=workspace,
                    max_items=max_items,
                    interval=interval,
                    include_content=content,
                    ai_summaries=ai_summaries,
                    max_content_chars=max_content_chars,
                    review=review,
                    if_due=if_due,
                    enabled=enable,
                    only_workspace=only_workspace,
                    all_enabled=all_enabled,
                ),
                SyncOptions(progress=bar, notice=bar.note if bar is not None else None),
            )
        finally:
            if bar is not None:
                bar.close()
        lines = [escape(r.summary()) for r in report.runs]
        if verbose:
            for r in report.runs:
                lines += [f"  incomplete: {escape(x)}" for x in r.reasons]
        return Outcome(report.result, lines)

    run("brain-sync", o, go)


def _cron_outcome(
    folder_id: str | None, path: Path | None, workspace: str | None, interval: int | None
) -> Outcome:
    from box_memory.brain.cron import cron_line, schedule_for, source_intervals

    args: list[str] = []
    if folder_id is not None:
        args += ["--folder-id", folder_id]
    if path is not None:
        args += ["--path", str(path.expanduser().resolve())]
    if workspace is None and (folder_id is not None or path is not None):
        # The source is bound to the workspace resolved here; cron runs elsewhere (cwd /, no
        # BOX_MEMORY_WORKSPACE), so the line names it.
        workspace = _source_workspace()
    if workspace is not None:
        local = not workspace.startswith("box:")
        args += ["--workspace", str(Path(workspace).expanduser().resolve()) if local else workspace]
    if interval is not None:
        args += ["--interval", str(interval)]
    result = cron_line(args, schedule_for(source_intervals(folder_id, path, interval)))
    return Outcome(result, [result.data["line"]])


# ---------------------------------------------------------------------------------------------
# brain group


@brain_app.command("status")
def status_cmd(json_: JsonOpt = False, quiet: QuietOpt = False, verbose: VerboseOpt = False) -> None:
    """Sources, their settings, last runs and item counts."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service

        result = service.status()
        data = result.data
        if not data["exists"]:
            return Outcome(
                result, ["No Box Brain yet - run `box-memory brain-sync --folder-id ID` or `--path DIR`."]
            )
        rows = [
            [
                str(s["id"]),
                escape(s["label"]),
                "on" if s["enabled"] else "off",
                s["last_run_status"] or "-",
                *_last_counts(s["last_run_counts"]),
                str(s["items"]["entries"]),
                str(s["proposed_candidates"]),
                s["last_run_at"] or "-",
                escape(s["last_error"] or ""),
            ]
            for s in data["sources"]
        ]
        lines = [f"Box Brain store: {escape(data['store'])}"]
        table = (
            [
                "id",
                "source",
                "sync",
                "last run",
                "indexed",
                "unchanged",
                "deleted",
                "failed",
                "entries",
                "to review",
                "last run at",
                "last error",
            ],
            rows,
        )
        return Outcome(result, lines, table=table)

    run("brain status", o, go)


def _source_workspace() -> str:
    from box_memory.brain.sync import NO_WORKSPACE_MSG
    from box_memory.errors import WorkspaceNotFound
    from box_memory.workspace.resolve import resolve_spec

    try:
        return resolve_spec(None)
    except WorkspaceNotFound:
        raise WorkspaceNotFound(NO_WORKSPACE_MSG.replace("nothing was synced", "no line printed")) from None


def _last_counts(counts: dict[str, int] | None) -> list[str]:
    """The last run's indexed, unchanged, deleted and failed counts, as `brain-sync` reports them."""
    keys = ("indexed", "unchanged", "deleted", "failed")
    return [str(counts[k]) if counts else "-" for k in keys]


@brain_app.command("runs")
def runs_cmd(
    source: SourceOpt = None,
    limit: LimitOpt = 20,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Recent runs, newest first."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service
        from box_memory.brain.db import default_path

        result = service.runs(source, limit)
        rows = result.data["runs"]
        if not rows and not default_path().exists():
            return Outcome(result, ["No runs yet."])
        table_rows = [
            [
                str(r["id"]),
                str(r["source_id"]),
                r["status"],
                r["started_at"],
                str(r["counts"].get("indexed", "-")),
                str(r["counts"].get("unchanged", "-")),
                str(r["counts"].get("deleted", "-")),
                escape(r["error"] or "; ".join(r["reasons"])),
            ]
            for r in rows
        ]
        return Outcome(
            result,
            table=(
                ["run", "source", "status", "started", "indexed", "unchanged", "deleted", "notes"],
                table_rows,
            ),
        )

    run("brain runs", o, go)


@brain_app.command("items")
def items_cmd(
    source: SourceOpt = None,
    status: Annotated[
        str | None, typer.Option("--status", help="indexed, metadata_only, skipped or deleted.")
    ] = None,
    limit: LimitOpt = 100,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Imported items (one row per Box file and source)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service
        from box_memory.brain.db import default_path

        result = service.items(source, status, limit)
        rows = result.data["items"]
        if not rows and not default_path().exists():
            return Outcome(result, ["No items yet."])
        table_rows = [
            [
                str(r["source_id"]),
                escape(r["box_id"]),
                r["status"],
                escape(r["path"] or r["name"] or ""),
                escape(r["error"] or r["reason"] or ""),
            ]
            for r in rows
        ]
        return Outcome(result, table=(["source", "id", "status", "path", "note"], table_rows))

    run("brain items", o, go)


@review_app.callback(invoke_without_command=True)
def review_cmd(
    ctx: typer.Context,
    source: SourceOpt = None,
    status: Annotated[
        str, typer.Option("--status", help="proposed (default), accepted, rejected or all.")
    ] = "proposed",
    limit: LimitOpt = 100,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Review candidates proposed by brain-sync (accept or reject them by id)."""
    if ctx.invoked_subcommand is not None:
        return
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service
        from box_memory.brain.db import default_path

        result = service.candidates(source, status, limit)
        rows = result.data["candidates"]
        if not rows and not default_path().exists():
            return Outcome(result, ["Nothing to review."])
        lines: list[str] = []
        for c in rows:
            lines.append(
                f"[bold]#{c['id']}[/bold] {c['kind']} ({c['confidence']:g}) {c['status']}: "
                f"{escape(c['title'])}"
            )
            lines.append(f"    {escape(c['rationale'])}")
            for ev in c["evidence"][:2]:
                where = ev.get("url") or ev.get("memory_id") or ""
                name = ev.get("file") or ev.get("memory_title") or ""
                lines.append(f'    [dim]{escape(name)} {escape(where)}: "{escape(ev["excerpt"])}"[/dim]')
        if not rows:
            lines.append("Nothing to review.")
        return Outcome(result, lines)

    run("brain review", o, go)


@brain_app.command("accept")
def accept_cmd(
    cand_id: Annotated[str, typer.Argument(metavar="ID", help="Candidate id from `brain review`.")],
    team: Annotated[str | None, typer.Option("--team", help="Team folder to write into.")] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Accept a candidate: write it as an append-only memory (a conflict supersedes the old one)."""
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        from box_memory.brain import service
        from box_memory.brain.review_workspace import accept
        from box_memory.workspace.resolve import open_workspace

        number = service.candidate_id(cand_id)
        ws = open_workspace(o.workspace)
        with service.existing_store(f"no review candidate {number}") as store:
            result = accept(store, number, ws, team=team)
        mem = result.data["memory"]
        lines = [f"Accepted #{number}: wrote [bold]{mem['id']}[/bold] {mem['kind']} '{escape(mem['title'])}'"]
        lines.append(f"  file: {mem['file']}")
        if mem.get("supersedes"):
            lines.append(f"  supersedes: {mem['supersedes']}")
        return Outcome(result, lines)

    run("brain accept", o, go)


@brain_app.command("reject")
def reject_cmd(
    cand_id: Annotated[str, typer.Argument(metavar="ID", help="Candidate id from `brain review`.")],
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Reject a candidate: nothing is written, and it is not proposed again."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service
        from box_memory.brain.review_workspace import reject

        number = service.candidate_id(cand_id)
        with service.existing_store(f"no review candidate {number}") as store:
            result = reject(store, number)
        return Outcome(result, [f"Rejected #{number}."])

    run("brain reject", o, go)


@brain_app.command("purge")
def purge_cmd(
    source: Annotated[
        str, typer.Argument(metavar="SOURCE", help="Source id, box:<folder_id> or folder path.")
    ],
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Forget a source: its entries, items, runs and candidates (Box itself is never touched)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service

        result = service.purge(source)
        src, removed = result.data["source"], result.data["removed"]
        return Outcome(
            result,
            [
                f"Purged {escape(src['label'])} (source {src['id']}): {removed['entries']} entries, "
                f"{removed['items']} items, "
                f"{removed['runs']} runs, {removed['candidates']} candidates"
            ],
        )

    run("brain purge", o, go)


def _set_enabled(source: str, enabled: bool, o: Any) -> None:
    def go() -> Outcome:
        from box_memory.brain import service

        result = service.set_enabled(source, enabled)
        src = result.data["source"]
        word = "enabled" if enabled else "disabled (no more syncs; its entries stay until `brain purge`)"
        return Outcome(result, [f"Source {src['id']} {escape(src['label'])} {word}"])

    run(f"brain source {'enable' if enabled else 'disable'}", o, go)


@source_app.command("disable")
def source_disable_cmd(
    source: Annotated[
        str, typer.Argument(metavar="SOURCE", help="Source id, box:<folder_id> or folder path.")
    ],
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Stop syncing a source (--if-due and no-argument runs skip it); nothing is deleted."""
    _set_enabled(source, False, opts(json_, quiet, verbose))


@source_app.command("enable")
def source_enable_cmd(
    source: Annotated[
        str, typer.Argument(metavar="SOURCE", help="Source id, box:<folder_id> or folder path.")
    ],
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Sync a disabled source again."""
    _set_enabled(source, True, opts(json_, quiet, verbose))


@review_app.command("edit")
def review_edit_cmd(
    cand_id: Annotated[str, typer.Argument(metavar="ID", help="Candidate id from `brain review`.")],
    title: Annotated[str | None, typer.Option("--title", help="New title of the memory to write.")] = None,
    body: Annotated[
        str | None, typer.Option("--body", help="New statement (the memory's text); - reads stdin.")
    ] = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Edit a proposed candidate before accepting it: --title/--body, or neither to open $EDITOR
    (first line the title, then a blank line and the statement)."""
    o = opts(json_, quiet, verbose)

    def go() -> Outcome:
        from box_memory.brain import service
        from box_memory.brain.review_workspace import edit

        number = service.candidate_id(cand_id)
        with service.existing_store(f"no review candidate {number}") as store:
            new_title, new_body = title, body
            if new_body == "-":
                new_body = _stdin_text()
            if new_title is None and new_body is None:
                cand = store.candidate(number)
                new_title, new_body = _in_editor(cand["title"], cand["statement"])
            result = edit(store, number, title=new_title, statement=new_body)
        c = result.data["candidate"]
        return Outcome(result, [f"[bold]#{c['id']}[/bold] {escape(c['title'])}", escape(c["statement"])])

    run("brain review edit", o, go)


EDIT_MAX_BYTES = 256 * 1024  # a title and a statement of at most 20000 characters, with room to spare


def _stdin_text() -> str:
    """`--body -`: stdin, bounded, as strict UTF-8."""
    from box_memory.errors import InvalidInput

    buf = getattr(sys.stdin, "buffer", None)
    raw = buf.read(EDIT_MAX_BYTES + 1) if buf is not None else sys.stdin.read(EDIT_MAX_BYTES + 1).encode()
    if len(raw) > EDIT_MAX_BYTES:
        raise InvalidInput(
            f"the statement on stdin is larger than {EDIT_MAX_BYTES // 1024} KiB; nothing changed"
        )
    return _utf8(raw, "the statement on stdin")


def _utf8(raw: bytes, what: str) -> str:
    from box_memory.errors import InvalidInput

    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidInput(f"{what} is not valid UTF-8 (byte {e.start}); nothing changed") from None


def _in_editor(title: str, statement: str) -> tuple[str, str]:
    """Open $VISUAL/$EDITOR on the candidate; the first line is the title, the rest the statement.

    The edited file is read like every file box-memory reads (safeio.read_regular): an editor
    that leaves a FIFO, a device or a huge file in its place is refused at once, not waited on.
    """
    import contextlib
    import os
    import shlex
    import subprocess
    import tempfile

    from box_memory import settings
    from box_memory.errors import InvalidInput, UsageProblem
    from box_memory.format.safeio import UnreadableFile, read_regular

    editor = settings.editor()
    if not editor:
        raise UsageProblem("no $EDITOR set: give --title and/or --body, or set EDITOR")
    try:
        command = shlex.split(editor)
    except ValueError as e:
        raise UsageProblem(
            f"$VISUAL/$EDITOR {editor!r} cannot be split into words ({e}); nothing changed"
        ) from None
    if not command:
        raise UsageProblem("$VISUAL/$EDITOR names no command: give --title and/or --body, or set EDITOR")
    fd, name = tempfile.mkstemp(prefix="box-memory-review-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(f"{title}\n\n{statement}\n")
        try:
            done = subprocess.run([*command, name], check=False)  # the user's own editor
        except OSError as e:
            raise UsageProblem(
                f"the editor {command[0]!r} could not be started ({e.strerror or e}); nothing changed"
            ) from None
        if done.returncode != 0:
            raise UsageProblem(f"the editor exited with status {done.returncode}; nothing changed")
        try:
            raw = read_regular(name, "file", "the edited file", follow=False)
        except (UnreadableFile, FileNotFoundError) as e:
            why = str(e) if isinstance(e, UnreadableFile) else "the editor removed the edited file"
            raise InvalidInput(f"{why}; nothing changed") from None
        if len(raw) > EDIT_MAX_BYTES:
            raise InvalidInput(
                f"the edited file is larger than {EDIT_MAX_BYTES // 1024} KiB; nothing changed"
            )
        text = _utf8(raw, "the edited file")
    finally:
        with contextlib.suppress(OSError):
            Path(name).unlink()
    head, _, rest = text.strip("\n").partition("\n")
    if not head.strip():
        raise InvalidInput("the first line (the title) is empty; nothing changed")
    return head.strip(), rest.strip()
