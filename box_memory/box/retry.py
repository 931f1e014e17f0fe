"""The Box MCP client's retry policy: what one attempt's failure means (retry it, refresh the token
once, or a typed error), exponential back-off with jitter or the server's Retry-After, within the
command's deadline.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import httpx2

from box_memory.box.base import ClientBase
from box_memory.box.mcp_http import (
    CONNECTION_CLOSED,
    REQUEST_TIMEOUT,
    HTTPStatusError,
    InvalidMessage,
    MCPError,
    UnsupportedVersion,
)
from box_memory.box.payload import tool_error
from box_memory.box.tokens import AUTH_HINT
from box_memory.box.transport import Exchange, body_retry_after, transport_reason
from box_memory.errors import (
    AuthError,
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    ToolDisabled,
    ToolMissing,
)

__all__ = ["Retrying", "Transient", "Unauthorized"]


class Transient(Exception):
    """Worth another attempt; `final` is raised when attempts run out. `retry_after` is the wait
    the server asked for, uncapped (the back-off caps the sleep)."""

    def __init__(self, final: BoxMemoryError, *, retry_after: float | None = None, reconnect: bool = False):
        super().__init__(str(final))
        self.final = final
        self.retry_after = retry_after
        self.reconnect = reconnect


class Unauthorized(Exception):
    """HTTP 401 (or a relayed Box 401): refresh the token once, then retry once."""


class Retrying(ClientBase):
    """Retries, token refresh and the classification of failures over the client's state."""

    def _wait_refused(self, problem: Transient, asked: float, left: float, waited: float) -> BoxMemoryError:
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
            except Unauthorized:
                if refreshed:
                    raise AuthError(AUTH_HINT) from None
                refreshed = True
                await self._refresh(token_used)
            except Transient as problem:
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
                raise AuthError(AUTH_HINT)
            try:
                new = await anyio.to_thread.run_sync(self._source.refresh)
            except BoxMemoryError:
                raise
            except Exception as exc:
                raise AuthError(
                    f"refreshing the Box access token failed: {exc} - run `box-memory auth login`"
                ) from None
            if not new:
                raise AuthError(AUTH_HINT)
            self._token = new
            self._secrets.add(new)
            conn = self._conn
            if conn is not None:
                conn.client.http.headers["Authorization"] = f"Bearer {new}"

    def _unreachable(self, reason: str) -> BackendUnavailable:
        return BackendUnavailable(f"Box MCP server not reachable at {self.url}: {reason}")

    def _classify_failure(
        self, exchange: Exchange, exc: BaseException, *, tool: str | None, established: bool = True
    ) -> Exception:
        """Turn a failure of the wire (mcp_http.py) plus what the HTTP layer saw into
        Transient/Unauthorized/typed error."""
        if isinstance(exc, Transient | Unauthorized | BoxMemoryError):
            return exc
        if exchange.error is not None:
            return Transient(self._unreachable(transport_reason(exchange.error, self.timeout)))
        if isinstance(exc, httpx2.TransportError | OSError):
            return Transient(self._unreachable(transport_reason(exc, self.timeout)), reconnect=True)
        status = exchange.status
        if established and (
            status == 404 or (isinstance(exc, MCPError) and exc.message == "Session terminated")
        ):
            # A stateful server forgot our session (it restarted): open a new one and retry.
            return Transient(self._unreachable("session ended by the server"), reconnect=True)
        if status is not None and status >= 400:
            detail = exc.detail if isinstance(exc, HTTPStatusError) else None
            return self._classify_status(status, exchange, detail)
        what = f"Box tool {tool}" if tool else f"Box MCP server at {self.url}"
        if isinstance(exc, MCPError):
            if exc.code == REQUEST_TIMEOUT:
                return Transient(self._unreachable(f"no answer within {self.timeout * 2 + 5:g} s"))
            if exc.code == CONNECTION_CLOSED:
                return Transient(self._unreachable("connection closed"), reconnect=True)
            if tool is not None:
                mapped = tool_error(tool, exc.message)
                if isinstance(mapped, ToolMissing | ToolDisabled):
                    return mapped
            return BoxToolError(f"{what} failed: MCP error {exc.code}: {exc.message}")
        if isinstance(exc, UnsupportedVersion):
            return BackendUnavailable(f"Box MCP server at {self.url} cannot be used: {exc}")
        if isinstance(exc, InvalidMessage):
            return BoxToolError(f"{what} sent an answer that is not valid MCP ({exc})")
        if isinstance(exc, TimeoutError):
            return Transient(self._unreachable(f"no answer within {self.timeout:g} s"))
        return BoxToolError(f"{what} failed: {type(exc).__name__}: {exc}")

    def _classify_status(self, status: int, exchange: Exchange, detail: str | None = None) -> Exception:
        if status == 401:
            return Unauthorized()
        if status == 429:
            return Transient(
                BackendUnavailable(f"Box MCP server at {self.url} is rate limiting (429); try again later"),
                retry_after=exchange.retry_after(math.inf),
            )
        if status >= 500:
            return Transient(
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
        said = f": {detail}" if detail else ""
        return BackendUnavailable(f"Box MCP server at {self.url} answered HTTP {status}{said}")

    def _classify_box_error(self, exc: BoxToolError) -> Exception:
        """A Box API error relayed by a tool: 401 refreshes, 429/5xx are retried, the rest is final."""
        if exc.status == 401:
            return Unauthorized()
        if exc.status is not None and (exc.status == 429 or exc.status >= 500):
            return Transient(exc, retry_after=body_retry_after(exc.body, math.inf))
        return exc
