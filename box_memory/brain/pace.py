"""Pacing a sync under Box's per-user rate limit: one budget shared by the crawl and the fetch.

Box lets one user make about 1000 API calls a minute and answers HTTP 429 with a Retry-After
past that (developer.box.com, "Rate Limits":
https://developer.box.com/guides/api-calls/permissions-and-errors/rate-limits/). A first sync of a
big source used to burst: its content workers called as fast as the server answered, spent the
minute's budget in seconds and then sat out 429s. Now every tool call of a sync (listing pages and
content fetches alike) first takes a slot from one `CallPacer`: slots are 60 / rate seconds apart,
so no 60 s window ever holds more than rate + 1 calls. The default rate is 95% of Box's figure
(`DEFAULT_CALLS_PER_MINUTE`), which leaves room for the session handshake, the catalogue and the
user's other clients; `BOX_MEMORY_SYNC_CALLS_PER_MINUTE` sets another (0: unpaced).

Pacing only spaces calls; it cannot add speed. With `concurrency` workers and calls that take L
seconds each, a sync reaches at most concurrency / L calls a second, so 4 workers keep 950 calls a
minute up to about 250 ms a call.

A 429 answered anyway (another client of the same user, a limit Box applies on its own) is still
honoured: the client waits the Retry-After before its retry (`hold_sleep` wraps its sleep), and the
pacer holds every other worker for as long, so the sync does not go on spending a budget Box has
just said is spent. Any back-off the client makes (a 5xx too) holds the pacer the same way.
"""

from __future__ import annotations

import inspect
import math
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

BOX_CALLS_PER_MINUTE = 1000  # Box's published per-user figure (the page above)
SAFETY = 0.95
DEFAULT_CALLS_PER_MINUTE = BOX_CALLS_PER_MINUTE * SAFETY


class CallPacer:
    """Hands out call slots at least `60 / calls_per_minute` s apart; thread-safe, clock injectable.

    `acquire()` reserves the next free slot and sleeps until it, so concurrent workers queue in
    order; `hold(seconds)` moves every slot not yet taken past now + seconds.
    """

    def __init__(
        self,
        calls_per_minute: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not calls_per_minute > 0 or not math.isfinite(calls_per_minute):
            raise ValueError("calls_per_minute must be a positive number")
        self.calls_per_minute = float(calls_per_minute)
        self.interval = 60.0 / self.calls_per_minute
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._next = -math.inf  # the earliest start of the next slot
        self._held_until = -math.inf
        self.granted = 0
        self.held_s = 0.0

    def acquire(self, n: int = 1) -> None:
        """Take the next `n` slots and sleep until the first of them. `n` > 1: a batch of calls
        made at once (run concurrently), so the time the batch takes overlaps the wait for the
        next batch's slots; on average the pace holds, and any 60 s window holds at most
        rate + n calls."""
        n = max(1, int(n))
        while True:
            with self._lock:
                now = self.clock()
                at = max(now, self._next, self._held_until)
                self._next = at + n * self.interval
            if at > now:
                self.sleep(at - now)
            with self._lock:
                if self.clock() >= self._held_until:  # no hold began while this worker slept
                    self.granted += n
                    return

    def hold(self, seconds: float) -> None:
        """Nobody starts a call for `seconds` (the server asked to wait); then the slots go on."""
        if not seconds > 0:
            return
        with self._lock:
            until = self.clock() + seconds
            if until > self._held_until:
                self._held_until = until
                self.held_s += seconds
                # The retry that waited goes first, at `until`; the next slot one interval later.
                self._next = max(self._next, until + self.interval)

    def estimate_s(self, calls: int) -> float:
        """Seconds `calls` more calls take at this pace (ignoring any 429 a server adds)."""
        return max(0, calls) * self.interval

    def hold_sleep(self, inner: Callable[[float], Awaitable[None] | None] | None) -> Callable[[float], Any]:
        """The client's back-off sleep: hold the whole sync for the wait, then sleep it (`inner`,
        or anyio's sleep when there is none)."""

        async def sleep(seconds: float) -> None:
            self.hold(seconds)
            if inner is None:
                import anyio

                await anyio.sleep(seconds)
                return
            outcome = inner(seconds)
            if inspect.isawaitable(outcome):
                await outcome

        return sleep


class PacedClient:
    """A Box MCP client whose tool calls each take a pacer slot first; everything else passes."""

    def __init__(self, client: Any, pacer: CallPacer) -> None:
        self._client = client
        self.pacer = pacer

    def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        self.pacer.acquire()
        return self._client.call(name, args)

    def call_text(self, name: str, args: dict[str, Any] | None = None) -> str:
        self.pacer.acquire()
        text: str = self._client.call_text(name, args)
        return text

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def duration(seconds: float) -> str:
    """`about 3 min 20 s`, `about 40 s`, `about 2 h 5 min` for a plan line."""
    s = max(0, round(seconds))
    if s < 60:
        return f"about {s} s"
    if s < 3600:
        return f"about {s // 60} min {s % 60} s" if s % 60 else f"about {s // 60} min"
    return f"about {s // 3600} h {s % 3600 // 60} min"
