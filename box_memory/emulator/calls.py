"""One tools/call as the emulator's call log records it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    """One tools/call that reached the server.

    outcome: "ok", "error" (a Box error relayed as isError), "disabled", "unknown_tool",
    "unauthorized" (401, never ran), "http_429"/"http_500"/"http_503" (HTTP fault, never ran),
    "tool_429"/"tool_500" (fault relayed as isError, never ran), "rate_limited" (past the
    `rate_limit` switch's budget: HTTP 429, never ran), "dropped" (connection closed).
    """

    name: str
    arguments: dict[str, Any]
    time: float
    outcome: str
    status: int | None = None
    code: str | None = None
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    def as_json(self) -> dict[str, Any]:
        return {
            "time": datetime.fromtimestamp(self.time, UTC).isoformat(timespec="milliseconds"),
            "name": self.name,
            "arguments": self.arguments,
            "ok": self.ok,
            "outcome": self.outcome,
            "status": self.status,
            "code": self.code,
            "duration_ms": round(self.duration_ms, 3),
        }
