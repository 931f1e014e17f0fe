"""Team boundaries are permissions: what a user may not read is skipped and reported once, never
taken for a missing, orphaned or deleted file.

The permission checks only bite for a user without CAP_DAC_OVERRIDE: as root the test runs every
command as a throwaway system user (created here with useradd, via setpriv); as any other user it
runs them directly.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

USER = "bm-reader"


def _reader() -> tuple[int, int] | None:
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


@pytest.fixture
def box() -> Iterator[Box]:
    ids = _reader()
    base = Path(tempfile.mkdtemp(prefix="bm-perm-"))
    base.chmod(0o755)
    (base / "home").mkdir()
    if ids is not None:
        os.chown(base, *ids)
        os.chown(base / "home", *ids)
    b = Box(base, ids)
    try:
        b.json("init", "--team", "ops")
        b.json("write", "Rotate the deploy keys monthly.", "--title", "Deploy keys", "--kind", "decision")
        b.json("write", "Ops decided on blue-green deploys.", "--title", "Deploy strategy", "--team", "ops")
        yield b
    finally:
        b.restore()
        shutil.rmtree(base, ignore_errors=True)


def test_recall_skips_an_unreadable_team_folder(box: Box) -> None:
    box.deny("teams/ops/memories")
    env = box.json("recall", "deploy")
    assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
    denied = [w for w in env["warnings"] if "permission denied" in w]
    assert len(denied) == 1 and "teams/ops/memories/" in denied[0]
    assert box.json("recall", "deploy", "--team", "default")["data"]["count"] == 1
    # Said once, on stderr, in plain output too (it changes what the hits mean) and with --verbose.
    plain = box.run("recall", "deploy", "--workspace", str(box.ws))
    assert plain.returncode == 0 and plain.stderr.count("permission denied") == 1
    loud = box.run("recall", "deploy", "--workspace", str(box.ws), "--verbose")
    assert loud.returncode == 0 and loud.stderr.count("permission denied") == 1
    # Once readable again it is found.
    box.restore()
    titles = {h["title"] for h in box.json("recall", "deploy")["data"]["hits"]}
    assert titles == {"Deploy keys", "Deploy strategy"}


def test_recall_skips_an_unreadable_memory_file(box: Box) -> None:
    mem = next((box.ws / "teams/ops/memories").glob("*__deploy-strategy.md"))
    box.deny(str(mem.relative_to(box.ws)))
    env = box.json("recall", "deploy")
    assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
    assert any(mem.name in w and "permission denied" in w for w in env["warnings"])
    box.restore()
    assert box.json("recall", "deploy")["data"]["count"] == 2


def test_status_reports_an_unreadable_team_without_calling_it_missing(box: Box) -> None:
    box.deny("teams/ops")
    env = box.json("status")
    data = env["data"]
    assert "teams/ops/memories/" in data["unreadable"]
    assert data["teams"]["ops"]["unreadable"] is True
    assert data["index_health"]["problems"] == []
    assert data["totals"]["memories"] == 1
    assert sum("permission denied" in w for w in env["warnings"]) == 1
    plain = box.run("status", "--workspace", str(box.ws))
    assert plain.returncode == 0 and "permission denied" not in plain.stderr


def test_index_rebuild_never_drops_what_it_cannot_read(box: Box) -> None:
    mem = next((box.ws / "memories").glob("*__deploy-keys.md"))
    before = json.loads((box.ws / "memories/_index.json").read_text())
    box.deny(str(mem.relative_to(box.ws)))
    box.deny("teams/ops/memories")
    # A memory of this user's own that cannot be read: the check cannot vouch for the indexes.
    check = box.json("index-rebuild", "--check", code=6)
    assert check["data"]["complete"] is False
    assert check["data"]["drift"] is False
    assert check["data"]["orphans"] == []
    assert set(check["data"]["permission_denied"]) == {"memories/" + mem.name, "teams/ops/memories/"}
    env = box.json("index-rebuild")
    assert env["data"]["orphans"] == [] and env["data"]["diff"]["removed"] == []
    assert "teams/ops/memories/" not in env["data"]["skipped_folders"]
    after = json.loads((box.ws / "memories/_index.json").read_text())
    assert [e["id"] for e in after["entries"]] == [e["id"] for e in before["entries"]]
    assert sum("permission denied" in w for w in env["warnings"]) == 1
    box.restore()
    ops = json.loads((box.ws / "teams/ops/memories/_index.json").read_text())
    assert [e["title"] for e in ops["entries"]] == ["Deploy strategy"]


def test_a_box_team_folder_answering_403_is_skipped(make: Any) -> None:
    """On Box, a team folder whose listing answers 403 is skipped like an unreadable local one."""
    from tests.cloud.conftest import Backend

    b: Backend = make("cloud", "--team", "ops")
    b.run("write", "Rotate the deploy keys monthly.", "--title", "Deploy keys")
    b.run("write", "Blue-green deploys.", "--title", "Deploy strategy", "--team", "ops")
    assert b.emu is not None
    ops = b.emu.fs.id_for_path(f"{b.name}/teams/ops")
    b.emu.configure(forbidden=[ops])
    try:
        env = b.run("recall", "deploy")
        assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
        assert sum("permission denied" in w for w in env["warnings"]) == 1
        status = b.run("status")
        assert any(u.startswith("teams/ops/") for u in status["data"]["unreadable"])
        assert status["data"]["index_health"]["problems"] == []
        rebuilt = b.run("index-rebuild")
        assert rebuilt["data"]["orphans"] == [] and rebuilt["data"]["diff"]["removed"] == []
        assert any(u.startswith("teams/ops/") for u in rebuilt["data"]["permission_denied"])
    finally:
        b.emu.configure(forbidden=())
    titles = {h["title"] for h in b.run("recall", "deploy")["data"]["hits"]}
    assert titles == {"Deploy keys", "Deploy strategy"}
