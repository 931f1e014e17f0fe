"""The emulator server (`Emulator`): its state, switches, call log and tokens; MCP calls; uvicorn.

One `Emulator` owns the folder state (BoxFS), the switches, the call log and the valid tokens,
answers MCP tool calls, and serves over uvicorn in a background thread (tests) or in the
foreground (the CLI). Stopping and starting again reuses the same port and keeps
all state, so tests can kill the server mid-run. Its HTTP layer (auth, faults) is `asgi`'s.

Guess about the real service: sessions "stateless" (default): no Mcp-Session-Id, so a restarted
server just carries on; "stateful" issues session ids, which a restart invalidates (the client
sees 404 and must reconnect). Answers come as one JSON object (default) or, with responses "sse",
as an SSE stream (the transport allows both; a client must read either).
"""

from __future__ import annotations

import asyncio
import json
import random
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from box_memory.emulator import catalogue
from box_memory.emulator.asgi import MAX_BODY, EmulatorASGI
from box_memory.emulator.boxapi import BoxApiError, Item
from box_memory.emulator.boxfs import BoxFS
from box_memory.emulator.calls import ToolCall
from box_memory.emulator.ratelimit import RateLimiter, rules
from box_memory.emulator.switches import Switches, coerce
from box_memory.emulator.tool_args import ToolContext
from box_memory.emulator.tools import TOOLS_BY_NAME, run_tool

HOST = "127.0.0.1"
DISABLED_TEXT = (
    "Tool has been disabled by the enterprise admin. Contact your enterprise admin for more information."
)


def default_state_path(root: Path) -> Path:
    """A sibling of the served folder, so the folder itself holds only user files."""
    root = Path(root).resolve()
    return root.parent / f"{root.name}.box-emulator-state"


def numeric_ids(value: Any) -> Any:
    """The `ids=number` switch: every digit-string `id` becomes a JSON number."""
    if isinstance(value, dict):
        return {
            k: int(v) if k == "id" and isinstance(v, str) and v.isdigit() else numeric_ids(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [numeric_ids(v) for v in value]
    return value


class Emulator:
    """A Box MCP server over a local folder. Thread-safe; see `box_memory.emulator.testing`."""

    def __init__(
        self,
        root: Path | str,
        *,
        tokens: Iterable[str] = ("test-token",),
        state: Path | str | None = None,
        seed: int = 0,
        call_log: Path | str | None = None,
        **switches: Any,
    ) -> None:
        self.root = Path(root).resolve()
        self.state_path = Path(state).resolve() if state else default_state_path(self.root)
        self.fs = BoxFS(self.root, self.state_path)
        self.switches = Switches().validated()
        self.call_log = Path(call_log) if call_log else None
        self._lock = threading.RLock()
        self._tokens: list[str] = [tokens] if isinstance(tokens, str) else list(tokens)
        self._rng = random.Random(seed)
        self._calls: list[ToolCall] = []
        self._counters: Counter[str] = Counter()
        self._downloads: dict[str, tuple[str, float]] = {}
        self._pending_seen: Counter[str] = Counter()
        self._limiter = RateLimiter()
        self._port: int | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.configure(**switches)

    # -- switches, tokens, log ---------------------------------------------------------------

    def configure(self, **changes: Any) -> Switches:
        """Change switches at runtime (also `tokens=[...]` and `seed=N`); returns the new switches."""
        with self._lock:
            if "tokens" in changes:
                self.set_tokens(changes.pop("tokens"))
            if "token" in changes:
                self.set_tokens([changes.pop("token")])
            if "seed" in changes:
                self._rng = random.Random(changes.pop("seed"))
            known = {f.name for f in fields(Switches)}
            unknown = sorted(set(changes) - known)
            if unknown:
                raise TypeError(f"unknown emulator switch(es): {', '.join(unknown)}")
            coerced = {k: coerce(k, v) for k, v in changes.items()}
            if "content_pending" in coerced:
                self._pending_seen.clear()
            if any(
                k == "rate_limit" or k.endswith(("_per_minute", "_per_second", "window_s")) for k in coerced
            ):
                self._limiter.reset()  # a new budget starts with an empty window
            self.switches = replace(self.switches, **coerced).validated()
            return self.switches

    def set_tokens(self, tokens: Iterable[str]) -> None:
        """Replace the set of accepted bearer tokens (rotate, revoke: an empty list refuses all)."""
        with self._lock:
            self._tokens = [tokens] if isinstance(tokens, str) else list(tokens)

    @property
    def tokens(self) -> list[str]:
        with self._lock:
            return list(self._tokens)

    @property
    def token(self) -> str:
        """The first accepted token ("" when every token has been revoked)."""
        with self._lock:
            return self._tokens[0] if self._tokens else ""

    @property
    def calls(self) -> list[ToolCall]:
        """A snapshot of every tools/call that reached the server, oldest first."""
        with self._lock:
            return list(self._calls)

    @property
    def counters(self) -> dict[str, int]:
        """Totals: requests, tool_calls, tool_calls:<name>, ok, error, unauthorized, http_429, ..."""
        with self._lock:
            return dict(self._counters)

    def reset_calls(self) -> None:
        """Forget recorded calls and counters (the JSONL call log, if any, is left as is)."""
        with self._lock:
            self._calls.clear()
            self._counters.clear()

    def count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counters[key] += n

    def record(self, call: ToolCall) -> None:
        with self._lock:
            self._calls.append(call)
            self._counters["tool_calls"] += 1
            self._counters[f"tool_calls:{call.name}"] += 1
            self._counters[call.outcome] += 1
            if self.call_log is not None:
                with self.call_log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(call.as_json(), ensure_ascii=False) + "\n")

    def draw_fault(self, sw: Switches) -> str | None:
        """One seeded draw per faultable request: dropped, an error kind, or None."""
        if not (sw.drop_rate or sw.error_rate):
            return None
        with self._lock:
            u = self._rng.random()
            if u < sw.drop_rate:
                return "drop"
            if u < sw.drop_rate + sw.error_rate:
                return sw.error_kinds[self._rng.randrange(len(sw.error_kinds))]
        return None

    def admit(self, token: str, tool: str) -> int | None:
        """The `rate_limit` switch: None admits (and counts) the call, else the Retry-After seconds."""
        sw = self.switches
        if not sw.rate_limit:
            return None
        budgets = rules(
            sw.calls_per_minute,
            sw.uploads_per_minute,
            sw.searches_per_minute,
            sw.searches_per_second,
            sw.rate_window_s,
        )
        return self._limiter.admit(token, tool, budgets)

    def _content_pending(self, file_id: str) -> bool:
        """Whether this get_file_content call answers "pending" (the `content_pending` switch)."""
        with self._lock:
            limit = self.switches.content_pending
            self._pending_seen[file_id] += 1
            return limit < 0 or self._pending_seen[file_id] <= limit

    # -- addresses ---------------------------------------------------------------------------

    @property
    def port(self) -> int | None:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self._port}"

    @property
    def url(self) -> str:
        """The MCP endpoint, e.g. http://127.0.0.1:PORT/."""
        return f"{self.base_url}/"

    def _mint_download(self, item: Item) -> tuple[str, float]:
        token = secrets.token_urlsafe(24)
        expires = time.time() + self.switches.download_ttl_s
        with self._lock:
            now = time.time()
            self._downloads = {k: v for k, v in self._downloads.items() if v[1] > now}
            self._downloads[token] = (item.id, expires)
        return f"{self.base_url}/download/{token}", expires

    def download(self, token: str) -> tuple[str, float] | None:
        """The (file id, expiry) a download URL's token was minted for, if it was."""
        with self._lock:
            return self._downloads.get(token)

    # -- MCP handlers ------------------------------------------------------------------------

    def _tool_catalogue(self) -> list[Any]:
        import mcp_types as types

        hidden = self.switches.hidden_tools
        return [
            types.Tool(
                name=name,
                description=entry.get("description") or "",
                input_schema=entry["inputSchema"],
                annotations=types.ToolAnnotations(
                    read_only_hint=bool(entry.get("readOnly")), destructive_hint=False
                ),
            )
            for name, entry in catalogue.load(self.switches.catalogue).items()
            if name not in hidden
        ]

    async def _on_list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp import MCPError

        tools = self._tool_catalogue()
        size = self.switches.tool_page
        if not size:
            return types.ListToolsResult(tools=tools)
        cursor = getattr(params, "cursor", None) or "0"
        if not cursor.isdigit():
            raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor}")
        start = int(cursor)
        more = start + size < len(tools)
        return types.ListToolsResult(
            tools=tools[start : start + size], next_cursor=str(start + size) if more else None
        )

    async def _on_call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio
        import mcp_types as types
        from mcp import MCPError

        name = params.name
        arguments = dict(params.arguments or {})
        sw = self.switches
        started = time.time()
        t0 = time.perf_counter()

        def done(outcome: str, status: int | None = None, code: str | None = None) -> None:
            self.record(
                ToolCall(name, arguments, started, outcome, status, code, (time.perf_counter() - t0) * 1000)
            )

        entry = catalogue.load(sw.catalogue).get(name)
        spec = TOOLS_BY_NAME.get(str(entry.get("emulatorHandler") or name)) if entry else None
        if spec is None or entry is None or name in sw.hidden_tools:
            done("unknown_tool")
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
        if name in sw.disabled_tools:
            done("disabled")
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=DISABLED_TEXT)], is_error=True
            )
        tool_ctx = ToolContext(
            self.fs,
            paging=sw.paging,
            listing=sw.listing,
            search_lag_s=sw.search_lag_s,
            mint_download=self._mint_download,
            repeat_marker=sw.repeat_marker,
            total_skew=sw.total_skew,
            short_pages=sw.short_pages,
            page_cap=sw.page_cap,
            ignore_offset=sw.ignore_offset,
            fail_later_pages=sw.fail_later_pages,
            content_pending=self._content_pending if sw.content_pending else None,
            content_inexact=sw.content_inexact,
            user=sw.user,
            upload_text_only=sw.upload_text_only,
        )
        try:
            handler_args = catalogue.adapt(entry, arguments)
            if not spec.read_only and (sw.shared_links or sw.external_collaborators):
                self._guard_write(handler_args, sw)
            if sw.forbidden:
                self._guard_read(handler_args, sw)
            payload = await anyio.to_thread.run_sync(run_tool, spec, tool_ctx, handler_args)
        except BoxApiError as exc:
            body = exc.body()
            if sw.ids == "number":
                body = numeric_ids(body)
            done("error", exc.status, exc.code)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=json.dumps(body))], is_error=True
            )
        if sw.ids == "number":
            payload = numeric_ids(payload)
        text = json.dumps(payload, ensure_ascii=False)
        done("ok")
        if sw.shape == "structured":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], structured_content=payload
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    def _chains(self, arguments: dict[str, Any]) -> Iterator[list[Item]]:
        """For each item a call names (file, folder, parent folder), the item and its ancestors;
        an id that does not resolve is left to the tool to refuse."""
        for key in ("file_id", "folder_id", "parent_folder_id"):
            raw = arguments.get(key)
            if raw in (None, ""):
                continue
            try:
                chain = self.fs.ancestry(self.fs.get(str(raw).strip()))
            except BoxApiError:
                continue
            yield chain

    def _guard_read(self, arguments: dict[str, Any], sw: Switches) -> None:
        """A folder or file the user may not read (a team boundary): 403 for it and its contents."""
        for chain in self._chains(arguments):
            if any(item.id in sw.forbidden for item in chain):
                raise BoxApiError(
                    403, "access_denied_insufficient_permissions", "Access denied - insufficient permission"
                )

    def _guard_write(self, arguments: dict[str, Any], sw: Switches) -> None:
        """The published rule: write tools refuse items that have a shared link or an external
        collaborator on the item or any parent folder (the wording of the refusal is assumed)."""
        for chain in self._chains(arguments):
            for item in chain:
                if item.id in sw.shared_links:
                    what = "a shared link"
                elif item.id in sw.external_collaborators:
                    what = "an external collaborator"
                else:
                    continue
                raise BoxApiError(
                    403,
                    "access_denied_insufficient_permissions",
                    f"This tool cannot modify items with {what} on the item or a parent folder "
                    f"(folder or file {item.id})",
                )

    def build_app(self) -> EmulatorASGI:
        """A fresh ASGI app (the SDK's session manager can only run once, so one per start)."""
        from mcp.server import Server

        server: Any = Server(
            "box-mcp-emulator",
            version="1.0.0",
            instructions="Box MCP server emulated over a local folder.",
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
        )
        inner = server.streamable_http_app(
            streamable_http_path="/",
            json_response=self.switches.responses == "json",
            stateless_http=self.switches.sessions == "stateless",
            host=HOST,
            max_request_body_size=MAX_BODY,
            session_idle_timeout=None,
        )
        return EmulatorASGI(self, inner)

    # -- lifecycle ---------------------------------------------------------------------------

    def _bind(self, port: int | None) -> socket.socket:
        # IPPROTO_TCP explicitly: asyncio only disables Nagle on sockets whose proto says TCP, and
        # with Nagle on every keep-alive request waits ~40 ms for a delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port if port is not None else (self._port or 0)))
        sock.listen(128)  # accept (queue) connections as soon as the address is announced
        self._port = sock.getsockname()[1]
        return sock

    def _uvicorn(self, log_level: str, *, quick_stop: bool = False) -> Any:
        import uvicorn

        config = uvicorn.Config(
            self.build_app(),
            log_level=log_level,
            http="h11",
            loop="asyncio",
            lifespan="on",
            access_log=False,
            proxy_headers=False,
            timeout_graceful_shutdown=1,
        )
        return _quick_stop_server_class()(config) if quick_stop else uvicorn.Server(config)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, port: int | None = None, *, timeout: float = 10.0) -> Emulator:
        """Serve in a background thread; after a stop(), on the same port as before."""
        if self.running:
            return self
        sock = self._bind(port)
        server = self._uvicorn("warning", quick_stop=True)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"box-mcp-emulator:{self._port}"
        )
        self._server, self._thread = server, thread
        thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"box-mcp emulator failed to start on port {self._port}")
            time.sleep(0.01)
        return self

    def stop(self, *, timeout: float = 10.0) -> None:
        """Stop serving (in-flight calls get about a second); state and port are kept for start()."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.should_exit = True
        thread.join(timeout)
        self._server = self._thread = None

    def close(self) -> None:
        self.stop()
        self.fs.close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def serve_forever(
        self, port: int = 0, *, announce: Callable[[str], None] | None = None, log_level: str = "warning"
    ) -> None:
        """Serve in the foreground until SIGINT/SIGTERM (the CLI)."""
        sock = self._bind(port)
        if announce is not None:
            announce(self.url)
        try:
            self._uvicorn(log_level).run(sockets=[sock])
        finally:
            self.fs.close()


def _quick_stop_server_class() -> type:
    import uvicorn

    class QuickStopServer(uvicorn.Server):
        """Notices `should_exit` within 10 ms instead of 100 ms: tests stop servers a lot."""

        async def main_loop(self) -> None:
            counter = 0
            while not await self.on_tick(counter):
                counter = (counter + 1) % 864000
                await asyncio.sleep(0.01)

    return QuickStopServer
