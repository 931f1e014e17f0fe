"""The `rate_limit` switch: Box's published per-user rate limits, enforced per bearer token.

Box's figures (developer.box.com, "Rate Limits",
https://developer.box.com/guides/api-calls/permissions-and-errors/rate-limits/):

- general API calls: 1000 requests per minute, per user;
- uploads: 240 file upload requests per minute, per user;
- search: 6 searches per second per user, and on top of that 60 searches per minute per user
  (and 12 per second per enterprise, which one emulated user cannot reach and is left out).

Past a limit Box answers HTTP 429 Too Many Requests with a `retry-after` header (seconds to wait
before retrying) and a Box error body, `code: "rate_limit_exceeded"`. The emulator does the same.

Which tool counts as what (every tools/call is one API call; an upload or a search counts against
its own budget AND the general one, as Box's staff describe the general limit as inclusive):

- uploads: `upload_file`, `upload_file_version` (`UPLOAD_TOOLS`);
- searches: `search_files_keyword`, `search_folders_by_name` (`SEARCH_TOOLS`);
- everything else (listings, details, content, Box AI, metadata, folder and move tools): a call.

Guesses about the real service (Box publishes the figures, not the algorithm):
- one MCP tool call is one Box API call (the hosted server may make more behind a tool; the
  handshake, `tools/list` and download URLs are not counted);
- the window slides: an admitted call counts against its budget for exactly one window (60 s;
  the `rate_window_s` switch shortens it for fast tests, and the per-second search window scales
  with it, window / 60);
- no burst limit inside the window beyond the budget itself (Box publishes none for calls or
  uploads): a client may spend a whole minute's budget in its first second, then waits;
- a refused call does not use up budget;
- Retry-After is the whole seconds until the oldest call of the full window leaves it (rounded
  up, at least 1), so a client that waits exactly that long is admitted.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

UPLOAD_TOOLS = frozenset({"upload_file", "upload_file_version"})
SEARCH_TOOLS = frozenset({"search_files_keyword", "search_folders_by_name"})

# Box's published per-user figures (see the module docstring for the page).
BOX_CALLS_PER_MINUTE = 1000
BOX_UPLOADS_PER_MINUTE = 240
BOX_SEARCHES_PER_MINUTE = 60
BOX_SEARCHES_PER_SECOND = 6


@dataclass(frozen=True)
class Rule:
    """At most `limit` calls of `kind` in any `window_s` seconds."""

    kind: str
    limit: int
    window_s: float


def kinds_of(tool: str) -> tuple[str, ...]:
    """The budgets one call of `tool` counts against."""
    if tool in UPLOAD_TOOLS:
        return ("calls", "uploads")
    if tool in SEARCH_TOOLS:
        return ("calls", "searches", "searches_per_second")
    return ("calls",)


class RateLimiter:
    """Sliding-window budgets per user (bearer token); thread-safe, clock injectable."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._admitted: dict[tuple[str, str], deque[float]] = {}

    def reset(self) -> None:
        with self._lock:
            self._admitted.clear()

    def admit(self, user: str, tool: str, rules: dict[str, Rule]) -> int | None:
        """None when the call is admitted (and counted), else the Retry-After in whole seconds."""
        with self._lock:
            now = self.clock()
            wait = 0.0
            windows: list[deque[float]] = []
            for kind in kinds_of(tool):
                rule = rules.get(kind)
                if rule is None or rule.limit <= 0:
                    continue
                times = self._admitted.setdefault((user, kind), deque())
                while times and times[0] <= now - rule.window_s:
                    times.popleft()
                if len(times) >= rule.limit:
                    # The window frees when its oldest call (of the `limit` latest) leaves it.
                    wait = max(wait, times[len(times) - rule.limit] + rule.window_s - now)
                windows.append(times)
            if wait > 0:
                return max(1, math.ceil(wait))
            for times in windows:
                times.append(now)
            return None


def rules(
    calls_per_minute: int,
    uploads_per_minute: int,
    searches_per_minute: int,
    searches_per_second: int,
    window_s: float,
) -> dict[str, Rule]:
    """The budgets, with `window_s` standing for Box's minute (and window_s / 60 for its second)."""
    return {
        "calls": Rule("calls", calls_per_minute, window_s),
        "uploads": Rule("uploads", uploads_per_minute, window_s),
        "searches": Rule("searches", searches_per_minute, window_s),
        "searches_per_second": Rule("searches_per_second", searches_per_second, window_s / 60),
    }
