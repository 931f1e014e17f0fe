"""The emulator's HTTP layer: routes, Box-style auth, the era check and faults, before the MCP app.

Everything HTTP-level that the MCP SDK cannot do the Box way happens here: the exact 401 with an
empty body, `GET /` -> 405, the protected-resource document, download URLs, HTTP 429/500 faults
with `retry-after`, Box's per-user rate limits (the `rate_limit` switch, ratelimit.py), and
dropped connections.

Guesses about the real service (switches exist so tests can cover the alternatives):
- era "legacy" (default): the server only speaks the handshake-era protocol (initialize), and
  rejects the 2026 `server/discover` probe like a 2025 server does; "dual" serves both eras;
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
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

from box_memory.emulator.boxapi import BoxApiError
from box_memory.emulator.boxfs import BoxFS
from box_memory.emulator.calls import ToolCall
from box_memory.emulator.switches import Switches

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


WELL_KNOWN = "/.well-known/oauth-protected-resource"
MISSING_TOKEN = ("invalid_request", "The access token was not found.")
BAD_TOKEN = (
    "invalid_token",
    "The access token provided is expired, revoked, malformed, or invalid for other reasons.",
)
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MAX_BODY = 64 * 1024 * 1024


class Served(Protocol):
    """What the HTTP layer reads and records of the emulator behind it (`app.Emulator`)."""

    fs: BoxFS
    switches: Switches

    @property
    def base_url(self) -> str: ...

    @property
    def tokens(self) -> list[str]: ...

    def count(self, key: str, n: int = 1) -> None: ...

    def record(self, call: ToolCall) -> None: ...

    def draw_fault(self, sw: Switches) -> str | None: ...

    def admit(self, token: str, tool: str) -> int | None: ...

    def download(self, token: str) -> tuple[str, float] | None: ...


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


def _bearer(scope: Scope) -> tuple[str, str]:
    """(scheme, token) of the request's Authorization header."""
    header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1").strip()
    scheme, _, token = header.partition(" ")
    return scheme, token.strip()


@dataclass
class EmulatorASGI:
    """Our HTTP layer: routes, Box auth, era check, faults; the MCP app sits behind it."""

    emulator: Served
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
        entry = emu.download(token)
        if entry is None or entry[1] < time.time():
            await _respond(send, 404, b"Not Found", [("content-type", "text/plain")])
            return
        try:
            item = emu.fs.get(entry[0], "file")
            data = emu.fs.read_bytes(item)
        except (BoxApiError, FileNotFoundError):
            await _respond(send, 404, b"Not Found", [("content-type", "text/plain")])
            return
        emu.count("downloads")
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
        scheme, token = _bearer(scope)
        if scheme.lower() != "bearer" or not token:
            return MISSING_TOKEN
        return None if token in self.emulator.tokens else BAD_TOKEN

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        emu = self.emulator
        sw = emu.switches
        emu.count("requests")
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
            emu.count(f"rpc:{rpc_method}")  # initialize, tools/list, tools/call... (billed calls)
        is_tool_call = rpc_method == "tools/call"
        tool_name = str(params.get("name", "")) if is_tool_call else ""
        tool_args: dict[str, Any] = params["arguments"] if isinstance(params.get("arguments"), dict) else {}

        auth_error = self._auth_error(scope)
        if auth_error is not None:
            emu.count("http_401")
            if is_tool_call:
                emu.record(ToolCall(tool_name, tool_args, time.time(), "unauthorized", 401, auth_error[0]))
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

        if is_tool_call and sw.rate_limit:
            retry_after = emu.admit(_bearer(scope)[1], tool_name)  # one token is one user
            if retry_after is not None:
                code, text = "rate_limit_exceeded", "Request rate limit exceeded, please try again later"
                emu.record(ToolCall(tool_name, tool_args, time.time(), "rate_limited", 429, code))
                body_429 = BoxApiError(429, code, text).body()
                await _json(send, 429, body_429, [("retry-after", str(retry_after))])
                return
        if is_tool_call or (sw.fault_all and rpc_method):
            if sw.latency_ms:
                await asyncio.sleep(sw.latency_ms / 1000)
            fault = emu.draw_fault(sw)
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
                emu.record(ToolCall(name, tool_args, time.time(), "dropped"))
            else:
                emu.count("dropped")
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
                emu.record(ToolCall(name, tool_args, time.time(), f"tool_{status}", status, code))
            else:
                emu.count(f"tool_{status}")
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": json.dumps(box_error)}],
                "isError": True,
            }
            if version and version not in HANDSHAKE_VERSIONS:
                result["resultType"] = "complete"
            await _json(send, 200, {"jsonrpc": "2.0", "id": rpc.get("id"), "result": result})
            return
        if tool_name:
            emu.record(ToolCall(name, tool_args, time.time(), f"http_{status}", status, code))
        else:
            emu.count(f"http_{status}")
        extra = [("retry-after", str(sw.retry_after_s))] if status == 429 else []
        await _json(send, status, box_error, extra)
