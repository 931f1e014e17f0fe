"""The client's own MCP wire (box/mcp_http.py) over real HTTP on 127.0.0.1: a scripted server for
what the emulator never sends (server requests on a stream, broken answers, odd versions), and
the emulator answering as SSE, with sessions and with a paged tool list."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from box_memory.box.client import BoxMCPClient
from box_memory.box.mcp_http import HANDSHAKE_VERSIONS, PROTOCOL_VERSION
from box_memory.emulator.testing import Emulator, running_emulator
from box_memory.errors import BackendUnavailable, BoxToolError, ToolMissing

TOKEN = "wire-token-5a7c"
USER = {"type": "user", "id": "7", "name": "Ada"}
TOOLS = [
    {"name": n, "inputSchema": {"type": "object", "properties": {}}}
    for n in ("who_am_i", "get_file_details", "get_file_content", "upload_file", "create_folder")
]

Answer = tuple[int, dict[str, str], bytes | list[bytes]]  # a list: written piece by piece


@dataclass
class Seen:
    method: str  # HTTP method
    path: str
    headers: dict[str, str]
    message: Any = None


def rpc_result(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def as_json(message: Any, status: int = 200, **headers: str) -> Answer:
    return status, {"content-type": "application/json", **headers}, json.dumps(message).encode()


def as_sse(*events: Any, **headers: str) -> Answer:
    """An SSE body: each event a JSON-RPC message, or a raw `str` written as it is."""
    parts = [e if isinstance(e, str) else f"event: message\ndata: {json.dumps(e)}\n\n" for e in events]
    return 200, {"content-type": "text/event-stream", **headers}, "".join(parts).encode()


def tool_result(payload: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": json.dumps(payload)}], "structuredContent": payload}


@dataclass
class Script:
    """A small MCP server: sessions, a paged tool list, tool calls; `hook` answers first."""

    session: str | None = "sess-0001"
    version: str = PROTOCOL_VERSION
    page: int = 2
    tools: list[dict[str, Any]] = field(default_factory=lambda: list(TOOLS))
    hook: Callable[[Seen], Answer | None] | None = None
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def posts(self, method: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and (method is None or _method(s) == method)]

    def answer(self, seen: Seen) -> Answer:
        with self.lock:
            self.seen.append(seen)
        if self.hook is not None and (custom := self.hook(seen)) is not None:
            return custom
        if seen.method == "DELETE":
            return 204, {}, b""
        if seen.method != "POST":
            return 405, {}, b""
        msg = seen.message
        if "id" not in msg or "method" not in msg:  # a notification, or our answer to a request
            return 202, {}, b""
        method, params = msg["method"], msg.get("params") or {}
        if method == "initialize":
            result = {
                "protocolVersion": self.version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "scripted", "version": "1.0"},
            }
            extra = {"mcp-session-id": self.session} if self.session else {}
            return as_json(rpc_result(msg["id"], result), **extra)
        if method == "tools/list":
            start = int(params.get("cursor") or 0)
            page: dict[str, Any] = {"tools": self.tools[start : start + self.page]}
            if start + self.page < len(self.tools):
                page["nextCursor"] = str(start + self.page)
            return as_json(rpc_result(msg["id"], page))
        if method == "tools/call":
            return as_json(rpc_result(msg["id"], tool_result(USER)))
        return as_json({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "nope"}})


def _method(seen: Seen) -> str | None:
    return seen.message.get("method") if isinstance(seen.message, dict) else None


class _Handler(BaseHTTPRequestHandler):
    server: Any

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        seen = Seen(self.command, self.path, headers, json.loads(body) if body else None)
        status, out_headers, payload = self.server.script.answer(seen)
        self.send_response(status)
        for key, value in out_headers.items():
            self.send_header(key, value)
        if isinstance(payload, bytes):
            self.send_header("content-length", str(len(payload)))
        self.end_headers()
        for piece in [payload] if isinstance(payload, bytes) else payload:
            self.wfile.write(piece)
            self.wfile.flush()
            time.sleep(0.01)

    do_POST = do_GET = do_DELETE = _serve

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def script() -> Iterator[Script]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.script = Script()  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    server.script.url = f"http://127.0.0.1:{server.server_address[1]}/"  # type: ignore[attr-defined]
    try:
        yield server.script  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def box(script: Script, delays: list[float] | None = None, **kw: Any) -> BoxMCPClient:
    kw.setdefault("timeout", 5.0)
    kw.setdefault("catalogue_cache", False)
    sleeps = delays if delays is not None else []
    return BoxMCPClient(script.url, TOKEN, sleep=sleeps.append, **kw)  # type: ignore[attr-defined]


# --- the handshake, the session, the catalogue ------------------------------------------------


def test_handshake_session_id_and_version_headers(script: Script) -> None:
    with box(script) as client:
        assert client.call("who_am_i", {}) == USER
        assert (client.protocol_version, client.server_name) == (PROTOCOL_VERSION, "scripted")
    init, initialized, *later = script.seen
    assert _method(init) == "initialize"
    assert init.message["params"]["protocolVersion"] == PROTOCOL_VERSION
    assert init.message["params"]["clientInfo"]["name"] == "box-memory"
    assert "mcp-session-id" not in init.headers and "mcp-protocol-version" not in init.headers
    assert "application/json" in init.headers["accept"] and "text/event-stream" in init.headers["accept"]
    assert init.headers["authorization"] == f"Bearer {TOKEN}"
    assert _method(initialized) == "notifications/initialized" and "id" not in initialized.message
    for seen in [initialized, *later]:  # every later request carries the session and the version
        assert seen.headers["mcp-session-id"] == "sess-0001"
        assert seen.headers["mcp-protocol-version"] == PROTOCOL_VERSION
    assert later[-1].method == "DELETE"  # the session is ended when the client closes


def test_no_session_id_no_delete(script: Script) -> None:
    script.session = None
    with box(script) as client:
        client.call("who_am_i", {})
    assert all("mcp-session-id" not in s.headers for s in script.seen)
    assert [s.method for s in script.seen if s.method != "POST"] == []


def test_tool_list_is_read_page_by_page(script: Script) -> None:
    with box(script) as client:
        assert set(client.tools) == {t["name"] for t in TOOLS}
        assert client.tools["who_am_i"] == TOOLS[0]
    cursors = [(s.message.get("params") or {}).get("cursor") for s in script.posts("tools/list")]
    assert cursors == [None, "2", "4"]


def test_a_lost_session_is_opened_again_without_the_old_id(script: Script) -> None:
    with box(script) as client:
        client.call("who_am_i", {})
        script.session = "sess-0002"
        script.hook = lambda s: (
            (404, {}, b"") if s.headers.get("mcp-session-id") == "sess-0001" and s.method == "POST" else None
        )
        assert client.call("who_am_i", {}) == USER
    inits = script.posts("initialize")
    assert len(inits) == 2 and "mcp-session-id" not in inits[1].headers
    assert script.posts("tools/call")[-1].headers["mcp-session-id"] == "sess-0002"


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_every_handshake_version_is_spoken(script: Script, version: str) -> None:
    script.version = version
    with box(script) as client:
        assert client.protocol_version == version
        client.call("who_am_i", {})
    assert script.posts("tools/call")[0].headers["mcp-protocol-version"] == version


def test_an_unknown_protocol_version_is_refused(script: Script) -> None:
    script.version = "2030-01-01"
    with pytest.raises(BackendUnavailable, match=r"protocol version '2030-01-01'.*2025-11-25"):
        box(script).open()


# --- SSE answers ---------------------------------------------------------------------------------


def _on_call(answer: Callable[[Any], Answer]) -> Callable[[Seen], Answer | None]:
    return lambda s: answer(s.message["id"]) if _method(s) == "tools/call" else None


def test_sse_answer_after_notifications_and_server_requests(script: Script) -> None:
    script.hook = _on_call(
        lambda rid: as_sse(
            ": a comment line\n\n",
            "id: ev-0\ndata:\n\n",  # a priming event: an id, no data
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}},
            {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"},
            {"jsonrpc": "2.0", "id": "srv-2", "method": "sampling/createMessage", "params": {}},
            {"jsonrpc": "2.0", "id": rid + 1000, "result": {"content": []}},  # another request's
            rpc_result(rid, tool_result(USER)),
        )
    )
    with box(script) as client:
        assert client.call("who_am_i", {}) == USER
    answers = {s.message["id"]: s.message for s in script.posts() if "method" not in s.message}
    assert answers["srv-1"]["result"] == {}
    assert answers["srv-2"]["error"]["code"] == -32601
    assert all(
        s.headers["mcp-session-id"] == "sess-0001" for s in script.posts() if "method" not in s.message
    )


def test_sse_events_split_over_lines_and_pieces_and_a_json_batch(script: Script) -> None:
    def answer(rid: int) -> Answer:
        if rid % 2:
            return as_json(
                [{"jsonrpc": "2.0", "method": "notifications/message"}, rpc_result(rid, tool_result(USER))]
            )
        text = json.dumps(rpc_result(rid, tool_result(USER)))
        cut = text.index(", ") + 1  # two data lines, joined by a newline: still the same JSON
        body = f"event: message\ndata: {text[:cut]}\ndata: {text[cut + 1 :]}\n\n".encode()
        return 200, {"content-type": "text/event-stream"}, [body[:7], body[7:40], body[40:]]

    script.hook = _on_call(answer)
    with box(script) as client:
        assert [client.call("who_am_i", {}) for _ in range(4)] == [USER] * 4


def test_a_stream_that_ends_early_is_resumed_with_last_event_id(script: Script) -> None:
    pending: list[int] = []

    def hook(s: Seen) -> Answer | None:
        if _method(s) == "tools/call":
            pending.append(s.message["id"])
            return as_sse("id: ev-1\nretry: 5\ndata:\n\n")  # primed, then the connection closes
        if s.method == "GET":
            return as_sse(f"id: ev-2\ndata: {json.dumps(rpc_result(pending[-1], tool_result(USER)))}\n\n")
        return None

    script.hook = hook
    with box(script) as client:
        assert client.call("who_am_i", {}) == USER
        assert client.call_count == 1
    get = next(s for s in script.seen if s.method == "GET")
    assert get.headers["last-event-id"] == "ev-1"
    assert get.headers["accept"] == "text/event-stream"
    assert get.headers["mcp-session-id"] == "sess-0001"


def test_a_stream_without_the_answer_is_retried(script: Script) -> None:
    calls = []

    def hook(s: Seen) -> Answer | None:
        if _method(s) != "tools/call":
            return None
        calls.append(s)
        if len(calls) == 1:
            return as_sse({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
        return as_sse(rpc_result(s.message["id"], tool_result(USER)))

    script.hook = hook
    delays: list[float] = []
    with box(script, delays) as client:
        assert client.call("who_am_i", {}) == USER
        assert client.call_count == 2
    assert len(delays) == 1


# --- what is not MCP, and errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda rid: as_json(rpc_result(rid, {"content": "text"})), r"result\.content: expected list"),
        (
            lambda rid: as_json(rpc_result(rid, {"content": [{"type": "video", "url": "x"}]})),
            r"unknown content block type 'video'",
        ),
        (
            lambda rid: as_json(rpc_result(rid, {"content": [{"type": "text"}], "isError": "yes"})),
            r"content\[0\]\.text: missing; result\.isError: expected bool",
        ),
        (lambda rid: (200, {"content-type": "application/json"}, b"{not json"), r"not JSON"),
        (lambda rid: (200, {"content-type": "text/plain"}, b"hi"), r"unexpected content type 'text/plain'"),
        (lambda rid: as_json({"id": rid, "result": {}}), r"not a JSON-RPC 2\.0 message"),
        (lambda rid: as_json(rpc_result(rid + 7, tool_result(USER))), r"no response to request"),
    ],
)
def test_answers_that_are_not_mcp_are_clear_errors(script: Script, answer: Any, said: str) -> None:
    script.hook = _on_call(answer)
    with box(script) as client, pytest.raises(BoxToolError, match=said) as info:
        client.call("who_am_i", {})
    assert "Box tool who_am_i sent an answer that is not valid MCP" in str(info.value)


def test_a_tool_list_that_is_not_mcp_names_the_tool_entry(script: Script) -> None:
    script.tools = [{"name": "who_am_i"}, {"name": 5, "inputSchema": {}}]
    with pytest.raises(BoxToolError, match=r"tools\[0\]\.inputSchema: missing; result\.tools\[1\]\.name"):
        box(script).open()


def test_json_rpc_errors_map_to_the_projects_errors(script: Script) -> None:
    messages = {"who_am_i": "Unknown tool: who_am_i", "get_file_details": "Invalid arguments: file_id"}
    script.hook = _on_call(
        lambda rid: as_json(
            {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": messages[current[0]]}}
        )
    )
    current = ["who_am_i"]
    with box(script) as client:
        with pytest.raises(ToolMissing, match="who_am_i"):
            client.call("who_am_i", {})
        current[0] = "get_file_details"
        with pytest.raises(BoxToolError, match=r"MCP error -32602: Invalid arguments: file_id"):
            client.call("get_file_details", {"file_id": "1"})
        assert client.call_count == 2  # neither is retried


def test_http_errors_use_status_and_retry_after(script: Script) -> None:
    statuses = iter([(429, {"retry-after": "3"}), (503, {}), (400, {})])

    def hook(s: Seen) -> Answer | None:
        if _method(s) != "tools/call":
            return None
        status, headers = next(statuses)
        if status == 400:
            error = {"code": -32600, "message": "Bad Request: no such thing"}
            return as_json({"jsonrpc": "2.0", "id": None, "error": error}, status=400)
        return status, {"content-type": "application/json", **headers}, b'{"type":"error"}'

    script.hook = hook
    delays: list[float] = []
    with box(script, delays) as client, pytest.raises(BackendUnavailable) as info:
        client.call("who_am_i", {})
    assert delays[0] == 3.0 and len(delays) == 2  # Retry-After honoured, then back-off for the 503
    assert str(info.value).endswith("answered HTTP 400: Bad Request: no such thing")


def test_a_server_request_answered_202_is_an_error(script: Script) -> None:
    script.hook = lambda s: (202, {}, b"") if _method(s) == "tools/call" else None
    with box(script) as client, pytest.raises(BoxToolError, match="202 Accepted"):
        client.call("who_am_i", {})


def test_redirects_on_the_same_origin_are_followed(script: Script) -> None:
    script.hook = lambda s: (
        (307, {"location": "/mcp"}, b"") if _method(s) == "tools/call" and s.path == "/" else None
    )
    with box(script) as client:
        assert client.call("who_am_i", {}) == USER
        assert [s.path for s in script.posts("tools/call")] == ["/", "/mcp"]
        script.hook = lambda s: (
            (308, {"location": "http://example.invalid/"}, b"") if _method(s) == "tools/call" else None
        )
        with pytest.raises(
            BoxToolError, match=r"redirect \(HTTP 308\) to http://example\.invalid/ not followed"
        ):
            client.call("who_am_i", {})


def test_output_schema_is_checked(script: Script) -> None:
    script.tools = [
        {
            **TOOLS[0],
            "outputSchema": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
        }
    ]
    script.hook = _on_call(lambda rid: as_json(rpc_result(rid, tool_result({"id": 7}))))
    with box(script) as client, pytest.raises(BoxToolError, match=r"does not match its output schema"):
        client.call("who_am_i", {})


# --- the emulator: SSE answers, sessions, a paged catalogue --------------------------------------


@pytest.fixture(scope="module")
def sse_emu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    root = tmp_path_factory.mktemp("wire") / "box"
    root.mkdir()
    (root / "a.md").write_text("# a\nbody\n", encoding="utf-8")
    with running_emulator(root, token=TOKEN, responses="sse", sessions="stateful", tool_page=4) as emu:
        yield emu


def test_the_emulator_over_sse_with_sessions_and_tool_pages(sse_emu: Emulator) -> None:
    sse_emu.reset_calls()
    with BoxMCPClient(sse_emu.url, TOKEN, timeout=5.0, catalogue_cache=False) as client:
        assert client.has_tool("who_am_i") and client.has_tool("upload_file")
        assert client.call("who_am_i", {})["type"] == "user"
        file_id = sse_emu.fs.id_for_path("a.md")
        assert client.call_text("get_file_content", {"file_id": file_id}) == "# a\nbody\n"
        pages = sse_emu.counters["rpc:tools/list"]
    assert pages == -(-len(client.tools) // 4) > 1


def test_the_emulator_session_lost_on_restart_over_sse(sse_emu: Emulator, tmp_path: Path) -> None:
    with BoxMCPClient(sse_emu.url, TOKEN, timeout=5.0, catalogue_cache=False) as client:
        assert client.call("who_am_i", {})["type"] == "user"
        sse_emu.stop()
        sse_emu.start()  # a stateful server forgets its sessions
        assert client.call("who_am_i", {})["type"] == "user"


def test_a_plain_http_endpoint_loads_no_ca_certificates_but_still_verifies() -> None:
    """Loading the CA bundle cost a local command tens of milliseconds; an http endpoint never
    needs it (redirects stay on its origin), and the bare context would still refuse a TLS peer."""
    import ssl

    from box_memory.box.mcp_http import McpHttp

    def context(url: str) -> ssl.SSLContext:
        wire = McpHttp(url, headers={}, timeout=1.0, request_timeout=None, client_info={})
        return wire.http._transport._pool._ssl_context  # type: ignore[attr-defined,no-any-return]

    bare = context("http://127.0.0.1:1/")
    assert bare.cert_store_stats()["x509_ca"] == 0
    assert (bare.verify_mode, bare.check_hostname) == (ssl.CERT_REQUIRED, True)
    assert context("https://mcp.box.com/").cert_store_stats()["x509_ca"] > 0


def test_answers_are_read_by_orjson_and_what_it_refuses_by_the_stdlib() -> None:
    import math

    import pytest

    from box_memory.box.mcp_http import loads

    assert loads(b'{"id": 1722847777449, "x": [1, "a"]}') == {"id": 1722847777449, "x": [1, "a"]}
    assert math.isnan(loads('{"score": NaN}')["score"])
    assert loads(b'{"a": "\\u00e9"}') == {"a": "\u00e9"}
    with pytest.raises(ValueError):
        loads(b"<html>not json</html>")
