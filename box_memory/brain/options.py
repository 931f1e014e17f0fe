"""Per-source settings: persisted with the source, clamped, 0 or missing meaning the default."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from box_memory.errors import InvalidInput

# name -> (default, minimum, maximum)
LIMITS: dict[str, tuple[int, int, int]] = {
    "interval_minutes": (60, 5, 10080),
    "max_items": (200, 1, 10000),
    "max_content_chars": (10000, 500, 100000),
}
# enabled: a disabled source is never synced (its entries stay until `brain purge`);
# only_workspace: its hits show only in the workspace it was synced from (default: every workspace
# of the same user - the design's "global imported recall").
FLAGS: dict[str, bool] = {
    "include_content": True,
    "ai_summaries": False,
    "review": True,
    "enabled": True,
    "only_workspace": False,
}


@dataclass(frozen=True)
class Settings:
    interval_minutes: int = 60
    max_items: int = 200
    include_content: bool = True
    ai_summaries: bool = False
    max_content_chars: int = 10000
    review: bool = True
    enabled: bool = True
    only_workspace: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Settings:
        """Read stored settings leniently (a hand-edited or older row still yields valid values)."""
        data = data if isinstance(data, dict) else {}
        values: dict[str, Any] = {}
        for name, (default, lo, hi) in LIMITS.items():
            raw = data.get(name)
            try:
                number = int(raw) if raw is not None and not isinstance(raw, bool) else 0
            except (TypeError, ValueError):
                number = 0
            values[name] = default if number <= 0 else max(lo, min(hi, number))
        for name, default in FLAGS.items():
            raw = data.get(name)
            values[name] = raw if isinstance(raw, bool) else default
        return cls(**values)

    def updated(self, changes: dict[str, Any], warnings: list[str] | None = None) -> Settings:
        """These settings with `changes` applied (None = unchanged); numbers are clamped."""
        values = self.to_dict()
        for name, value in changes.items():
            if value is None:
                continue
            if name in LIMITS:
                values[name] = clamp(name, value, warnings)
            elif name in FLAGS:
                values[name] = bool(value)
            else:  # pragma: no cover - a programming error, not user input
                raise KeyError(name)
        return Settings(**values)


def clamp(name: str, value: int, warnings: list[str] | None = None) -> int:
    """0 means the default; out-of-range values are pulled into range (with a warning)."""
    default, lo, hi = LIMITS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{option(name)} must be a whole number")
    if value < 0:
        raise InvalidInput(f"{option(name)} must not be negative (0 means the default, {default})")
    if value == 0:
        return default
    clamped = max(lo, min(hi, value))
    if clamped != value and warnings is not None:
        warnings.append(f"{option(name)} {value} is outside {lo}..{hi}; using {clamped}")
    return clamped


def option(name: str) -> str:
    return {
        "interval_minutes": "--interval",
        "max_items": "--max-items",
        "max_content_chars": "--max-content-chars",
    }.get(name, name)
