"""One writer process for the concurrency test: waits for a start file, then writes N memories.

Usage: python -m tests.integrity.writer_driver WORKSPACE START_FILE PROC_NO COUNT
Each write goes through the real CLI (in-process, so 25 writes do not pay 25 interpreter starts);
one JSON line per write (the envelope) goes to stdout.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from typer.testing import CliRunner

from box_memory.cli.app import app


def main() -> None:
    ws, start, proc, count = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    runner = CliRunner()
    (start.parent / f"ready-{proc}").touch()  # imports done: the test starts everyone at once
    deadline = time.monotonic() + 120
    while not start.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    for i in range(count):
        res = runner.invoke(
            app,
            ["write", f"Writer {proc} wrote memory {i}.", "--title", f"P{proc} M{i}", "--tag", f"p{proc}",
             "-w", ws, "--json"],
        )  # fmt: skip
        sys.stdout.write(res.stdout.strip() + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
