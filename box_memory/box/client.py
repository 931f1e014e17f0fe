"""The Box MCP client: the one module that talks to the network.

A synchronous facade (the CLI is synchronous) over the async `mcp.Client` with the streamable
HTTP transport, kept open for the lifetime of one command inside a blocking portal thread.

How HTTP problems reach us: mcp 2.3's streamable HTTP transport reduces every HTTP status >= 400 to
one `MCPError("Server returned an error response")` and lets a transport exception (connection
refused, read timeout) escape its task group, which tears the whole session down. So the
`httpx2.AsyncClient` we hand to the SDK gets a recording transport: it stores the status, headers
or transport exception of each MCP POST in an `_Exchange` that the calling task put in a context
variable (the SDK runs each request's POST in a copy of the sender's context), and it turns a
transport exception into a synthetic 599 answer so that only that request fails, not the session.
The call then reads the `_Exchange` to decide: refresh the token (401), back off (429 + Retry-After,
5xx, transport errors) or give up with a typed error.

The deadline: a client carries one command's budget (`deadline_s`, default
`BOX_MEMORY_DEADLINE_S`, counted from when the client is made; one client serves one command).
Every call runs inside it, retries and their waits included; a Retry-After longer than what is
left ends the call at once, naming the wait. Calls made after it has passed (a command putting
things back: releasing its lock) share one short grace period, then fail at once. Runs long by
design (brain-sync) pass `deadline_s=None`.
"""

from __future__ import annotations

import contextlib
import errno
import inspect
import logging
import math
import os
import random
import re
import socket
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.abc
import anyio.to_thread
import httpx2
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, Implementation
from pydantic import ValidationError

from box_memory import __version__, settings
from box_memory.box.payload import tool_error, unwrap, unwrap_text
from box_memory.box.schema import shape_args
from box_memory.errors import (
    AuthError,
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    Incompatible,
    ToolDisabled,
    ToolMissing,
)
from box_memory.redaction import redact

__all__ = [
    "DEFAULT_URL",
    "OPTIONAL_TOOLS",
    "READ_TOOLS",
    "REQUIRED_TOOLS",
    "BoxMCPClient",
    "StaticToken",
    "TokenSource",
    "default_url",
    "redact",
]

DEFAULT_URL = settings.DEFAULT_MCP_URL
REQUIRED_TOOLS = (
    "list_folder_content_by_folder_id",
    "get_file_content",
    "get_file_details",
    "upload_file",
    "upload_file_version",
    "create_folder",
    "move_file",
    "who_am_i",
)
OPTIONAL_TOOLS = (
    "search_files_keyword",
    "get_download_url",
    "ai_qa_single_file",
    "set_file_metadata",
    "create_metadata_template",
    "list_metadata_templates",
    "get_folder_details",
)
READ_TOOLS = frozenset(
    {
        "list_folder_content_by_folder_id",
        "get_file_content",
        "get_file_details",
        "get_folder_details",
        "ai_qa_single_file",
        "who_am_i",
    }
)
"""The tools brain-sync may call (its read-only allowlist, spec brain-sync.md)."""

REQUEST_TIMEOUT_CODE = -32001  # JSON-RPC code the SDK uses when its own read timeout fires
_SYNTHETIC_STATUS = 599  # what the recording transport answers in place of a transport exception
_AUTH_HINT = "Box rejected the access token (401) - run `box-memory auth login`"

# The SDK logs transport hiccups we already turn into typed errors; without a handler Python's
# last-resort handler would print them (with tracebacks) on a CLI's stderr.
logging.getLogger("mcp").addHandler(logging.NullHandler())


# ---------------------------------------------------------------------------------------------
# Tokens and redaction


@runtime_checkable
class TokenSource(Protocol):
    """Where the bearer token comes from; `refresh()` is called once after a 401."""

    def access_token(self) -> str: ...

    def refresh(self) -> str: ...


class StaticToken:
    """A plain token string: nothing to refresh, so a 401 is final."""

    def __init__(self, token: str) -> None:
        self._token = token

    def access_token(self) -> str:
        return self._token

    def refresh(self) -> str:
        raise AuthError(_AUTH_HINT)

    def __repr__(self) -> str:
        return "StaticToken(***)"


def default_url() -> str:
    """`BOX_MCP_URL` when set (the emulator, a proxy), else Box's hosted server."""
    return settings.mcp_url()


# ---------------------------------------------------------------------------------------------
# HTTP recording


@dataclass
class _Exchange:
    """What the HTTP layer saw for the MCP request(s) of one attempt."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    error: BaseException | None = None

    def retry_after(self, cap: float) -> float | None:
        return _retry_after_seconds(self.headers.get("retry-after"), cap)


_EXCHANGE: ContextVar[_Exchange | None] = ContextVar("box_mcp_exchange", default=None)


class _RecordingStream(httpx2.AsyncByteStream):
    """Response body that records a mid-body transport failure and ends the body instead."""

    def __init__(self, inner: httpx2.AsyncByteStream, exchange: _Exchange | None) -> None:
        self._inner = inner
        self._exchange = exchange

    async def __aiter__(self) -> Any:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.TransportError as exc:
            if self._exchange is not None:
                self._exchange.error = exc
            # Ending the body makes the SDK fail this one request (parse error / stream ended)
            # rather than crash the session's task group.

    async def aclose(self) -> None:
        with contextlib.suppress(httpx2.TransportError):
            await self._inner.aclose()


class _RecordingTransport(httpx2.AsyncBaseTransport):
    """Records status/headers/transport errors of MCP POSTs into the caller's `_Exchange`."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        exchange = _EXCHANGE.get() if request.method == "POST" else None
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as exc:
            if exchange is not None:
                exchange.error = exc
            return httpx2.Response(_SYNTHETIC_STATUS, request=request)
        if exchange is not None:
            exchange.status = response.status_code
            exchange.headers = {k.lower(): v for k, v in response.headers.items()}
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _RecordingStream(response.stream, exchange)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _retry_after_seconds(value: Any, cap: float) -> float | None:
    """Retry-After as seconds (number or HTTP date), capped; None when absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    seconds: float | None = None
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                seconds = parsedate_to_datetime(text).timestamp() - time.time()
            except (TypeError, ValueError, IndexError, OverflowError):
                return None
    if math.isnan(seconds):
        return None
    return max(0.0, min(seconds, cap))


def _body_retry_after(body: Any, cap: float) -> float | None:
    """A retry hint inside a relayed Box error body (some relays copy the header into it)."""
    if not isinstance(body, dict):
        return None
    for key in ("retry_after", "retry-after", "retryAfter"):
        if key in body:
            return _retry_after_seconds(body[key], cap)
    info = body.get("context_info")
    return _body_retry_after(info, cap) if isinstance(info, dict) else None


def _transport_reason(exc: BaseException, timeout: float) -> str:
    """A short human reason for a transport failure (walks the cause chain for the OS error)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    for item in chain:
        if isinstance(item, ConnectionRefusedError) or getattr(item, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(item, socket.gaierror):
            return "host name not found"
        if isinstance(item, ConnectionResetError):
            return "connection reset"
    if isinstance(exc, httpx2.ConnectTimeout):
        return f"connection timed out after {timeout:g} s"
    if isinstance(exc, httpx2.ReadTimeout | httpx2.WriteTimeout | httpx2.PoolTimeout | TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(exc, httpx2.ConnectError):
        text = str(exc).lower()
        if "refused" in text or "all connection attempts failed" in text:
            return "connection refused"
        if "name" in text and ("resolve" in text or "known" in text):
            return "host name not found"
        return "could not connect"
    if isinstance(exc, httpx2.RemoteProtocolError | httpx2.ReadError):
        return "connection dropped"
    return type(exc).__name__


# ---------------------------------------------------------------------------------------------
# Outcomes of one attempt (internal)


class _Transient(Exception):
    """Worth another attempt; `final` is raised when attempts run out. `retry_after` is the wait
    the server asked for, uncapped (the back-off caps the sleep)."""

    def __init__(self, final: BoxMemoryError, *, retry_after: float | None = None, reconnect: bool = False):
        super().__init__(str(final))
        self.final = final
        self.retry_after = retry_after
        self.reconnect = reconnect


class _Unauthorized(Exception):
    """HTTP 401 (or a relayed Box 401): refresh the token once, then retry once."""


@dataclass
class _Connection:
    """One live MCP session, owned by its own task (anyio scopes must exit where they were entered)."""

    client: Client
    http: httpx2.AsyncClient
    stop: anyio.Event
    done: anyio.Event
    dead: BaseException | None = None


SleepFn = Callable[[float], Awaitable[None] | None]


class _Unset:
    """The default of `deadline_s`: read `BOX_MEMORY_DEADLINE_S`."""


_UNSET = _Unset()
GRACE_CAP_S = 10.0  # calls made after the deadline (putting things back) share at most this long


class BoxMCPClient:
    """One MCP session per command, with typed errors, retries and token refresh.

    Use as a context manager::

        with BoxMCPClient(url, token_source) as box:
            page = box.call("list_folder_content_by_folder_id", {"folder_id": "0"})
    """

    def __init__(
        self,
        url: str | None = None,
        token_source: TokenSource | str | None = None,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        connect_retries: int = 1,
        backoff_base: float = 0.5,
        backoff_cap: float = 10.0,
        retry_after_cap: float = 30.0,
        max_wait: float = 120.0,
        sleep: SleepFn | None = None,
        rng: random.Random | None = None,
        catalogue_cache: bool = True,
        deadline_s: float | _Unset | None = _UNSET,
    ) -> None:
        self.url = url or default_url()
        if isinstance(deadline_s, _Unset):
            deadline_s = settings.deadline_s()
        self.deadline_s = deadline_s if deadline_s is None or deadline_s > 0 else None
        self._deadline_at = None if self.deadline_s is None else time.monotonic() + self.deadline_s
        if token_source is None:
            raise AuthError("no Box access token - run `box-memory auth login`")
        self._source: TokenSource = (
            StaticToken(token_source) if isinstance(token_source, str) else token_source
        )
        self._static = isinstance(self._source, StaticToken)
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries))
        self.connect_retries = max(0, min(int(connect_retries), self.max_retries))
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.retry_after_cap = retry_after_cap
        self.max_wait = max_wait
        self._sleep_fn = sleep
        self._rng = rng or random.Random()
        self.tools: dict[str, dict[str, Any]] = {}
        self.catalogue_cached = False  # self.tools came from the on-disk catalogue cache
        self.catalogue_cache = catalogue_cache and settings.catalogue_cache()
        self.allowed_tools: set[str] | frozenset[str] | None = None
        self.call_count = 0
        self.server_name: str | None = None
        self.protocol_version: str | None = None
        self._token = ""
        self._secrets: set[str] = set()
        self._portal: BlockingPortal | None = None
        self._portal_cm: Any = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._supervisor_stop: anyio.Event | None = None
        self._supervisor_future: Any = None
        self._conn: _Connection | None = None
        self._conn_lock: anyio.Lock | None = None
        self._refresh_lock: anyio.Lock | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def __enter__(self) -> BoxMCPClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Connect, authenticate and fetch the tool catalogue (raises typed errors, exit 4)."""
        try:
            self._token = self._source.access_token()
        except BoxMemoryError as exc:
            raise self._public(exc) from None
        except Exception as exc:
            raise self._public(AuthError(f"could not get a Box access token: {exc}")) from None
        if not self._token:
            raise AuthError("no Box access token - run `box-memory auth login`")
        self._secrets.add(self._token)
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._supervisor_future, _ = self._portal.start_task(self._supervise)
            self._portal.call(self._bounded, self._aopen)
        except BoxMemoryError as exc:
            self.close()
            raise self._public(exc) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the session and the portal thread; safe to call twice."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        try:
            with contextlib.suppress(Exception):
                portal.call(self._aclose)
            if self._supervisor_future is not None:
                with contextlib.suppress(Exception):
                    self._supervisor_future.result(timeout=self.timeout + 5)
        finally:
            cm, self._portal_cm = self._portal_cm, None
            if cm is not None:
                with contextlib.suppress(Exception):
                    cm.__exit__(None, None, None)

    # -- public calls -------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._portal is not None

    def has_tool(self, name: str) -> bool:
        return name in self.tools

    def reload_catalogue(self) -> None:
        """Read the tool list from the server again, past the on-disk cache (a plan change)."""
        self._run(self._load_catalogue)

    def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Call a tool; returns the unwrapped payload (dict/list, or str for plain text)."""
        return self._run(self._acall, name, args or {}, unwrap)

    def call_text(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Call a tool whose answer is a document's text (`get_file_content`), returned verbatim."""
        result: str = self._run(self._acall, name, args or {}, unwrap_text)
        return result

    def call_many(
        self, calls: Iterable[tuple[str, dict[str, Any] | None]], *, concurrency: int = 4
    ) -> list[Any]:
        """Run calls concurrently (at most `concurrency` in flight); results in order, errors as values."""
        batch = [(name, args or {}) for name, args in calls]
        if not batch:
            return []
        result: list[Any] = self._run(self._acall_many, batch, max(1, int(concurrency)))
        return result

    # -- internals: sync/async bridge ---------------------------------------------------------

    def _run(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        if self._portal is None:
            raise BackendUnavailable("Box MCP client is not open (use it as a context manager)")
        try:
            return self._portal.call(self._bounded, func, *args)
        except BoxMemoryError as exc:
            raise self._public(exc) from None

    # -- internals: the command's deadline ----------------------------------------------------

    def _end(self) -> float | None:
        """When the running call must end (monotonic): the deadline, or once that has passed, the
        end of the grace period after it; None without a deadline."""
        if self._deadline_at is None or self.deadline_s is None:
            return None
        if time.monotonic() < self._deadline_at:
            return self._deadline_at
        return self._deadline_at + min(GRACE_CAP_S, self.timeout, max(2.0, self.deadline_s / 4))

    def _left(self) -> float:
        """Seconds until the running call must end (inf without a deadline)."""
        end = self._end()
        return math.inf if end is None else end - time.monotonic()

    def _deadline_error(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"Box MCP server at {self.url}: this command's Box calls did not finish within its "
            f"{self.deadline_s:g} s deadline (BOX_MEMORY_DEADLINE_S; 0 for none)",
            code="deadline_exceeded",
        )

    def _wait_refused(self, problem: _Transient, asked: float, left: float, waited: float) -> BoxMemoryError:
        """The error for a server that asks for a longer wait (Retry-After) than the call has."""
        what = str(problem.final).removesuffix("; try again later")
        if asked > left:
            budget = (
                f"more than the {max(0.0, left):.0f} s left of this command's {self.deadline_s:g} s "
                "deadline (BOX_MEMORY_DEADLINE_S)"
            )
        else:
            budget = f"more than the {max(0.0, self.max_wait - waited):.0f} s one call may wait"
        return BackendUnavailable(
            f"{what} and asks to wait {asked:.0f} s (Retry-After), {budget}; try again later",
            code="rate_limited",
        )

    async def _bounded(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Run one public call inside the command's deadline."""
        end = self._end()
        if end is None:
            return await func(*args)
        left = end - time.monotonic()
        if left <= 0:
            raise self._deadline_error()
        with anyio.move_on_after(left):
            return await func(*args)
        raise self._deadline_error()

    def _public(self, exc: BoxMemoryError) -> BoxMemoryError:
        """The same error with its message redacted to one line (tokens never reach a terminal)."""
        exc.args = (redact(str(exc), self._token, *self._secrets),)
        return exc

    async def _sleep(self, seconds: float) -> None:
        if self._sleep_fn is None:
            await anyio.sleep(seconds)
            return
        outcome = self._sleep_fn(seconds)
        if inspect.isawaitable(outcome):
            await outcome

    async def _supervise(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Own the task group that session tasks live in, for the client's lifetime."""
        self._supervisor_stop = anyio.Event()
        self._conn_lock = anyio.Lock()
        self._refresh_lock = anyio.Lock()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await self._supervisor_stop.wait()
            tg.cancel_scope.cancel()

    async def _aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._stop_connection(conn)
        if self._supervisor_stop is not None:
            self._supervisor_stop.set()

    async def _stop_connection(self, conn: _Connection) -> None:
        conn.stop.set()
        with anyio.move_on_after(self.timeout + 2):
            await conn.done.wait()

    async def _session(self, exchange: _Exchange, *, task_status: anyio.abc.TaskStatus[_Connection]) -> None:
        """Run one MCP session until told to stop; report connect failures to `start()`'s caller."""
        _EXCHANGE.set(exchange)  # the connect requests (discover/initialize) record here
        transport = _RecordingTransport(httpx2.AsyncHTTPTransport())
        http = httpx2.AsyncClient(
            transport=transport,
            headers={
                "Authorization": f"Bearer {self._token}",
                "User-Agent": f"box-memory/{__version__}",
            },
            timeout=httpx2.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
        )
        conn: _Connection | None = None
        try:
            async with (
                http,
                Client(
                    streamable_http_client(self.url, http_client=http),
                    read_timeout_seconds=self.timeout * 2 + 5,
                    client_info=Implementation(name="box-memory", version=__version__),
                    cache=None,
                ) as client,
            ):
                conn = _Connection(client=client, http=http, stop=anyio.Event(), done=anyio.Event())
                task_status.started(conn)
                await conn.stop.wait()
        except Exception as exc:
            if conn is None:
                raise  # before started(): start() re-raises it in the connecting task
            conn.dead = exc  # after started(): the session broke; the next call reconnects
        finally:
            if conn is not None:
                conn.done.set()

    # -- internals: connecting ----------------------------------------------------------------

    async def _aopen(self) -> None:
        await self._reconnect(None)
        cached = _read_catalogue(self.url, self._token) if self.catalogue_cache else None
        if cached:
            self.tools, self.catalogue_cached = cached, True
            self._absorb(self._conn)
            return
        await self._load_catalogue()
        if not self.tools:  # a server that is still starting may list nothing: reconnect once
            await self._reconnect(self._conn)
            await self._load_catalogue()

    async def _connect_once(self) -> None:
        assert self._tg is not None
        exchange = _Exchange()
        try:
            conn: _Connection = await self._tg.start(self._session, exchange)
        except Exception as exc:
            raise self._classify_failure(exchange, exc, tool=None, established=False) from None
        self._conn = conn
        if self.catalogue_cached:
            self._absorb(conn)
        try:
            self.protocol_version = conn.client.protocol_version
            info = conn.client.server_info
            self.server_name = info.name if info is not None else None
        except Exception:  # informational only
            self.protocol_version = self.protocol_version or None

    async def _reconnect(self, broken: _Connection | None) -> _Connection:
        """(Re)open the session unless another task already replaced `broken`."""
        assert self._conn_lock is not None
        async with self._conn_lock:
            if self._conn is not None and self._conn is not broken and self._conn.dead is None:
                return self._conn
            old, self._conn = self._conn, None
            if old is not None:
                await self._stop_connection(old)
            await self._retrying(self._connect_once, retries=self.connect_retries)
            assert self._conn is not None
            return self._conn

    async def _live(self) -> _Connection:
        conn = self._conn
        if conn is None or conn.dead is not None:
            conn = await self._reconnect(conn)
        return conn

    async def _load_catalogue(self) -> None:
        async def list_all() -> dict[str, dict[str, Any]]:
            conn = await self._live()
            exchange = _Exchange()
            token = _EXCHANGE.set(exchange)
            tools: dict[str, dict[str, Any]] = {}
            cursor: str | None = None
            try:
                for _ in range(50):
                    page = await conn.client.list_tools(cursor=cursor)
                    for tool in page.tools:
                        tools[tool.name] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                    cursor = page.next_cursor
                    if not cursor:
                        break
            except Exception as exc:
                problem = self._classify_failure(exchange, exc, tool=None)
                if isinstance(problem, _Transient) and problem.reconnect:
                    conn.dead = conn.dead or exc
                raise problem from None
            finally:
                _EXCHANGE.reset(token)
            return tools

        self.tools = await self._retrying(list_all, retries=self.max_retries)
        self.catalogue_cached = False
        if self.catalogue_cache and self.tools:
            _write_catalogue(self.url, self._token, self.tools)

    def _absorb(self, conn: _Connection | None) -> None:
        """Give the SDK session the cached catalogue, as the SDK's own response cache does
        (`ClientSession._absorb_tool_listing`); without it the session would list the tools
        itself before the first call. Where the SDK lacks the hook it lists them: correct, one
        call dearer."""
        absorb = (
            getattr(getattr(conn.client, "session", None), "_absorb_tool_listing", None) if conn else None
        )
        if absorb is None or not self.tools:
            return
        with contextlib.suppress(Exception):
            import mcp_types as types

            listed = types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in self.tools.values()])
            absorb(listed, complete=True)

    async def _revalidate(self) -> bool:
        """Re-read a cached catalogue from the server (a call met an unknown tool or a schema
        error); True when it was cached, so the call is worth one more try."""
        if not self.catalogue_cached:
            return False
        await self._load_catalogue()
        return True

    # -- internals: calling -------------------------------------------------------------------

    def _check_call(self, name: str) -> None:
        if self.allowed_tools is not None and name not in self.allowed_tools:
            raise BoxMemoryError(
                f"Box tool {name} is not allowed in this session "
                f"(allowed: {', '.join(sorted(self.allowed_tools))})",
                code="tool_not_allowed",
            )
        if name not in self.tools:
            raise ToolMissing(
                f"Box MCP server at {self.url} has no tool {name} "
                "(not offered by the server, or hidden by the enterprise admin)"
            )

    async def _acall(self, name: str, args: dict[str, Any], reader: Callable[[str, Any], Any]) -> Any:
        try:
            return await self._acall_once(name, args, reader)
        except (ToolMissing, Incompatible, BoxToolError) as exc:
            stale = isinstance(exc, ToolMissing | Incompatible) or _schema_error(exc)
            if not stale or not await self._revalidate():
                raise
            return await self._acall_once(name, args, reader)

    async def _acall_once(self, name: str, args: dict[str, Any], reader: Callable[[str, Any], Any]) -> Any:
        self._check_call(name)
        args = shape_args(name, args, self.tools[name].get("inputSchema"))

        async def attempt() -> Any:
            conn = await self._live()
            exchange = _Exchange()
            token = _EXCHANGE.set(exchange)
            self.call_count += 1
            try:
                result = await conn.client.call_tool(name, args)
            except Exception as exc:
                problem = self._classify_failure(exchange, exc, tool=name)
                if isinstance(problem, _Transient) and problem.reconnect:
                    conn.dead = conn.dead or exc
                raise problem from None
            finally:
                _EXCHANGE.reset(token)
            try:
                return reader(name, result)
            except BoxToolError as exc:
                raise self._classify_box_error(exc) from None

        try:
            return await self._retrying(attempt, retries=self.max_retries)
        except BoxMemoryError:
            raise
        except Exception as exc:  # never let an SDK surprise escape untyped
            raise BoxToolError(f"Box tool {name} failed unexpectedly: {type(exc).__name__}: {exc}") from None

    async def _acall_many(self, batch: Sequence[tuple[str, dict[str, Any]]], concurrency: int) -> list[Any]:
        results: list[Any] = [None] * len(batch)
        limiter = anyio.Semaphore(concurrency)

        async def one(index: int, name: str, args: dict[str, Any]) -> None:
            async with limiter:
                try:
                    results[index] = await self._acall(name, args, unwrap)
                except BoxMemoryError as exc:
                    results[index] = self._public(exc)

        async with anyio.create_task_group() as tg:
            for index, (name, args) in enumerate(batch):
                tg.start_soon(one, index, name, args)
        return results

    async def _retrying(self, op: Callable[[], Awaitable[Any]], *, retries: int) -> Any:
        """Run `op`, refreshing the token once on 401 and backing off on transient failures."""
        attempt = 0
        waited = 0.0
        refreshed = False
        while True:
            token_used = self._token
            try:
                return await op()
            except BoxToolError as exc:
                exc.attempts = attempt + 1
                raise
            except _Unauthorized:
                if refreshed:
                    raise AuthError(_AUTH_HINT) from None
                refreshed = True
                await self._refresh(token_used)
            except _Transient as problem:
                if isinstance(problem.final, BoxToolError):
                    problem.final.attempts = attempt + 1
                if attempt >= retries:
                    raise problem.final from None
                left = self._left()
                asked = problem.retry_after
                if asked is not None and asked > min(left, self.max_wait - waited):
                    raise self._wait_refused(problem, asked, left, waited) from None
                delay = self._backoff(attempt, asked)
                if waited + delay > self.max_wait or delay >= left:
                    raise problem.final from None
                attempt += 1
                waited += delay
                await self._sleep(delay)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Retry-After when the server sent one, else exponential back-off with full jitter."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_cap)
        ceiling = min(self.backoff_cap, self.backoff_base * (2**attempt))
        return self._rng.uniform(0, ceiling)

    async def _refresh(self, failed_token: str) -> None:
        """Refresh once for everyone: concurrent 401s share one refresh (refresh tokens are single use)."""
        assert self._refresh_lock is not None
        async with self._refresh_lock:
            if self._token != failed_token:
                return  # another task already refreshed
            if self._static:
                raise AuthError(_AUTH_HINT)
            try:
                new = await anyio.to_thread.run_sync(self._source.refresh)
            except BoxMemoryError:
                raise
            except Exception as exc:
                raise AuthError(
                    f"refreshing the Box access token failed: {exc} - run `box-memory auth login`"
                ) from None
            if not new:
                raise AuthError(_AUTH_HINT)
            self._token = new
            self._secrets.add(new)
            conn = self._conn
            if conn is not None:
                conn.http.headers["Authorization"] = f"Bearer {new}"

    # -- internals: classification ------------------------------------------------------------

    def _unreachable(self, reason: str) -> BackendUnavailable:
        return BackendUnavailable(f"Box MCP server not reachable at {self.url}: {reason}")

    def _classify_failure(
        self, exchange: _Exchange, exc: BaseException, *, tool: str | None, established: bool = True
    ) -> Exception:
        """Turn an SDK exception plus what the HTTP layer saw into _Transient/_Unauthorized/typed error."""
        if isinstance(exc, BaseExceptionGroup):
            leaves = list(_leaves(exc))
            exc = next(
                (e for e in leaves if isinstance(e, httpx2.TransportError)), leaves[0] if leaves else exc
            )
        if isinstance(exc, _Transient | _Unauthorized | BoxMemoryError):
            return exc
        if exchange.error is not None:
            return _Transient(self._unreachable(_transport_reason(exchange.error, self.timeout)))
        if isinstance(exc, httpx2.TransportError | OSError):
            return _Transient(self._unreachable(_transport_reason(exc, self.timeout)), reconnect=True)
        status = exchange.status
        if established and (
            status == 404 or (isinstance(exc, MCPError) and exc.message == "Session terminated")
        ):
            # A stateful server forgot our session (it restarted): open a new one and retry.
            return _Transient(self._unreachable("session ended by the server"), reconnect=True)
        if status is not None and status >= 400:
            return self._classify_status(status, exchange)
        what = f"Box tool {tool}" if tool else f"Box MCP server at {self.url}"
        if isinstance(exc, MCPError):
            if exc.code == REQUEST_TIMEOUT_CODE or isinstance(exc.__cause__, TimeoutError):
                return _Transient(self._unreachable(f"no answer within {self.timeout * 2 + 5:g} s"))
            if exc.code == CONNECTION_CLOSED:
                return _Transient(self._unreachable("connection closed"), reconnect=True)
            if tool is not None:
                mapped = tool_error(tool, exc.message)
                if isinstance(mapped, ToolMissing | ToolDisabled):
                    return mapped
            return BoxToolError(f"{what} failed: MCP error {exc.code}: {exc.message}")
        if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream):
            return _Transient(self._unreachable("connection closed"), reconnect=True)
        if isinstance(exc, TimeoutError):
            return _Transient(self._unreachable(f"no answer within {self.timeout:g} s"))
        if isinstance(exc, ValidationError):
            return BoxToolError(f"{what} sent an answer that is not valid MCP ({exc.error_count()} problems)")
        return BoxToolError(f"{what} failed: {type(exc).__name__}: {exc}")

    def _classify_status(self, status: int, exchange: _Exchange) -> Exception:
        if status == 401:
            return _Unauthorized()
        if status == 429:
            return _Transient(
                BackendUnavailable(f"Box MCP server at {self.url} is rate limiting (429); try again later"),
                retry_after=exchange.retry_after(math.inf),
            )
        if status >= 500:
            return _Transient(
                BackendUnavailable(f"Box MCP server at {self.url} failed (HTTP {status})"),
                retry_after=exchange.retry_after(math.inf),
            )
        if status == 403:
            return AuthError(
                f"Box MCP server at {self.url} refused access (403) - check the app's scopes and that "
                "the enterprise allows Box MCP"
            )
        if status == 404:
            return BackendUnavailable(f"no MCP endpoint at {self.url} (404) - check BOX_MCP_URL")
        return BackendUnavailable(f"Box MCP server at {self.url} answered HTTP {status}")

    def _classify_box_error(self, exc: BoxToolError) -> Exception:
        """A Box API error relayed by a tool: 401 refreshes, 429/5xx are retried, the rest is final."""
        if exc.status == 401:
            return _Unauthorized()
        if exc.status is not None and (exc.status == 429 or exc.status >= 500):
            return _Transient(exc, retry_after=_body_retry_after(exc.body, math.inf))
        return exc


def _leaves(group: BaseException) -> Iterator[BaseException]:
    if isinstance(group, BaseExceptionGroup):
        for inner in group.exceptions:
            yield from _leaves(inner)
    else:
        yield group


# ---------------------------------------------------------------------------------------------
# The catalogue cache: each session start and tools/list is a billed call under custom credentials
# (DOC2 in CONNECTORS.md), so the tool list is kept per server URL and credentials for a day and
# re-read when a call meets an unknown tool or a schema error.

CATALOGUE_TTL_S = 24 * 3600.0
_SCHEMA_ERROR_RE = re.compile(
    r"(input validation|validation error|unexpected argument|invalid (param|argument))", re.I
)


def _schema_error(exc: BaseException) -> bool:
    return (
        isinstance(exc, BoxToolError)
        and exc.status in (None, 400, 422)
        and bool(_SCHEMA_ERROR_RE.search(str(exc)))
    )


def _catalogue_file(url: str) -> Any:
    import hashlib

    from box_memory.paths import user_dirs

    key = hashlib.sha256(url.encode()).hexdigest()[:24]
    return user_dirs().cache / "catalogue" / f"{key}.json"


def _credential_key(url: str, token: str) -> str:
    import hashlib

    return hashlib.sha256(f"{url}\0{token}".encode()).hexdigest()  # the token itself is never stored


def _read_catalogue(url: str, token: str) -> dict[str, dict[str, Any]] | None:
    import json

    from box_memory.format.safeio import UnreadableFile, read_regular

    try:  # bounded, regular files only: a FIFO or /dev/zero there is a cache miss, not a hang
        data = json.loads(read_regular(_catalogue_file(url), "index").decode("utf-8"))
    except (OSError, ValueError, UnreadableFile):
        return None
    if not isinstance(data, dict) or data.get("credentials") != _credential_key(url, token):
        return None
    saved = data.get("saved_at")
    if not isinstance(saved, int | float) or not 0 <= time.time() - saved < CATALOGUE_TTL_S:
        return None
    tools = data.get("tools")
    return tools if isinstance(tools, dict) and tools else None


def _write_catalogue(url: str, token: str, tools: dict[str, dict[str, Any]]) -> None:
    import json
    import secrets

    path = _catalogue_file(url)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".tmp-{secrets.token_hex(6)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(
                {"credentials": _credential_key(url, token), "saved_at": time.time(), "tools": tools}, fh
            )
        tmp.replace(path)
