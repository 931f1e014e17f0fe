"""The Box MCP client's HTTP side: the server's URL, the recording transport that notes each MCP
POST's status, headers or transport error in the calling task's `Exchange` (see client.py), and
what those mean: Retry-After in seconds, a short reason for a transport failure."""

from __future__ import annotations

import contextlib
import errno
import math
import socket
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2

from box_memory import settings

__all__ = [
    "DEFAULT_URL",
    "EXCHANGE",
    "Exchange",
    "RecordingTransport",
    "body_retry_after",
    "default_url",
    "transport_reason",
]

DEFAULT_URL = settings.DEFAULT_MCP_URL
_SYNTHETIC_STATUS = 599  # what the recording transport answers in place of a transport exception


def default_url() -> str:
    """`BOX_MCP_URL` when set (the emulator, a proxy), else Box's hosted server."""
    return settings.mcp_url()


@dataclass
class Exchange:
    """What the HTTP layer saw for the MCP request(s) of one attempt."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    error: BaseException | None = None

    def retry_after(self, cap: float) -> float | None:
        return _retry_after_seconds(self.headers.get("retry-after"), cap)


EXCHANGE: ContextVar[Exchange | None] = ContextVar("box_mcp_exchange", default=None)


class _RecordingStream(httpx2.AsyncByteStream):
    """Response body that records a mid-body transport failure and ends the body instead."""

    def __init__(self, inner: httpx2.AsyncByteStream, exchange: Exchange | None) -> None:
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


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Records status/headers/transport errors of MCP POSTs into the caller's `Exchange`."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        exchange = EXCHANGE.get() if request.method == "POST" else None
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


def body_retry_after(body: Any, cap: float) -> float | None:
    """A retry hint inside a relayed Box error body (some relays copy the header into it)."""
    if not isinstance(body, dict):
        return None
    for key in ("retry_after", "retry-after", "retryAfter"):
        if key in body:
            return _retry_after_seconds(body[key], cap)
    info = body.get("context_info")
    return body_retry_after(info, cap) if isinstance(info, dict) else None


def transport_reason(exc: BaseException, timeout: float) -> str:
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
