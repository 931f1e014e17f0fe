"""The emulator server: Box-style auth, fault injection and a call log in front of an MCP server.

One `Emulator` owns the folder state (BoxFS), the switches, the call log and the valid tokens; it
can serve over uvicorn in a background thread (tests) or in the foreground (the CLI). Stopping and
starting again reuses the same port and keeps all state, so tests can kill the server mid-run.

Everything HTTP-level that the MCP SDK cannot do the Box way happens in our own ASGI layer:
the exact 401 with an empty body, `GET /` -> 405, the protected-resource document, download URLs,
HTTP 429/500 faults with `retry-after`, and dropped connections.

Guesses about the real service (switches exist so tests can cover the alternatives):
- era "legacy" (default): the server only speaks the handshake-era protocol (initialize), and
  rejects the 2026 `server/discover` probe like a 2025 server does; "dual" serves both eras;
- sessions "stateless" (default): no Mcp-Session-Id, so a restarted server just carries on;
  "stateful" issues session ids, which a restart invalidates (the client sees 404 and must reconnect);
- an HTTP-level 429/500 carries a Box error JSON body (not JSON-RPC), so the SDK reports only a
  generic error and a client must look at the HTTP status and `retry-after` itself; error kinds
  "tool429"/"tool500" instead relay the Box error inside an isError tool result;
- a wrong token gets `error="invalid_token"` with the RFC 6750 style description below, and the
  token is checked before anything else on `/`, so even a `GET /` without a token is a 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import mimetypes
import random
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from box_memory.emulator import catalogue
from box_memory.emulator.boxfs import BoxApiError, BoxFS, Item
from box_memory.emulator.tools import TOOLS_BY_NAME, ToolContext, run_tool

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HOST = "127.0.0.1"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
DISABLED_TEXT = (
    "Tool has been disabled by the enterprise admin. Contact your enterprise admin for more information."
)
MISSING_TOKEN = ("invalid_request", "The access token was not found.")
BAD_TOKEN = (
    "invalid_token",
    "The access token provided is expired, revoked, malformed, or invalid for other reasons.",
)
ERROR_KINDS = ("429", "500", "503", "tool429", "tool500")
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MAX_BODY = 64 * 1024 * 1024

_CHOICES = {
    "paging": ("marker", "offset", "none"),
    "shape": ("structured", "text"),
    "ids": ("string", "number"),
    "listing": ("mini", "full"),
    "era": ("legacy", "dual"),
    "sessions": ("stateless", "stateful"),
    "user": ("full", "mini"),
}


@dataclass(frozen=True)
class Switches:
    """Behaviour switches; all but `sessions` take effect on the next request."""

    paging: str = "marker"
    shape: str = "structured"
    ids: str = "string"
    listing: str = "mini"
    era: str = "legacy"
    sessions: str = "stateless"
    latency_ms: float = 0
    error_rate: float = 0.0
    error_kinds: tuple[str, ...] = ("429", "500")
    drop_rate: float = 0.0
    search_lag_s: float = 0
    retry_after_s: int = 1
    fault_all: bool = False
    repeat_marker: bool = False  # marker paging hands back the marker it was given (a broken server)
    total_skew: int = 0  # offset paging reports total_count off by this much
    short_pages: bool = False  # pages one entry shorter than the limit before the end
    page_cap: int = 0  # pages silently capped at this many entries (0: no cap beyond the limit)
    ignore_offset: bool = False  # offset paging always answers the first page (a broken server)
    fail_later_pages: bool = False  # every listing page after the first fails (a 500, every time)
    content_pending: int = 0  # get_file_content answers "pending" this many times per file (-1: always)
    content_inexact: bool = False  # get_file_content text is not byte-exact
    user: str = "full"  # who_am_i: "full" user object, or "mini" (no enterprise)
    upload_text_only: bool = False  # upload_file refuses names outside the documented text types
    shared_links: frozenset[str] = frozenset()  # item ids with a shared link: write tools refuse below
    external_collaborators: frozenset[str] = frozenset()  # item ids with an external collaborator
    forbidden: frozenset[str] = frozenset()  # item ids this user may not read (403 on them and below)
    catalogue: str = "today"  # which tool catalogue snapshot to serve (catalogue.py), or a file
    disabled_tools: frozenset[str] = frozenset()
    hidden_tools: frozenset[str] = frozenset()
    download_ttl_s: float = 900

    def validated(self) -> Switches:
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")
        catalogue.catalogue_path(self.catalogue)  # raises ValueError for an unknown one
        bad = [k for k in self.error_kinds if k not in ERROR_KINDS]
        if bad or not self.error_kinds:
            raise ValueError(
                f"error_kinds must be a non-empty subset of {ERROR_KINDS}, not {self.error_kinds}"
            )
        for name in ("error_rate", "drop_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        if self.latency_ms < 0 or self.search_lag_s < 0 or self.retry_after_s < 0 or self.page_cap < 0:
            raise ValueError("latency_ms, search_lag_s, retry_after_s and page_cap must not be negative")
        return self


def _coerce(name: str, value: Any) -> Any:
    if name in ("disabled_tools", "hidden_tools", "shared_links", "external_collaborators", "forbidden"):
        return frozenset([value] if isinstance(value, str) else value or ())
    if name == "error_kinds":
        items = value.split(",") if isinstance(value, str) else value
        return tuple(str(k).strip() for k in items if str(k).strip())
    if name in ("error_rate", "drop_rate", "latency_ms", "search_lag_s", "download_ttl_s"):
        return float(value)
    if name == "retry_after_s":
        return int(value)
    if name in (
        "fault_all",
        "repeat_marker",
        "short_pages",
        "ignore_offset",
        "fail_later_pages",
        "content_inexact",
        "upload_text_only",
    ):
        return bool(value)
    if name in ("total_skew", "page_cap", "content_pending"):
        return int(value)
    return value


@dataclass(frozen=True)
class ToolCall:
    """One tools/call that reached the server.

    outcome: "ok", "error" (a Box error relayed as isError), "disabled", "unknown_tool",
    "unauthorized" (401, never ran), "http_429"/"http_500"/"http_503" (HTTP fault, never ran),
    "tool_429"/"tool_500" (fault relayed as isError, never ran), "dropped" (connection closed).
    """

    name: str
    arguments: dict[str, Any]
    time: float
    outcome: str
    status: int | None = None
    code: str | None = None
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def as_json(self) -> dict[str, Any]:
        return {
            "time": datetime.fromtimestamp(self.time, UTC).isoformat(timespec="milliseconds"),
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "outcome": self.outcome,
            "status": self.status,
            "code": self.code,
            "duration_ms": round(self.duration_ms, 3),
        }


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


async def _read_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def _respond(
    send: Send, status: int, body: bytes = b"", headers: Iterable[tuple[str, str]] = ()
) -> None:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, payload: Any, headers: Iterable[tuple[str, str]] = ()) -> None:
    content_type = ("content-type", "application/json")
    await _respond(send, status, json.dumps(payload).encode(), [content_type, *headers])


async def _drop(send: Send) -> None:
    """Close the connection without a single byte of answer.

    uvicorn's h11 cycle exposes its transport through the bound `send`; where it does not, fall
    back to starting a response and abandoning it, which uvicorn answers by closing the socket.
    """
    cycle = getattr(send, "__self__", None)
    transport = getattr(cycle, "transport", None)
    if transport is not None:
        transport.close()
        cycle.disconnected = True  # type: ignore[union-attr]
        return
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", b"4096")],
        }
    )


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
            coerced = {k: _coerce(k, v) for k, v in changes.items()}
            if "content_pending" in coerced:
                self._pending_seen.clear()
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

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counters[key] += n

    def _record(self, call: ToolCall) -> None:
        with self._lock:
            self._calls.append(call)
            self._counters["tool_calls"] += 1
            self._counters[f"tool_calls:{call.name}"] += 1
            self._counters[call.outcome] += 1
            if self.call_log is not None:
                with self.call_log.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(call.as_json(), ensure_ascii=False) + "\n")

    def _draw_fault(self, sw: Switches) -> str | None:
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

        return types.ListToolsResult(tools=self._tool_catalogue())

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
            self._record(
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
            json_response=True,
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


@dataclass
class EmulatorASGI:
    """Our HTTP layer: routes, Box auth, era check, faults; the MCP app sits behind it."""

    emulator: Emulator
    inner: Any

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.inner(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if path == WELL_KNOWN:
            await self._well_known(scope, send)
        elif path.startswith("/download/"):
            await self._download(path.removeprefix("/download/"), method, send)
        elif path == "/":
            await self._mcp(scope, receive, send)
        else:
            await _respond(send, 404, b"Not Found", [("content-type", "text/plain")])

    def _base(self, scope: Scope) -> str:
        host = dict(scope.get("headers") or []).get(b"host")
        return f"http://{host.decode('latin-1')}" if host else self.emulator.base_url

    async def _well_known(self, scope: Scope, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, headers=[("allow", "GET")])
            return
        await _json(
            send,
            200,
            {
                "resource": self._base(scope),
                "resource_name": "Box MCP Server",
                "authorization_servers": ["https://api.box.com/"],
                "bearer_methods_supported": ["header"],
            },
        )

    async def _download(self, token: str, method: str, send: Send) -> None:
        emu = self.emulator
        if method not in ("GET", "HEAD"):
            await _respond(send, 405, headers=[("allow", "GET")])
            return
        with emu._lock:
            entry = emu._downloads.get(token)
        if entry is None or entry[1] < time.time():
            await _respond(send, 404, b"Not Found", [("content-type", "text/plain")])
            return
        try:
            item = emu.fs.get(entry[0], "file")
            data = emu.fs.read_bytes(item)
        except (BoxApiError, FileNotFoundError):
            await _respond(send, 404, b"Not Found", [("content-type", "text/plain")])
            return
        emu._count("downloads")
        ctype = mimetypes.guess_type(item.name)[0] or "application/octet-stream"
        await _respond(
            send,
            200,
            b"" if method == "HEAD" else data,
            [("content-type", ctype), ("etag", f'"{item.sha1}"')],
        )

    def _challenge(self, scope: Scope, error: tuple[str, str]) -> list[tuple[str, str]]:
        base = self._base(scope)
        return [
            (
                "www-authenticate",
                f'Bearer realm="Service", error="{error[0]}", error_description="{error[1]}", '
                f'resource_metadata="{base}{WELL_KNOWN}"',
            )
        ]

    def _auth_error(self, scope: Scope) -> tuple[str, str] | None:
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1").strip()
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return MISSING_TOKEN
        return None if token.strip() in self.emulator.tokens else BAD_TOKEN

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        emu = self.emulator
        sw = emu.switches
        emu._count("requests")
        method = scope["method"]
        body: bytes | None = None
        message: Any = None
        if method == "POST":
            body = await _read_body(receive)
            if body is None:  # client went away, or the body is over the limit
                await _respond(send, 413)
                return
            with contextlib.suppress(ValueError):
                message = json.loads(body)
        rpc: dict[str, Any] = message if isinstance(message, dict) else {}
        rpc_method = rpc.get("method")
        params: dict[str, Any] = rpc["params"] if isinstance(rpc.get("params"), dict) else {}
        if isinstance(rpc_method, str):
            emu._count(f"rpc:{rpc_method}")  # initialize, tools/list, tools/call... (billed calls)
        is_tool_call = rpc_method == "tools/call"
        tool_name = str(params.get("name", "")) if is_tool_call else ""
        tool_args: dict[str, Any] = params["arguments"] if isinstance(params.get("arguments"), dict) else {}

        auth_error = self._auth_error(scope)
        if auth_error is not None:
            emu._count("http_401")
            if is_tool_call:
                emu._record(ToolCall(tool_name, tool_args, time.time(), "unauthorized", 401, auth_error[0]))
            await _respond(send, 401, b"", self._challenge(scope, auth_error))
            return
        if method == "GET":
            await _respond(send, 405, headers=[("allow", "POST, DELETE")])
            return
        if method != "POST" or body is None:
            await self.inner(scope, receive, send)
            return

        headers = dict(scope.get("headers") or [])
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if sw.era == "legacy" and (version and version not in HANDSHAKE_VERSIONS):
            await _json(
                send,
                400,
                {
                    "jsonrpc": "2.0",
                    "id": rpc.get("id"),
                    "error": {
                        "code": -32600,
                        "message": f"Bad Request: Unsupported protocol version: {version}. "
                        f"Supported versions: {', '.join(HANDSHAKE_VERSIONS)}",
                    },
                },
            )
            return
        if sw.era == "legacy" and rpc_method == "server/discover":
            await _json(
                send,
                200,
                {
                    "jsonrpc": "2.0",
                    "id": rpc.get("id"),
                    "error": {"code": -32601, "message": "Method not found"},
                },
            )
            return

        if is_tool_call or (sw.fault_all and rpc_method):
            if sw.latency_ms:
                await asyncio.sleep(sw.latency_ms / 1000)
            fault = emu._draw_fault(sw)
            if fault is not None:
                await self._fault(fault, sw, rpc, tool_name, tool_args, version, send)
                return
        await self.inner(scope, _replay(body, receive), send)

    async def _fault(
        self,
        fault: str,
        sw: Switches,
        rpc: dict[str, Any],
        tool_name: str,
        tool_args: dict[str, Any],
        version: str,
        send: Send,
    ) -> None:
        emu = self.emulator
        name = tool_name or str(rpc.get("method"))
        if fault == "drop":
            if tool_name:
                emu._record(ToolCall(name, tool_args, time.time(), "dropped"))
            else:
                emu._count("dropped")
            await _drop(send)
            return
        status = int(fault.removeprefix("tool"))
        code = {429: "rate_limit_exceeded", 500: "internal_server_error", 503: "unavailable"}[status]
        text = {
            429: "Request rate limit exceeded, please try again later",
            500: "Internal Server Error",
            503: "Service Unavailable",
        }[status]
        box_error = BoxApiError(status, code, text).body()
        if fault.startswith("tool"):
            if tool_name:
                emu._record(ToolCall(name, tool_args, time.time(), f"tool_{status}", status, code))
            else:
                emu._count(f"tool_{status}")
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": json.dumps(box_error)}],
                "isError": True,
            }
            if version and version not in HANDSHAKE_VERSIONS:
                result["resultType"] = "complete"
            await _json(send, 200, {"jsonrpc": "2.0", "id": rpc.get("id"), "result": result})
            return
        if tool_name:
            emu._record(ToolCall(name, tool_args, time.time(), f"http_{status}", status, code))
        else:
            emu._count(f"http_{status}")
        extra = [("retry-after", str(sw.retry_after_s))] if status == 429 else []
        await _json(send, status, box_error, extra)
