"""`python -m box_memory.emulator --root DIR --port P --token T [switches]`.

Prints exactly one line, `box-mcp emulator listening on http://127.0.0.1:PORT/`, once the port
accepts connections, so a parent process can read the URL (port 0 picks a free port).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from box_memory.emulator.app import Emulator
from box_memory.emulator.ratelimit import (
    BOX_CALLS_PER_MINUTE,
    BOX_SEARCHES_PER_MINUTE,
    BOX_SEARCHES_PER_SECOND,
    BOX_UPLOADS_PER_MINUTE,
)
from box_memory.emulator.switches import ERROR_KINDS


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m box_memory.emulator",
        description="Serve a local folder as a Box MCP server on 127.0.0.1 (for tests and demos).",
    )
    p.add_argument("--root", required=True, type=Path, help="folder served as Box folder '0' (All Files)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 picks a free one)")
    p.add_argument("--token", action="append", default=[], help="accepted bearer token (repeatable)")
    p.add_argument("--state", type=Path, help="state folder outside root (default <root>.box-emulator-state)")
    p.add_argument("--call-log", type=Path, help="append every tool call as a JSON line to this file")
    p.add_argument("--seed", type=int, default=0, help="seed of the fault RNG")
    p.add_argument("--paging", choices=["marker", "offset", "none"], default="marker")
    p.add_argument(
        "--shape",
        choices=["structured", "text"],
        default="structured",
        help="payload in structuredContent (plus JSON text) or as JSON text only",
    )
    p.add_argument("--ids", choices=["string", "number"], default="string")
    p.add_argument(
        "--catalogue",
        default="today",
        help="tool catalogue snapshot: today, older, newer (box_memory/emulator/catalogues/) or a JSON file",
    )
    p.add_argument(
        "--listing",
        choices=["mini", "full"],
        default="mini",
        help="listing entries without `fields`: REST mini or the standard representation",
    )
    p.add_argument(
        "--era",
        choices=["legacy", "dual"],
        default="legacy",
        help="legacy: initialize handshake only; dual: also the 2026 per-request protocol",
    )
    p.add_argument("--sessions", choices=["stateless", "stateful"], default="stateless")
    p.add_argument(
        "--responses",
        choices=["json", "sse"],
        default="json",
        help="answer requests with one JSON object or with an SSE stream",
    )
    p.add_argument("--tool-page", type=int, default=0, help="tools/list pages of N tools (0: one page)")
    p.add_argument("--latency-ms", type=float, default=0, help="delay added to every tool call")
    p.add_argument("--error-rate", type=float, default=0.0, help="fraction of tool calls that fail")
    p.add_argument(
        "--error-kinds",
        default="429,500",
        help=f"comma list of failure kinds, chosen at random: {', '.join(ERROR_KINDS)}",
    )
    p.add_argument("--retry-after-s", type=int, default=1, help="retry-after of injected 429s")
    p.add_argument(
        "--drop-rate", type=float, default=0.0, help="fraction of tool calls whose connection drops"
    )
    p.add_argument(
        "--fault-all", action="store_true", help="faults and latency also hit initialize/list_tools"
    )
    p.add_argument(
        "--search-lag-s",
        type=float,
        default=0,
        help="files changed less than this many seconds ago are not found by search",
    )
    p.add_argument(
        "--disable-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="tool answers 'disabled by the enterprise admin' (repeatable)",
    )
    p.add_argument(
        "--hide-tool",
        action="append",
        default=[],
        metavar="NAME",
        help="tool is left out of the catalogue (repeatable)",
    )
    p.add_argument(
        "--rate-limit",
        action="store_true",
        help="enforce Box's per-user rate limits: past a budget, HTTP 429 with retry-after",
    )
    p.add_argument("--calls-per-minute", type=int, default=BOX_CALLS_PER_MINUTE, help="tool calls per window")
    p.add_argument(
        "--uploads-per-minute", type=int, default=BOX_UPLOADS_PER_MINUTE, help="uploads per window"
    )
    p.add_argument(
        "--searches-per-minute", type=int, default=BOX_SEARCHES_PER_MINUTE, help="searches per window"
    )
    p.add_argument(
        "--searches-per-second",
        type=int,
        default=BOX_SEARCHES_PER_SECOND,
        help="searches per window / 60",
    )
    p.add_argument("--rate-window-s", type=float, default=60.0, help="the rate limit window (Box's minute)")
    p.add_argument(
        "--log-level", default="warning", choices=["critical", "error", "warning", "info", "debug"]
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.token:
        print("error: give at least one --token", file=sys.stderr)
        return 2
    try:
        emulator = Emulator(
            args.root,
            tokens=args.token,
            state=args.state,
            seed=args.seed,
            call_log=args.call_log,
            paging=args.paging,
            shape=args.shape,
            ids=args.ids,
            catalogue=args.catalogue,
            listing=args.listing,
            era=args.era,
            sessions=args.sessions,
            responses=args.responses,
            tool_page=args.tool_page,
            latency_ms=args.latency_ms,
            error_rate=args.error_rate,
            error_kinds=args.error_kinds,
            retry_after_s=args.retry_after_s,
            drop_rate=args.drop_rate,
            fault_all=args.fault_all,
            search_lag_s=args.search_lag_s,
            disabled_tools=args.disable_tool,
            hidden_tools=args.hide_tool,
            rate_limit=args.rate_limit,
            calls_per_minute=args.calls_per_minute,
            uploads_per_minute=args.uploads_per_minute,
            searches_per_minute=args.searches_per_minute,
            searches_per_second=args.searches_per_second,
            rate_window_s=args.rate_window_s,
        )
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def announce(url: str) -> None:
        print(f"box-mcp emulator listening on {url}", flush=True)

    emulator.serve_forever(args.port, announce=announce, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
