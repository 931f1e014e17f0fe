"""What every service returns, and the one function that turns it into the result envelope.

A service decides its data, warnings, errors and exit code; the CLI (`cli/output.py`) prints the
envelope under `--json` or human text around the same value, and the MCP server (`server.py`)
returns the envelope's fields as the tool's structured result. Neither decides an exit code or a
warning text. Only the standard library here: every command imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

RESULT_VERSION = 1

# The keys of every envelope, in order (docs/spec/cli.md, "JSON output").
ENVELOPE_KEYS = (
    "box_memory_result_version",
    "command",
    "status",
    "exit_code",
    "duration_ms",
    "data",
    "warnings",
    "errors",
)


@dataclass(frozen=True)
class Result:
    """A service's answer. `quiet_warnings` are reported in the envelope and with --verbose only
    (e.g. a team folder this user may not read); `warnings` always."""

    data: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    exit_code: int = 0
    status: str = "ok"
    quiet_warnings: list[str] = field(default_factory=list)

    def warned(self, *more: str) -> Result:
        """The same result with more warnings after its own (e.g. the cloud session's)."""
        return replace(self, warnings=[*self.warnings, *more]) if more else self

    def with_data(self, **items: Any) -> Result:
        return replace(self, data={**self.data, **items})

    @property
    def all_warnings(self) -> list[str]:
        return [*self.warnings, *self.quiet_warnings]


def failure(code: str, message: str, exit_code: int) -> Result:
    """A failed command: no data, one error."""
    return Result(status="error", exit_code=exit_code, errors=[{"code": code, "message": one_line(message)}])


def envelope(command: str, result: Result, duration_ms: int) -> dict[str, Any]:
    """The one envelope: `--json` prints it, the MCP server returns its fields."""
    return {
        "box_memory_result_version": RESULT_VERSION,
        "command": command,
        "status": result.status,
        "exit_code": result.exit_code,
        "duration_ms": duration_ms,
        "data": result.data,
        "warnings": result.all_warnings,
        "errors": list(result.errors),
    }


def one_line(text: str) -> str:
    return " ".join(text.split())[:1000]


def os_message(e: OSError) -> str:
    """`cannot use /proc/foo: no such file or directory` rather than `FileNotFoundError: [Errno 2]`."""
    reason = (e.strerror or str(e) or type(e).__name__).rstrip(".")
    reason = reason[:1].lower() + reason[1:]
    if e.filename is None:
        return reason
    target = f"{e.filename} -> {e.filename2}" if e.filename2 is not None else str(e.filename)
    return f"cannot use {target}: {reason}"
