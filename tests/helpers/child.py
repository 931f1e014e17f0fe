"""The real CLI in a child process of its own, bounded in time and in address space, so a read that
blocks on a FIFO or swallows /dev/zero fails the test instead of hanging it or exhausting the
machine."""

from __future__ import annotations

import functools
import os
import subprocess
import sys


def _limit_memory(limit: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def run_bounded(
    *args: str, env: dict[str, str], timeout: float, memory: int
) -> subprocess.CompletedProcess[str]:
    """`python -m box_memory ARGS`, killed after `timeout` seconds, its address space capped at
    `memory` bytes (where the OS has setrlimit)."""
    return subprocess.run(
        [sys.executable, "-m", "box_memory", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=timeout,
        preexec_fn=functools.partial(_limit_memory, memory) if os.name == "posix" else None,
    )
