"""The Box MCP client's HTTP side: the server's URL, the `Exchange` in which the wire (mcp_http.py)
notes each request's HTTP status, headers or transport error for the retry policy, and what those
mean: Retry-After in seconds, a short reason for a transport failure."""

from __future__ import annotations

import errno
import math
import socket
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2

from box_memory import settings

__all__ = [
    "DEFAULT_URL",
    "Exchange",
    "body_retry_after",
    "default_url",
    "transport_reason",
]

DEFAULT_URL = settings.DEFAULT_MCP_URL


def default_url() -> str:
    """`BOX_MCP_URL` when set (the emulator, a proxy), else Box's hosted server."""
    return settings.mcp_url()


@dataclass
class Exchange:
    """What the HTTP layer saw for the MCP request of one attempt (the last POST's answer)."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    error: BaseException | None = None

    def retry_after(self, cap: float) -> float | None:
        return _retry_after_seconds(self.headers.get("retry-after"), cap)


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
