"""Run the real `box-memory` console entry point in a pseudo-terminal, as a person types it.

stdin, stdout and stderr are one pty of a given width, which is the child's controlling terminal
(so Ctrl-C written to it reaches the child as SIGINT, through the terminal's line discipline).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


@dataclass
class Session:
    proc: subprocess.Popen[bytes]
    leader: int
    out: bytes = b""

    def read_until(self, text: str, timeout: float = 60) -> str:
        """Read until `text` shows (or the child ends, or the time is up); what was shown."""
        end = time.monotonic() + timeout
        while text not in self.text and time.monotonic() < end:
            ready, _, _ = select.select([self.leader], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(self.leader, 65536)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                self.out += chunk
            elif self.proc.poll() is not None:
                break
        return self.text

    def send(self, data: bytes) -> None:
        os.write(self.leader, data)

    def finish(self, timeout: float = 60) -> tuple[int | None, str]:
        """Exit code (negative: ended by that signal; None: still running after `timeout`, then
        killed) and everything shown, without colour codes."""
        end = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < end:
            self.read_until("\x00never\x00", timeout=0.2)
        code = self.proc.poll()
        if code is None:
            self.proc.kill()
            self.proc.wait()
        self.read_until("\x00never\x00", timeout=0.5)
        os.close(self.leader)
        return code, self.text

    @property
    def text(self) -> str:
        return ANSI.sub("", self.out.decode("utf-8", "replace")).replace("\r\n", "\n")


def start(
    args: list[str], *, cols: int = 120, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Session:
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    full = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    full.update({"TERM": "xterm-256color", **(env or {})})
    proc = subprocess.Popen(
        [sys.executable, "-m", "box_memory", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=full,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),  # noqa: PLW1509 (no threads here)
    )
    os.close(follower)
    return Session(proc, leader)


def run(
    args: list[str],
    *,
    cols: int = 120,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> tuple[int | None, str]:
    return start(args, cols=cols, env=env, cwd=cwd).finish(timeout)
