"""serve: box-memory itself as an MCP server (stdio or streamable HTTP)."""

import sys
from typing import Annotated

import typer

from box_memory.cli.common import JsonOpt, QuietOpt, VerboseOpt, WorkspaceOpt, opts
from box_memory.cli.output import Outcome, run
from box_memory.result import Result


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)


def serve_cmd(
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (an MCP client spawns it) or streamable-http.")
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (streamable-http).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port (streamable-http); 0 picks a free one and prints it.")
    ] = 8765,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            help="Also answer web pages served from this origin, http://host:port or https://host "
            "(repeatable). By default HTTP callers must send no Origin or the server's own.",
            show_default=False,
        ),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            help="Require 'Authorization: Bearer TOKEN' of HTTP callers, TOKEN read from this "
            "environment variable (BOX_MEMORY_SERVE_TOKEN, when set, does the same). Off by default.",
            show_default=False,
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Serve recall, get, write, log, report and the other memory tools over MCP.

    The workspace is resolved on the first tool call, not at start-up. Over stdio, stdout belongs
    to the protocol: nothing else is printed there.
    """
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        import logging

        from box_memory.errors import InvalidInput
        from box_memory.serve.server import (
            TRANSPORTS,
            MemoryServer,
            announce,
            bind,
            http_token,
            is_loopback,
            parse_origin,
            serve_http,
            serve_stdio,
            url_of,
        )

        if transport not in TRANSPORTS:
            raise InvalidInput(f"unknown transport {transport!r} (expected one of: {', '.join(TRANSPORTS)})")
        if not 0 <= port <= 65535:
            raise InvalidInput(f"--port must be between 0 and 65535, not {port}")
        origins = [parse_origin(o) for o in allow_origin or ()]
        token = http_token(token_env) if transport == "streamable-http" else None
        if transport != "streamable-http" and (origins or token_env):
            raise InvalidInput("--allow-origin and --token-env apply to --transport streamable-http only")
        logging.basicConfig(
            level=logging.INFO if verbose else logging.WARNING,
            format="%(levelname)s %(name)s: %(message)s",
        )
        server = MemoryServer(o.workspace)
        from box_memory import progress

        progress.allow(False)  # a server's stderr is a log, not a place for progress bars
        if transport == "stdio":
            if sys.stdin.isatty():
                _typed_into_a_terminal(quiet)
            serve_stdio(server)
            raise SystemExit(0)  # no envelope: stdout was the protocol channel
        sock = bind(host, port)
        url = url_of(sock, host)
        if not is_loopback(host) and token is None:
            announce(
                f"warning: listening on {host} without authentication: anyone who can reach it can "
                "read and write this workspace's memories (BOX_MEMORY_SERVE_TOKEN requires a token)"
            )
        if not quiet:
            guard = "; bearer token required" if token is not None else ""
            announce(f"box-memory MCP server on {url} (streamable HTTP{guard}; Ctrl-C stops)")
        # Ctrl-C ends it with exit 130 (uvicorn stops gracefully, then re-raises the signal).
        serve_http(
            server,
            sock,
            host,
            log_level="info" if verbose else "warning",
            allow_origins=origins,
            token=token,
        )
        return Outcome(Result({"transport": transport, "url": url}), [f"Stopped serving {url}"])

    run("serve", o, go)


def _typed_into_a_terminal(quiet: bool) -> None:
    """`serve` run by a person rather than spawned by an MCP client: say what it waits for and how
    to leave, and let Ctrl-C end it as it ends any Unix tool (by SIGINT). The SDK reads stdin in a
    worker thread, so the KeyboardInterrupt Python would raise never stops the loop."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if not quiet:
        sys.stderr.write(
            "box-memory MCP server (stdio): waiting for an MCP client on stdin; an MCP client such as "
            "Claude Code or Claude Desktop starts it itself.\n"
            "Ctrl-C or Ctrl-D quits. To serve over HTTP instead: "
            "box-memory serve --transport streamable-http\n"
        )
        sys.stderr.flush()
