"""serve: box-memory itself as an MCP server (stdio or streamable HTTP)."""

from __future__ import annotations

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
    workspace: WorkspaceOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Serve recall, get, write, companion_check, index_rebuild, status, brain_search, log, report.

    The workspace is resolved on the first tool call, not at start-up. Over stdio, stdout belongs
    to the protocol: nothing else is printed there.
    """
    o = opts(json_, quiet, verbose, workspace)

    def go() -> Outcome:
        import logging

        from box_memory.errors import InvalidInput
        from box_memory.server import (
            TRANSPORTS,
            MemoryServer,
            announce,
            bind,
            is_loopback,
            serve_http,
            serve_stdio,
            url_of,
        )

        if transport not in TRANSPORTS:
            raise InvalidInput(f"unknown transport {transport!r} (expected one of: {', '.join(TRANSPORTS)})")
        if not 0 <= port <= 65535:
            raise InvalidInput(f"--port must be between 0 and 65535, not {port}")
        logging.basicConfig(
            level=logging.INFO if verbose else logging.WARNING,
            format="%(levelname)s %(name)s: %(message)s",
        )
        server = MemoryServer(o.workspace)
        from box_memory import progress

        progress.allow(False)  # a server's stderr is a log, not a place for progress bars
        if transport == "stdio":
            serve_stdio(server)
            raise SystemExit(0)  # no envelope: stdout was the protocol channel
        sock = bind(host, port)
        url = url_of(sock, host)
        if not is_loopback(host):
            announce(
                f"warning: listening on {host} without authentication: anyone who can reach it can "
                "read and write this workspace's memories"
            )
        if not quiet:
            announce(f"box-memory MCP server on {url} (streamable HTTP; Ctrl-C stops)")
        # Ctrl-C ends it with exit 130 (uvicorn stops gracefully, then re-raises the signal).
        serve_http(server, sock, host, log_level="info" if verbose else "warning")
        return Outcome(Result({"transport": transport, "url": url}), [f"Stopped serving {url}"])

    run("serve", o, go)
