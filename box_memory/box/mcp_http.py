"""The Box MCP client's wire: MCP over the streamable HTTP transport, on httpx2 alone.

The `mcp` SDK imports its whole client and server stack on load (about 0.9 s of a command's
start-up), so the client side speaks the protocol itself; the SDK stays where a server is
built (`box-memory serve`, the emulator). What this module speaks, after the MCP specification
2025-11-25 (basic/lifecycle, basic/transports, server/tools):

- every JSON-RPC message is its own POST to the one endpoint, with `Accept: application/json,
  text/event-stream`; a request is answered by one JSON object or by an SSE stream;
- `initialize` (this client's protocol version and info, no client capabilities), then the
  `notifications/initialized` notification; the version the server picks must be one of the
  handshake-era versions (2024-11-05 .. 2025-11-25). The 2026 `server/discover` probe is not sent:
  a server of both eras takes the handshake too;
- a session id handed out with the initialize answer (`Mcp-Session-Id`) goes on every later
  request, with `MCP-Protocol-Version`; an HTTP 404 to a request that carried one means the server
  ended the session (the caller opens a new one, transports section "Session Management");
  closing sends `DELETE` with the id (a 405 says the server keeps sessions itself);
- on an SSE stream: the server's notifications are ignored, its requests answered (`ping` with an
  empty result, anything else with "method not found": this client offers no capabilities),
  priming events (an id, no data) skipped, and a stream that ends before the answer is resumed
  with `GET` + `Last-Event-ID` after the server's `retry` wait, when its events had ids;
- `tools/list` one page per call (`cursor` / `nextCursor`) and `tools/call` (`content`,
  `structuredContent`, `isError`), answers checked against the schema's shapes: what is not MCP
  raises `InvalidMessage` naming the problems, and a result whose tool declared an `outputSchema`
  is checked against it (jsonschema, imported only then).

Nothing is retried here: the status, headers or transport error of each request's POST are noted
in the caller's `Exchange` (transport.py), and the retry policy (retry.py) decides.
"""

from __future__ import annotations

import json
import logging
import ssl
from typing import Any

import anyio
import httpx2
import orjson

from box_memory.box.transport import Exchange

__all__ = [
    "CONNECTION_CLOSED",
    "HANDSHAKE_VERSIONS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PROTOCOL_VERSION",
    "REQUEST_TIMEOUT",
    "HTTPStatusError",
    "InvalidMessage",
    "MCPError",
    "McpHttp",
    "UnsupportedVersion",
    "check_output",
    "check_tool",
    "check_tool_result",
]

PROTOCOL_VERSION = "2025-11-25"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# JSON-RPC error codes (the spec's, and the two the SDK uses for what a client stands in for)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
CONNECTION_CLOSED = -32000  # the stream ended without an answer
REQUEST_TIMEOUT = -32001  # no answer within the request's time

MAX_SSE_EVENT = 64 * 1024 * 1024  # one event carries a whole answer: a file's text (Box: <= 50 MB)
MAX_RESUMES = 2  # GET + Last-Event-ID attempts for one request's stream
MAX_REDIRECTS = 5
_JSON = "application/json"
_SSE = "text/event-stream"
_TOOL_FIELDS = {
    "name": str,
    "title": str,
    "description": str,
    "inputSchema": dict,
    "outputSchema": dict,
    "annotations": dict,
    "icons": list,
    "execution": dict,
    "_meta": dict,
}
_BLOCK_FIELDS: dict[str, tuple[tuple[str, type], ...]] = {
    "text": (("text", str),),
    "image": (("data", str), ("mimeType", str)),
    "audio": (("data", str), ("mimeType", str)),
    "resource_link": (("uri", str), ("name", str)),
    "resource": (("resource", dict),),
}

log = logging.getLogger(__name__)


class MCPError(Exception):
    """A JSON-RPC error answer, or one this client stands in for (a stream ended, no answer in time)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"MCP error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class HTTPStatusError(Exception):
    """The server answered a request with HTTP >= 400 (`detail`: a JSON-RPC error's message in it)."""

    def __init__(self, status: int, detail: str | None = None) -> None:
        super().__init__(f"HTTP {status}" + (f": {detail}" if detail else ""))
        self.status = status
        self.detail = detail


class InvalidMessage(Exception):
    """What the server sent is not MCP: not JSON-RPC, or a result of the wrong shape."""

    def __init__(self, problems: list[str]) -> None:
        shown = "; ".join(problems[:3]) + (f"; {len(problems) - 3} more" if len(problems) > 3 else "")
        super().__init__(shown)
        self.problems = problems


def loads(data: str | bytes) -> Any:
    """JSON text as Python values: orjson (a file's text inside an answer is megabytes at 10,000
    memories; orjson decodes it in half the stdlib's time), the stdlib's reading for what orjson
    refuses (NaN, Infinity); ValueError when it is not JSON at all. As in the index reader, an
    integer past 64 bits comes back as a float (Box ids are far below)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


class UnsupportedVersion(Exception):
    """The server chose a protocol version this client does not speak."""

    def __init__(self, version: object) -> None:
        super().__init__(
            f"the server speaks MCP protocol version {version!r}; box-memory speaks "
            f"{', '.join(HANDSHAKE_VERSIONS)}"
        )
        self.version = version


# ---------------------------------------------------------------------------------------------
# The shapes of what a server sends (the schema's, for the fields box-memory reads)


def _typed(
    obj: dict[str, Any], key: str, kind: type, where: str, problems: list[str], *, required: bool
) -> Any:
    if key not in obj or obj[key] is None:
        if required:
            problems.append(f"{where}{key}: missing")
        return None
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        problems.append(f"{where}{key}: expected {kind.__name__}, got {type(value).__name__}")
        return None
    return value


def _check_block(block: Any, where: str, problems: list[str]) -> None:
    if not isinstance(block, dict):
        problems.append(f"{where}: expected a content block object, got {type(block).__name__}")
        return
    kind = block.get("type", "text" if "text" in block else None)  # TextContent's type has a default
    if kind not in _BLOCK_FIELDS:
        problems.append(f"{where}.type: unknown content block type {kind!r}")
        return
    for key, typ in _BLOCK_FIELDS[kind]:
        _typed(block, key, typ, f"{where}.", problems, required=True)
    resource = block.get("resource")
    if kind == "resource" and isinstance(resource, dict):
        _typed(resource, "uri", str, f"{where}.resource.", problems, required=True)
        if not isinstance(resource.get("text"), str) and not isinstance(resource.get("blob"), str):
            problems.append(f"{where}.resource: neither text nor blob")


def check_tool_result(result: Any) -> dict[str, Any]:
    """A `CallToolResult`: `content` blocks, optional `structuredContent` and `isError`."""
    problems: list[str] = []
    if not isinstance(result, dict):
        raise InvalidMessage([f"result: expected an object, got {type(result).__name__}"])
    content = _typed(result, "content", list, "result.", problems, required=True)
    for i, block in enumerate(content or ()):
        _check_block(block, f"result.content[{i}]", problems)
    _typed(result, "isError", bool, "result.", problems, required=False)
    if problems:
        raise InvalidMessage(problems)
    return result


def check_tool(tool: Any, where: str = "tool") -> dict[str, Any]:
    """A `Tool` of a `tools/list` page, as kept in the catalogue: its known fields, none null."""
    problems: list[str] = []
    if not isinstance(tool, dict):
        raise InvalidMessage([f"{where}: expected an object, got {type(tool).__name__}"])
    for key, kind in _TOOL_FIELDS.items():
        _typed(tool, key, kind, f"{where}.", problems, required=key in ("name", "inputSchema"))
    if problems:
        raise InvalidMessage(problems)
    return {k: v for k, v in tool.items() if k in _TOOL_FIELDS and v is not None}


def _check_tools_page(result: Any) -> tuple[list[dict[str, Any]], str | None]:
    problems: list[str] = []
    if not isinstance(result, dict):
        raise InvalidMessage([f"result: expected an object, got {type(result).__name__}"])
    tools = _typed(result, "tools", list, "result.", problems, required=True)
    cursor = _typed(result, "nextCursor", str, "result.", problems, required=False)
    kept: list[dict[str, Any]] = []
    for i, tool in enumerate(tools or ()):
        try:
            kept.append(check_tool(tool, f"result.tools[{i}]"))
        except InvalidMessage as exc:
            problems.extend(exc.problems)
    if problems:
        raise InvalidMessage(problems)
    return kept, cursor or None


def _check_initialize(result: Any) -> dict[str, Any]:
    problems: list[str] = []
    if not isinstance(result, dict):
        raise InvalidMessage([f"result: expected an object, got {type(result).__name__}"])
    _typed(result, "protocolVersion", str, "result.", problems, required=True)
    _typed(result, "capabilities", dict, "result.", problems, required=True)
    info = _typed(result, "serverInfo", dict, "result.", problems, required=True)
    if info is not None:
        _typed(info, "name", str, "result.serverInfo.", problems, required=True)
        _typed(info, "version", str, "result.serverInfo.", problems, required=True)
    _typed(result, "instructions", str, "result.", problems, required=False)
    if problems:
        raise InvalidMessage(problems)
    if result["protocolVersion"] not in HANDSHAKE_VERSIONS:
        raise UnsupportedVersion(result["protocolVersion"])
    return result


def check_output(tool: str, schema: dict[str, Any], result: dict[str, Any]) -> None:
    """A successful result of a tool that declared an `outputSchema` must carry structured content
    that matches it (server/tools "Output Schema": clients SHOULD validate)."""
    try:
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for
    except ImportError:  # pragma: no cover - jsonschema comes with the mcp package
        return
    if "structuredContent" not in result:
        raise InvalidMessage([f"tool {tool} has an output schema but sent no structuredContent"])
    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise InvalidMessage([f"tool {tool} declares an invalid output schema: {exc.message}"]) from None
    errors = sorted(
        cls(schema).iter_errors(result["structuredContent"]), key=lambda e: [str(p) for p in e.path]
    )
    if errors:
        found = [f"structuredContent{''.join(f'[{p!r}]' for p in e.path)}: {e.message}" for e in errors]
        raise InvalidMessage(
            [f"tool {tool} sent structured content that does not match its output schema", *found]
        )


def _envelope(message: Any) -> str:
    """The kind of one JSON-RPC message: request, notification, response or error."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise InvalidMessage(["not a JSON-RPC 2.0 message"])
    if "method" in message:
        if not isinstance(message["method"], str):
            raise InvalidMessage(["method: expected str"])
        return "request" if "id" in message else "notification"
    if "error" in message:
        error = message["error"]
        problems: list[str] = []
        if not isinstance(error, dict):
            raise InvalidMessage(["error: expected an object"])
        _typed(error, "code", int, "error.", problems, required=True)
        _typed(error, "message", str, "error.", problems, required=True)
        if problems:
            raise InvalidMessage(problems)
        return "error"
    if "result" in message and "id" in message:
        return "response"
    raise InvalidMessage(["neither a request, a notification nor a response"])


# ---------------------------------------------------------------------------------------------
# The client


def _note(exchange: Exchange | None, response: httpx2.Response) -> None:
    if exchange is not None:
        exchange.status = response.status_code
        exchange.headers = {k.lower(): v for k, v in response.headers.items()}


def _content_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").partition(";")[0].strip().lower()


def _tls(url: httpx2.URL) -> ssl.SSLContext | bool:
    """Certificate checks as httpx2's default for https; for a plain-http endpoint (the emulator,
    a local proxy) a context without CA certificates, since this client never leaves the
    endpoint's origin: loading them would cost a local command tens of milliseconds for nothing,
    and the bare context still verifies, so it would refuse any TLS peer."""
    return True if url.scheme == "https" else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _same_origin(a: httpx2.URL, b: httpx2.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


class McpHttp:
    """One MCP session over streamable HTTP. Not thread-safe; concurrent calls from one event
    loop share the session (and httpx2's connection pool)."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str],
        timeout: float,
        request_timeout: float | None,
        client_info: dict[str, str],
    ) -> None:
        self.url = httpx2.URL(url)
        self.http = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(timeout, connect=min(timeout, 10.0)),
            verify=_tls(self.url),
        )
        self.timeout = timeout
        self.request_timeout = request_timeout
        self.client_info = client_info
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self._ids = 0

    # -- the session -------------------------------------------------------------------------

    async def initialize(self, exchange: Exchange | None = None) -> None:
        """The handshake: `initialize`, then `notifications/initialized` (lifecycle section)."""
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": self.client_info}
        result = _check_initialize(await self.request("initialize", params, exchange))
        self.protocol_version = result["protocolVersion"]
        self.server_info = result["serverInfo"]
        self.capabilities = result["capabilities"]
        self.instructions = result.get("instructions")
        await self.notify("notifications/initialized")

    async def list_tools(
        self, cursor: str | None = None, exchange: Exchange | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of `tools/list`: the tools and the next page's cursor (None after the last)."""
        params = {"cursor": cursor} if cursor else {}
        return _check_tools_page(await self.request("tools/list", params, exchange))

    async def call_tool(
        self, name: str, arguments: dict[str, Any], exchange: Exchange | None = None
    ) -> dict[str, Any]:
        """`tools/call`; the result as sent (`content`, `structuredContent`, `isError`), checked."""
        params = {"name": name, "arguments": arguments}
        return check_tool_result(await self.request("tools/call", params, exchange))

    async def aclose(self) -> None:
        """End the session (DELETE with its id; a 405 or any failure is fine) and the HTTP client."""
        try:
            if self.session_id:
                with anyio.move_on_after(self.timeout):
                    response = await self.http.request("DELETE", self.url, headers=self._headers())
                    if response.status_code not in (200, 202, 204, 404, 405):
                        log.debug("MCP session DELETE answered HTTP %s", response.status_code)
        except httpx2.HTTPError as exc:
            log.debug("MCP session DELETE failed: %s", exc)
        finally:
            self.session_id = None
            await self.http.aclose()

    # -- messages ----------------------------------------------------------------------------

    def _headers(self, accept: str = f"{_JSON}, {_SSE}") -> dict[str, str]:
        headers = {"accept": accept}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    async def _send(
        self, method: str, body: bytes | None, headers: dict[str, str], exchange: Exchange | None
    ) -> httpx2.Response:
        """One HTTP request, streamed; same-origin 307/308 redirects followed (they keep the
        method and body), any other redirect refused with its location named."""
        url = self.url
        if body is not None:
            headers = {**headers, "content-type": _JSON}
        for _ in range(MAX_REDIRECTS + 1):
            request = self.http.build_request(method, url, content=body, headers=headers)
            try:
                response = await self.http.send(request, stream=True)
            except httpx2.TransportError as exc:
                if exchange is not None:
                    exchange.error = exc
                raise
            location = response.headers.get("location")
            if response.status_code not in (301, 302, 303, 307, 308) or not location:
                _note(exchange, response)
                return response
            await response.aclose()
            target = url.join(location)
            if response.status_code not in (307, 308) or not _same_origin(url, target):
                raise MCPError(
                    INVALID_REQUEST,
                    f"redirect (HTTP {response.status_code}) to {target} not followed; "
                    "use that URL as the MCP endpoint if it is the intended server",
                )
            url = target
        raise MCPError(INVALID_REQUEST, f"more than {MAX_REDIRECTS} redirects")

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification; the server's answer (202) is not waited on for anything: a
        failure shows on the next request."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params:
            message["params"] = params
        try:
            response = await self._send("POST", _dumps(message), self._headers(), None)
            await response.aclose()
        except (httpx2.HTTPError, MCPError) as exc:
            log.debug("MCP notification %s not delivered: %s", method, exc)

    async def request(self, method: str, params: dict[str, Any], exchange: Exchange | None = None) -> Any:
        """Send one request and return its result (raises MCPError for an error answer)."""
        self._ids += 1
        rid = self._ids
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        had_session = self.session_id is not None
        try:
            with anyio.fail_after(self.request_timeout):
                headers = self._headers() if method != "initialize" else {"accept": f"{_JSON}, {_SSE}"}
                response = await self._send("POST", _dumps(message), headers, exchange)
                try:
                    return await self._answer(response, rid, method, had_session, exchange)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise MCPError(
                REQUEST_TIMEOUT, f"no answer to {method} within {self.request_timeout:g} s"
            ) from None
        except httpx2.SSEError as exc:
            raise InvalidMessage([f"event stream: {exc}"]) from None
        except httpx2.TransportError as exc:
            if exchange is not None and exchange.error is None:
                exchange.error = exc  # the body broke off mid-answer
            raise

    async def _answer(
        self, response: httpx2.Response, rid: int, method: str, had_session: bool, exchange: Exchange | None
    ) -> Any:
        status = response.status_code
        if status >= 400:
            detail = await _error_detail(response)
            if status == 404 and had_session:
                raise MCPError(INVALID_REQUEST, "Session terminated")
            raise HTTPStatusError(status, detail)
        if status == 202:
            raise MCPError(INVALID_REQUEST, "server answered a request with 202 Accepted")
        if method == "initialize":
            session = response.headers.get("mcp-session-id")
            if session:
                if not all(0x21 <= ord(c) <= 0x7E for c in session):
                    raise InvalidMessage(["Mcp-Session-Id: not visible ASCII"])
                self.session_id = session
        kind = _content_type(response)
        if kind == _JSON:
            body = await response.aread()
            try:
                decoded = loads(body)
            except ValueError:
                raise InvalidMessage([f"answer to {method}: not JSON"]) from None
            for message in decoded if isinstance(decoded, list) else [decoded]:
                found, value = await self._take(message, rid)
                if found:
                    return value
            raise InvalidMessage([f"answer to {method}: no response to request {rid}"])
        if kind == _SSE:
            return await self._stream(response, rid, method, exchange)
        raise InvalidMessage([f"answer to {method}: unexpected content type {kind or 'none'!r}"])

    async def _stream(
        self, response: httpx2.Response, rid: int, method: str, exchange: Exchange | None
    ) -> Any:
        """Read an SSE answer; resume it (GET + Last-Event-ID) when it ends before the response."""
        last_id: str | None = None
        retry_ms: int | None = None
        resumes = 0
        while True:
            async for event in httpx2.EventSource(response, max_event_size=MAX_SSE_EVENT):
                if event.id:
                    last_id = event.id
                if event.retry is not None:
                    retry_ms = event.retry
                if event.event != "message" or not event.data:
                    continue  # a priming event (id, no data), or an event type MCP does not use
                try:
                    decoded = loads(event.data)
                except ValueError:
                    raise InvalidMessage([f"answer to {method}: an event that is not JSON"]) from None
                found, value = await self._take(decoded, rid)
                if found:
                    return value
            if last_id is None or resumes >= MAX_RESUMES:
                raise MCPError(CONNECTION_CLOSED, "SSE stream ended without a response")
            resumes += 1
            await response.aclose()
            await anyio.sleep((retry_ms if retry_ms is not None else 1000) / 1000)
            headers = {**self._headers(_SSE), "last-event-id": last_id}
            response = await self._send("GET", None, headers, exchange)
            if response.status_code >= 400 or _content_type(response) != _SSE:
                await response.aclose()
                raise MCPError(
                    CONNECTION_CLOSED, f"SSE stream ended; resuming it answered HTTP {response.status_code}"
                )

    async def _take(self, message: Any, rid: int) -> tuple[bool, Any]:
        """(True, result) for the response to `rid`; a server request is answered, anything else
        ignored. Raises MCPError for an error answer to `rid`."""
        kind = _envelope(message)
        if kind == "notification":
            return False, None
        if kind == "request":
            await self._answer_server(message)
            return False, None
        if kind == "response":
            return (True, message["result"]) if message["id"] == rid else (False, None)
        if message.get("id") not in (rid, None):  # an error with a null id: ours, not parsed
            return False, None
        error = message["error"]
        raise MCPError(error["code"], error["message"], error.get("data"))

    async def _answer_server(self, request: dict[str, Any]) -> None:
        """Answer a request the server sent on a stream: `ping` with an empty result; this client
        declares no capabilities (sampling, roots, elicitation), so anything else is refused."""
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request.get("id")}
        if request["method"] == "ping":
            answer["result"] = {}
        else:
            answer["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {request['method']}"}
        try:
            response = await self._send("POST", _dumps(answer), self._headers(), None)
            await response.aclose()
        except (httpx2.HTTPError, MCPError) as exc:
            log.debug("answer to the server's %s not delivered: %s", request["method"], exc)


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


async def _error_detail(response: httpx2.Response) -> str | None:
    """The message of a JSON-RPC error in an HTTP error answer's body, if it has one."""
    if _content_type(response) != _JSON:
        return None
    try:
        body = json.loads(await response.aread())
    except (ValueError, httpx2.HTTPError):
        return None
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None
