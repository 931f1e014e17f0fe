"""The crontab line for brain-sync: cron runs commands with an almost empty environment and a
bare PATH, so the line names the running executable by absolute path and sets every variable
the run depends on here (where box-memory keeps its config, store and credentials)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from box_memory import settings
from box_memory.result import Result

SCHEDULE = "*/15 * * * *"
# Cron steps that divide an hour evenly, so the ticks stay regular across the hour boundary.
_STEPS = (5, 6, 10, 12, 15)
# Variables that decide where the config, Brain store and credentials are, or which Box endpoint
# and workspace a run uses. Secrets are never written into a crontab.
PASSED = (
    settings.HOME,
    settings.WORKSPACE,
    settings.MCP_URL,
    settings.CLIENT_ID,
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
)
SECRETS = (settings.ACCESS_TOKEN, settings.CLIENT_SECRET)


def executable() -> list[str]:
    """How this process was started, as an absolute command: the console script when that is
    what runs, else this interpreter with `-m box_memory`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "box-memory" and os.access(argv0, os.X_OK):
        return [str(argv0.absolute())]
    # absolute(), not resolve(): a venv's python is a symlink that must stay the venv's.
    return [str(Path(sys.executable).absolute()), "-m", "box_memory"]


def schedule_for(intervals: list[int]) -> str:
    """A schedule that ticks at least as often as the shortest interval (never more often than
    every 5 minutes, the shortest interval a source can have; at most every 15, the default).
    `--if-due` then keeps each source to its own interval."""
    if not intervals:
        return SCHEDULE
    shortest = min(intervals)
    step = max((s for s in _STEPS if s <= shortest), default=_STEPS[0])
    return f"*/{step} * * * *"


def source_intervals(folder_id: str | None, path: Path | None, interval: int | None) -> list[int]:
    """The intervals of the sources a printed line would run: the one named (by its folder, on any
    workspace), or every enabled source. A given --interval wins over the stored one."""
    from box_memory.brain.db import BrainStore, default_path
    from box_memory.brain.options import Settings

    if interval is not None:
        return [Settings().updated({"interval_minutes": interval}).interval_minutes]
    if not default_path().exists():
        return []
    with BrainStore(create=False) as store:
        sources = store.sources()
    if folder_id is not None:
        sources = [s for s in sources if s.kind == "box" and s.root == str(folder_id).strip()]
    elif path is not None:
        root = str(path.expanduser().resolve())
        sources = [s for s in sources if s.kind == "local" and s.root == root]
    return [s.settings.interval_minutes for s in sources if s.settings.enabled]


def cron_line(args: list[str], schedule: str = SCHEDULE) -> Result:
    env: dict[str, str] = {}
    if settings.home() is None:
        env.update(settings.present(["HOME"]))  # platformdirs resolves the user dirs from it
    env.update(settings.present(PASSED))
    if env.get(settings.HOME):
        env[settings.HOME] = str(Path(env[settings.HOME]).expanduser().absolute())
    command = [*executable(), "brain-sync", *args, "--if-due", "--quiet"]
    text = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), *map(shlex.quote, command)])
    warnings = [
        f"{name} is set here but left out of the line (a secret never goes in a crontab); store "
        "the credential with `box-memory auth token --token-stdin` or `auth login` so cron finds it"
        for name in settings.present(SECRETS)
    ]
    # `%` ends a crontab command (the rest becomes stdin): escape it.
    line = f"{schedule} {text.replace('%', chr(92) + '%')}"
    return Result({"schedule": schedule, "command": command, "env": env, "line": line}, warnings=warnings)
