"""The Box MCP client's session: one MCP session over streamable HTTP (mcp_http.py), connected and
reconnected when it breaks, and the tool catalogue loaded (or taken from the on-disk cache,
catalogue.py)."""

from __future__ import annotations

from typing import Any

import anyio

from box_memory import __version__
from box_memory.box.base import Connection
from box_memory.box.catalogue import read_catalogue, write_catalogue
from box_memory.box.mcp_http import McpHttp
from box_memory.box.retry import Retrying, Transient
from box_memory.box.transport import Exchange

__all__ = ["Session"]

MAX_TOOL_PAGES = 50


class Session(Retrying):
    """The MCP session and its catalogue over the client's retry policy."""

    async def _aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._stop_connection(conn)

    async def _stop_connection(self, conn: Connection) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeout + 2):
            await conn.client.aclose()

    def _wire(self) -> McpHttp:
        return McpHttp(
            self.url,
            headers={"Authorization": f"Bearer {self._token}", "User-Agent": f"box-memory/{__version__}"},
            timeout=self.timeout,
            request_timeout=self.timeout * 2 + 5,
            client_info={"name": "box-memory", "version": __version__},
        )

    async def _aopen(self) -> None:
        self._conn_lock = anyio.Lock()
        self._refresh_lock = anyio.Lock()
        await self._reconnect(None)
        cached = read_catalogue(self.url, self._token) if self.catalogue_cache else None
        if cached:
            self.tools, self.catalogue_cached = cached, True
            return
        await self._load_catalogue()
        if not self.tools:  # a server that is still starting may list nothing: reconnect once
            await self._reconnect(self._conn)
            await self._load_catalogue()

    async def _connect_once(self) -> None:
        exchange = Exchange()
        wire = self._wire()
        try:
            await wire.initialize(exchange)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await wire.aclose()
            if isinstance(exc, Exception):
                raise self._classify_failure(exchange, exc, tool=None, established=False) from None
            raise
        self._conn = Connection(client=wire)
        self.protocol_version = wire.protocol_version
        name = wire.server_info.get("name")
        self.server_name = name if isinstance(name, str) else None

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
            tools: dict[str, dict[str, Any]] = {}
            cursor: str | None = None
            try:
                for _ in range(MAX_TOOL_PAGES):
                    page, cursor = await conn.client.list_tools(cursor, exchange)
                    for tool in page:
                        tools[tool["name"]] = tool
                    if not cursor:
                        break
            except Exception as exc:
                problem = self._classify_failure(exchange, exc, tool=None)
                if isinstance(problem, Transient) and problem.reconnect:
                    conn.dead = conn.dead or exc
                raise problem from None
            return tools

        self.tools = await self._retrying(list_all, retries=self.max_retries)
        self.catalogue_cached = False
        if self.catalogue_cache and self.tools:
            write_catalogue(self.url, self._token, self.tools)

    async def _revalidate(self) -> bool:
        """Re-read a cached catalogue from the server (a call met an unknown tool or a schema
        error); True when it was cached, so the call is worth one more try."""
        if not self.catalogue_cached:
            return False
        await self._load_catalogue()
        return True
