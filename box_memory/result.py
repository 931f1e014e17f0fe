"""What every service returns, and the one function that turns it into the result envelope.

A service decides its data, warnings, errors and exit code; the CLI (`cli/output.py`) prints the
envelope under `--json` or human text around the same value, and the MCP server (`server.py`)
returns the envelope's fields as the tool's structured result. Neither decides an exit code or a
warning text. Only the standard library here: every command imports it.
"""

from __future__ import annotations

from typing import Any

from box_memory.record import Frozen

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


class Result(Frozen):
    """A service's answer. `quiet_warnings` are reported in the envelope and with --verbose only
    (e.g. a team folder this user may not read); `warnings` always. Read-only."""

    _fields = ("data", "warnings", "errors", "exit_code", "status", "quiet_warnings")
    __slots__ = _fields

    data: dict[str, Any]
    warnings: list[str]
    errors: list[dict[str, str]]
    exit_code: int
    status: str
    quiet_warnings: list[str]

    def __init__(
        self,
        data: dict[str, Any] | None = None,
        warnings: list[str] | None = None,
        errors: list[dict[str, str]] | None = None,
        exit_code: int = 0,
        status: str = "ok",
        quiet_warnings: list[str] | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "data", {} if data is None else data)
        set_(self, "warnings", [] if warnings is None else warnings)
        set_(self, "errors", [] if errors is None else errors)
        set_(self, "exit_code", exit_code)
        set_(self, "status", status)
        set_(self, "quiet_warnings", [] if quiet_warnings is None else quiet_warnings)

    def replace(self, **changes: Any) -> Result:
        """The same result with some fields changed (as `dataclasses.replace` would)."""
        return Result(**{k: changes.get(k, getattr(self, k)) for k in self._fields})

    def warned(self, *more: str) -> Result:
        """The same result with more warnings after its own (e.g. the cloud session's)."""
        return self.replace(warnings=[*self.warnings, *more]) if more else self

    def with_data(self, **items: Any) -> Result:
        return self.replace(data={**self.data, **items})

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
