"""The Box MCP client's settings and state, and the command's deadline every call runs inside.

The client is built in layers, each a class over the one before: this base, the retry policy and
the classification of failures (retry.py), the MCP session and its catalogue (session.py), and the
tool calls (client.py). The protocol itself is spoken by mcp_http.py.
"""

from __future__ import annotations

import inspect
import math
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal

from box_memory import settings
from box_memory.box.mcp_http import McpHttp
from box_memory.box.tokens import StaticToken, TokenSource
from box_memory.box.transport import default_url
from box_memory.errors import AuthError, BackendUnavailable, BoxMemoryError
from box_memory.redaction import redact

__all__ = ["GRACE_CAP_S", "ClientBase", "Connection", "SleepFn"]


@dataclass
class Connection:
    """One live MCP session; `dead` once a failure showed it broken (the next call reconnects)."""

    client: McpHttp
    dead: BaseException | None = None


SleepFn = Callable[[float], Awaitable[None] | None]


class _Unset:
    """The default of `deadline_s`: read `BOX_MEMORY_DEADLINE_S`."""


_UNSET = _Unset()
GRACE_CAP_S = 10.0  # calls made after the deadline (putting things back) share at most this long


class ClientBase:
    """The client's options, token, portal and connection slots, and its deadline."""

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
        self._conn: Connection | None = None
        self._conn_lock: anyio.Lock | None = None
        self._refresh_lock: anyio.Lock | None = None

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
