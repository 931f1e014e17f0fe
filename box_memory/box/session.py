"""The Box MCP client's session: the task group it lives in, one MCP session over the recording
HTTP client (transport.py), connected and reconnected when it breaks, and the tool catalogue
loaded (or taken from the on-disk cache, catalogue.py)."""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import anyio.abc
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from box_memory import __version__
from box_memory.box.base import Connection
from box_memory.box.catalogue import read_catalogue, write_catalogue
from box_memory.box.retry import Retrying, Transient
from box_memory.box.transport import EXCHANGE, Exchange, RecordingTransport

__all__ = ["Session"]


class Session(Retrying):
    """The MCP session and its catalogue over the client's retry policy."""

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

    async def _stop_connection(self, conn: Connection) -> None:
        conn.stop.set()
        with anyio.move_on_after(self.timeout + 2):
            await conn.done.wait()

    async def _session(self, exchange: Exchange, *, task_status: anyio.abc.TaskStatus[Connection]) -> None:
        """Run one MCP session until told to stop; report connect failures to `start()`'s caller."""
        EXCHANGE.set(exchange)  # the connect requests (discover/initialize) record here
        transport = RecordingTransport(httpx2.AsyncHTTPTransport())
        http = httpx2.AsyncClient(
            transport=transport,
            headers={
                "Authorization": f"Bearer {self._token}",
                "User-Agent": f"box-memory/{__version__}",
            },
            timeout=httpx2.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
        )
        conn: Connection | None = None
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
                conn = Connection(client=client, http=http, stop=anyio.Event(), done=anyio.Event())
                task_status.started(conn)
                await conn.stop.wait()
        except Exception as exc:
            if conn is None:
                raise  # before started(): start() re-raises it in the connecting task
            conn.dead = exc  # after started(): the session broke; the next call reconnects
        finally:
            if conn is not None:
                conn.done.set()

    async def _aopen(self) -> None:
        await self._reconnect(None)
        cached = read_catalogue(self.url, self._token) if self.catalogue_cache else None
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
        exchange = Exchange()
        try:
            conn: Connection = await self._tg.start(self._session, exchange)
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

    async def _reconnect(self, broken: Connection | None) -> Connection:
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

    async def _live(self) -> Connection:
        conn = self._conn
        if conn is None or conn.dead is not None:
            conn = await self._reconnect(conn)
        return conn

    async def _load_catalogue(self) -> None:
        async def list_all() -> dict[str, dict[str, Any]]:
            conn = await self._live()
            exchange = Exchange()
            token = EXCHANGE.set(exchange)
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
                if isinstance(problem, Transient) and problem.reconnect:
                    conn.dead = conn.dead or exc
                raise problem from None
            finally:
                EXCHANGE.reset(token)
            return tools

        self.tools = await self._retrying(list_all, retries=self.max_retries)
        self.catalogue_cached = False
        if self.catalogue_cache and self.tools:
            write_catalogue(self.url, self._token, self.tools)

    def _absorb(self, conn: Connection | None) -> None:
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
