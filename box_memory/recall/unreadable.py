"""The one warning for what a read had to skip because this user may not read it."""

from __future__ import annotations

UNREADABLE = "permission denied, skipped"


def own_unreadable(paths: list[str]) -> list[str]:
    """Of the items a read could not read, those that are not another team's folder (a team
    boundary, `teams/<t>/...` a folder): this user's own memories or files, never healthy."""
    return [p for p in paths if not (p.startswith("teams/") and p.endswith("/"))]


def unreadable_warning(paths: list[str]) -> str:
    """One warning for everything a read had to skip because the user may not read it. When every
    item is a team's folder (a team boundary) human output shows it only with --verbose;
    otherwise always (it names the user's own memories). --json always carries it."""
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    if not own_unreadable(paths):
        return f"{UNREADABLE} {len(paths)} unreadable item(s): {shown}"
    # Not (only) another team's folder: the user's own memories or files cannot be read. That is
    # said in plain output too (it does not start with UNREADABLE).
    return f"permission denied: {len(paths)} item(s) could not be read and were skipped: {shown}"
