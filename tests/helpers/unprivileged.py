"""Permission checks only bite for a user without CAP_DAC_OVERRIDE: as root every command runs as a
throwaway system user (created with useradd, entered with setpriv); as any other user, directly.
`reader_box` gives a workspace and a BOX_MEMORY_HOME that this user owns."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

USER = "bm-reader"


def reader_ids() -> tuple[int, int] | None:
    """(uid, gid) to run as, or None to run as ourselves (already unprivileged)."""
    if os.geteuid() != 0:
        return None
    if not (shutil.which("useradd") and shutil.which("setpriv")):
        pytest.skip("running as root without useradd/setpriv: cannot drop privileges to test permissions")
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        done = subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            capture_output=True,
            check=False,
        )
        if done.returncode not in (0, 9):  # 9: created meanwhile by a parallel test
            pytest.skip(f"cannot create a test user: {done.stderr.decode().strip()}")
        pw = pwd.getpwnam(USER)
    return pw.pw_uid, pw.pw_gid


class Box:
    """A workspace and a BOX_MEMORY_HOME that the unprivileged user owns."""

    def __init__(self, base: Path, ids: tuple[int, int] | None) -> None:
        self.base = base
        self.ids = ids
        self.ws = base / "ws"
        self.home = base / "home"

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            "BOX_MEMORY_HOME": str(self.home),
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
            "HOME": str(self.base),
        }
        argv = [sys.executable, "-m", "box_memory", *args]
        if self.ids is not None:
            uid, gid = self.ids
            argv = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *argv]
        return subprocess.run(argv, env=env, capture_output=True, text=True, cwd=self.base, check=False)

    def json(self, *args: str, code: int = 0) -> dict[str, Any]:
        where = ("--path", str(self.ws)) if args[0] == "init" else ("--workspace", str(self.ws))
        res = self.run(*args, *where, "--json")
        assert res.returncode == code, (res.returncode, res.stdout, res.stderr)
        out: dict[str, Any] = json.loads(res.stdout)
        return out

    def deny(self, rel: str) -> None:
        (self.ws / rel).chmod(0)

    def restore(self) -> None:
        for p in [self.ws, *self.ws.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
        for p in self.ws.rglob("*"):
            if p.is_file():
                p.chmod(0o644)


@contextmanager
def reader_box(prefix: str) -> Iterator[Box]:
    """A fresh Box in a temporary folder: a workspace with team `ops` and one decision of the
    default team ("Deploy keys"); every permission put back and the folder removed after."""
    ids = reader_ids()
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    (base / "home").mkdir()
    if ids is not None:
        os.chown(base, *ids)
        os.chown(base / "home", *ids)
    b = Box(base, ids)
    try:
        b.json("init", "--team", "ops")
        b.json("write", "Rotate the deploy keys monthly.", "--title", "Deploy keys", "--kind", "decision")
        yield b
    finally:
        b.restore()
        b.home.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
