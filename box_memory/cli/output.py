"""One place that turns a command's outcome or error into output and an exit code.

Human output uses rich on a terminal and plain text otherwise; `--json` prints exactly one
envelope on stdout. Typed library errors map to exit codes here and nowhere else.
"""

from __future__ import annotations

import re
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import orjson

from box_memory import result
from box_memory.errors import BoxMemoryError
from box_memory.result import Result, one_line, os_message


class Opts:
    """The options every command takes (plain classes here, not dataclasses: building one is a
    fraction of a millisecond of every command's start)."""

    __slots__ = ("json", "quiet", "verbose", "workspace")

    def __init__(
        self, json: bool = False, quiet: bool = False, verbose: bool = False, workspace: str | None = None
    ) -> None:
        self.json = json
        self.quiet = quiet
        self.verbose = verbose
        self.workspace = workspace

    def __repr__(self) -> str:
        return (
            f"Opts(json={self.json!r}, quiet={self.quiet!r}, verbose={self.verbose!r}, "
            f"workspace={self.workspace!r})"
        )


class Outcome:
    """A service's result and how a person sees it; `--json` prints only the result's envelope.

    `lines`: plain human text, rich markup allowed. `raw`: exact text for stdout when it is not a
    terminal (a memory file's content, byte for byte); `lines` are then not printed. `page`: long
    listings (`log`) go through the user's pager on a terminal, as git's do."""

    __slots__ = ("lines", "page", "raw", "result", "table")

    def __init__(
        self,
        result: Result,
        lines: list[str] | None = None,
        table: tuple[list[str], list[list[str]]] | None = None,
        raw: str | None = None,
        page: bool = False,
    ) -> None:
        self.result = result
        self.lines = [] if lines is None else lines
        self.table = table
        self.raw = raw
        self.page = page


class Printer:
    """Writes human output: rich on a TTY (imported only then), plain text otherwise."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, highlight=False, soft_wrap=True)
        return self._console

    def line(self, text: str) -> None:
        text = visible(text)
        if self.tty:
            self._wrapped(text)
        else:
            self.stream.write(strip_markup(text) + "\n")

    def _wrapped(self, text: str) -> None:
        """A line as wide as the terminal, wrapped between words; the wrapped part lines up under
        the text after the line's indent and list number (` 1. Title ...`, `    path ...`)."""
        from rich.text import Text

        width = self.console.width
        for para in text.split("\n"):
            hang = len(re.compile(_HANG).match(para).group(0))  # type: ignore[union-attr] # always matches
            lead, body = para[:hang], para[hang:]
            rendered = Text.from_markup(body)
            if hang + rendered.cell_len <= width or width - hang < 20:
                self.console.print(Text.from_markup(para))
                continue
            for n, piece in enumerate(rendered.wrap(self.console, width - hang, overflow="fold")):
                prefix = Text.from_markup(lead) if n == 0 else Text(" " * hang)
                self.console.print(prefix + piece)

    def table(self, headers: list[str], rows: list[list[str]]) -> None:
        if self.tty:
            from rich.table import Table

            t = Table(*headers, show_edge=False, pad_edge=False)
            for r in rows:
                t.add_row(*(visible(c, cell=True) for c in r))
            self.console.print(t)
        else:
            self.stream.write("\t".join(headers) + "\n")
            for r in rows:
                self.stream.write("\t".join(strip_markup(visible(c, cell=True)) for c in r) + "\n")


# The patterns below are compiled on first use (`re.compile` keeps them): a `--json` run never
# needs them, and compiling them at import cost every command's start ~1 ms.

# A line's indent and list number, under which its wrapped part is lined up.
_HANG = r" *(?:\d+\. +|- +)?"

# Characters that would act on a terminal or reorder what is shown, rather than be shown: C0 and
# C1 controls (ESC starts escape sequences, CR overwrites a line) and the bidi embedding, override
# and isolate marks (U+202E shows `txt.exe` as `exe.txt`). Newlines and tabs stay in lines; a table
# cell is one line, so there they are escaped too (a newline in a name would forge a row).
_UNSAFE = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_UNSAFE_CELL = r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"


def _shown(m: re.Match[str]) -> str:
    c = m.group(0)
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(c) or (
        f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    )


def visible(text: str, *, cell: bool = False) -> str:
    """Untrusted text made safe to print: controls and bidi marks become visible escapes (`\\x1b`,
    `\\u202e`). JSON output is not touched (it escapes what JSON must and keeps the data)."""
    return re.compile(_UNSAFE_CELL if cell else _UNSAFE).sub(_shown, text)


# An escaped bracket (from `escape`) or one of the style tags this package writes.
_MARKUP_RE = r"(\\\[)|\[/?(?:bold|dim|red|green|yellow|cyan|magenta|blue|italic|underline|reverse)[^\]]*\]"


def strip_markup(text: str) -> str:
    """The text rich would print, without styles: markup tags go, escaped brackets become the `[`
    they stand for, so plain (piped) output carries the user's text exactly."""
    return re.compile(_MARKUP_RE).sub(lambda m: "[" if m.group(1) else "", text)


def escape(text: str) -> str:
    """Escape rich markup in untrusted text (memory titles, bodies); `strip_markup` undoes it."""
    return text.replace("[", "\\[")


def emit(command: str, opts: Opts, outcome: Outcome, started: float) -> None:
    res = outcome.result
    if opts.json:
        env = result.envelope(command, res, round((time.perf_counter() - started) * 1000))
        sys.stdout.buffer.write(orjson.dumps(env, option=orjson.OPT_NON_STR_KEYS, default=str) + b"\n")
        sys.stdout.flush()
        return
    err = Printer(sys.stderr)
    for w in res.all_warnings if opts.verbose else res.warnings:
        err.line(f"[yellow]warning:[/yellow] {escape(w)}")
    if opts.quiet:
        return
    out = Printer()
    if outcome.raw is not None and not out.tty:
        sys.stdout.buffer.write(outcome.raw.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()
        return
    if outcome.page and out.tty and outcome.lines and page(outcome.lines):
        return
    for line in outcome.lines:
        out.line(line)
    if outcome.table is not None:
        out.table(*outcome.table)


# Commands that have the terminal to themselves while they run (a server's log, their own bars, a
# browser sign-in or hidden prompt, an editor): no "still working" line of the CLI's over them.
TALKS_ITSELF = frozenset({"serve", "brain-sync", "auth login", "auth token", "brain review edit"})


def pager_command() -> list[str] | None:
    """The pager to use: BOX_MEMORY_PAGER, else PAGER, else `less -FRX` (quits when the text fits
    a screen, keeps colour); empty or `cat` means none."""
    import shlex

    from box_memory import settings

    raw = settings.pager()
    try:
        argv = shlex.split(raw)
    except ValueError:
        return None
    if not argv or argv[0] == "cat":
        return None
    return argv


def page(lines: list[str]) -> bool:
    """Show `lines` (rich markup, untrusted text made visible) through the pager; False when there
    is none to run, so the caller prints them itself."""
    import io
    import subprocess

    argv = pager_command()
    if argv is None:
        return False
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, highlight=False, soft_wrap=True)
    for line in lines:
        console.print(visible(line))
    env = None
    if argv[0].endswith("less"):
        from box_memory import settings

        env = settings.pager_environment()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, env=env)
    except OSError:
        return False
    assert proc.stdin is not None
    try:
        proc.stdin.write(buf.getvalue().encode("utf-8", "replace"))
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit early (q in less): that is fine
        pass
    proc.wait()
    return True


def run(command: str, opts: Opts, fn: Callable[[], Outcome]) -> NoReturn:
    """Run a library call, render its outcome, exit with the mapped code."""
    started = time.perf_counter()
    # Progress only where it can be drawn (a terminal on stderr, neither --json nor --quiet);
    # otherwise the module is not imported for it (~0.5 ms of every `--json` start): nothing draws
    # until a command allows it, and an earlier command's allowance in this process is taken back.
    on = not opts.json and not opts.quiet and bool(getattr(sys.stderr, "isatty", lambda: False)())
    if on or "box_memory.progress" in sys.modules:
        from box_memory import progress

        progress.allow(on)
    try:
        if command in TALKS_ITSELF or not on:
            outcome = fn()
        else:
            with progress.command(command):
                outcome = fn()
    except BoxMemoryError as e:
        outcome = Outcome(result.failure(e.code, str(e), e.exit_code))
        if not opts.json:
            Printer(sys.stderr).line(f"[red]error:[/red] {escape(one_line(str(e)))}")
            raise SystemExit(e.exit_code) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except Exception as e:  # an unexpected failure still gets one line and exit 1
        if opts.verbose:
            traceback.print_exc()
        code, message = ("internal_error", f"{type(e).__name__}: {e}")
        if isinstance(e, OSError):  # the system refused a path: say which and why, not the class
            code, message = "os_error", os_message(e)
        outcome = Outcome(result.failure(code, message, 1))
        if not opts.json:
            Printer(sys.stderr).line(f"[red]error:[/red] {escape(one_line(message))}")
            raise SystemExit(1) from None
    finally:
        extra = close_backends()
    outcome.result = outcome.result.warned(*extra)
    emit(command, opts, outcome, started)
    raise SystemExit(outcome.result.exit_code)


def close_backends() -> list[str]:
    """End the command's Box MCP session, if it opened one (one session per command), and return
    the warnings the cloud store collected. Never imports the network stack itself."""
    from box_memory.store import close_cloud_sessions

    try:
        return close_cloud_sessions()
    except Exception:  # closing must never turn a finished command into a failure
        return []
