"""The emulator's behaviour switches: what each does, their allowed values, their coercion."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from box_memory.emulator import catalogue
from box_memory.emulator.ratelimit import (
    BOX_CALLS_PER_MINUTE,
    BOX_SEARCHES_PER_MINUTE,
    BOX_SEARCHES_PER_SECOND,
    BOX_UPLOADS_PER_MINUTE,
)

ERROR_KINDS = ("429", "500", "503", "tool429", "tool500")


_CHOICES = {
    "paging": ("marker", "offset", "none"),
    "shape": ("structured", "text"),
    "ids": ("string", "number"),
    "listing": ("mini", "full"),
    "era": ("legacy", "dual"),
    "sessions": ("stateless", "stateful"),
    "responses": ("json", "sse"),
    "user": ("full", "mini"),
}


@dataclass(frozen=True)
class Switches:
    """Behaviour switches; all but `sessions` and `responses` take effect on the next request."""

    paging: str = "marker"
    shape: str = "structured"
    ids: str = "string"
    listing: str = "mini"
    era: str = "legacy"
    sessions: str = "stateless"
    responses: str = "json"  # requests answered with one JSON object, or with an SSE stream
    tool_page: int = 0  # tools/list pages of this many tools, with nextCursor (0: one page)
    latency_ms: float = 0
    error_rate: float = 0.0
    error_kinds: tuple[str, ...] = ("429", "500")
    drop_rate: float = 0.0
    search_lag_s: float = 0
    retry_after_s: int = 1
    fault_all: bool = False
    repeat_marker: bool = False  # marker paging hands back the marker it was given (a broken server)
    total_skew: int = 0  # offset paging reports total_count off by this much
    short_pages: bool = False  # pages one entry shorter than the limit before the end
    page_cap: int = 0  # pages silently capped at this many entries (0: no cap beyond the limit)
    ignore_offset: bool = False  # offset paging always answers the first page (a broken server)
    fail_later_pages: bool = False  # every listing page after the first fails (a 500, every time)
    content_pending: int = 0  # get_file_content answers "pending" this many times per file (-1: always)
    content_inexact: bool = False  # get_file_content text is not byte-exact
    user: str = "full"  # who_am_i: "full" user object, or "mini" (no enterprise)
    upload_text_only: bool = False  # upload_file refuses names outside the documented text types
    shared_links: frozenset[str] = frozenset()  # item ids with a shared link: write tools refuse below
    external_collaborators: frozenset[str] = frozenset()  # item ids with an external collaborator
    forbidden: frozenset[str] = frozenset()  # item ids this user may not read (403 on them and below)
    catalogue: str = "today"  # which tool catalogue snapshot to serve (catalogue.py), or a file
    disabled_tools: frozenset[str] = frozenset()
    hidden_tools: frozenset[str] = frozenset()
    download_ttl_s: float = 900
    # Box's published per-user rate limits (ratelimit.py cites the page), off unless `rate_limit`.
    rate_limit: bool = False  # refuse tool calls past the budgets below: HTTP 429 + retry-after
    calls_per_minute: int = BOX_CALLS_PER_MINUTE
    uploads_per_minute: int = BOX_UPLOADS_PER_MINUTE
    searches_per_minute: int = BOX_SEARCHES_PER_MINUTE
    searches_per_second: int = BOX_SEARCHES_PER_SECOND
    rate_window_s: float = 60.0  # Box's "minute"; tests shrink it (the search second scales along)

    def validated(self) -> Switches:
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")
        catalogue.catalogue_path(self.catalogue)  # raises ValueError for an unknown one
        bad = [k for k in self.error_kinds if k not in ERROR_KINDS]
        if bad or not self.error_kinds:
            raise ValueError(
                f"error_kinds must be a non-empty subset of {ERROR_KINDS}, not {self.error_kinds}"
            )
        for name in ("error_rate", "drop_rate"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1")
        budgets = ("calls_per_minute", "uploads_per_minute", "searches_per_minute", "searches_per_second")
        if any(getattr(self, name) < 0 for name in budgets) or self.rate_window_s <= 0:
            raise ValueError(
                f"{', '.join(budgets)} must not be negative (0: no limit), rate_window_s positive"
            )
        if min(self.latency_ms, self.search_lag_s, self.retry_after_s, self.page_cap, self.tool_page) < 0:
            raise ValueError(
                "latency_ms, search_lag_s, retry_after_s, page_cap and tool_page must not be negative"
            )
        return self


def coerce(name: str, value: Any) -> Any:
    if name in ("disabled_tools", "hidden_tools", "shared_links", "external_collaborators", "forbidden"):
        return frozenset([value] if isinstance(value, str) else value or ())
    if name == "error_kinds":
        items = value.split(",") if isinstance(value, str) else value
        return tuple(str(k).strip() for k in items if str(k).strip())
    if name in ("error_rate", "drop_rate", "latency_ms", "search_lag_s", "download_ttl_s", "rate_window_s"):
        return float(value)
    if name == "retry_after_s":
        return int(value)
    if name in (
        "fault_all",
        "repeat_marker",
        "short_pages",
        "ignore_offset",
        "fail_later_pages",
        "content_inexact",
        "upload_text_only",
        "rate_limit",
    ):
        return bool(value)
    if name in (
        "total_skew",
        "page_cap",
        "content_pending",
        "tool_page",
        "calls_per_minute",
        "uploads_per_minute",
        "searches_per_minute",
        "searches_per_second",
    ):
        return int(value)
    return value
