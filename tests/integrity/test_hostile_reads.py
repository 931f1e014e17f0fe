"""Hostile workspaces: files box-memory reads are regular files of bounded size, or refused.

Each case runs the real CLI in a subprocess under a wall-clock timeout and an address-space limit
(`resource.setrlimit`), so a read that blocks on a FIFO or swallows /dev/zero fails the test
instead of hanging it or exhausting the machine.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from box_memory.format.safeio import LIMITS, UnreadableFile, read_regular
from tests.helpers.child import run_bounded

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and device files")

MEMORY_LIMIT = 1024 * 1024 * 1024  # 1 GiB of address space: /dev/zero read whole would exceed it
TIMEOUT_S = 30.0


def run(*args: str, env_home: Path) -> tuple[int, dict[str, Any] | None, str]:
    """(exit code, parsed --json envelope or None, stderr) of one bounded CLI run."""
    env = {**os.environ, "BOX_MEMORY_HOME": str(env_home)}
    env.pop("BOX_MEMORY_WORKSPACE", None)
    proc = run_bounded(*args, "--json", env=env, timeout=TIMEOUT_S, memory=MEMORY_LIMIT)
    try:
        envelope = json.loads(proc.stdout)
    except json.JSONDecodeError:
        envelope = None
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, envelope, proc.stderr


@pytest.fixture(autouse=True)
def _close_server_caches() -> Iterator[None]:
    """In-process MemoryServer calls keep recall caches open (as `serve` does): close them after."""
    yield
    from box_memory.recall.cache import close_held

    close_held()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def hws(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "ws"
    assert run("init", "hostile", "--path", str(root), env_home=home)[0] == 0
    rc, env, _ = run(
        "write",
        "The release train leaves on Fridays",
        "--title",
        "Release train",
        "-w",
        str(root),
        env_home=home,
    )
    assert rc == 0, env
    return root


COMMANDS = [
    ("recall", "release"),
    ("write", "Another note", "--title", "Another note"),
    ("status",),
    ("get", "[[Release train]]"),
    ("index-rebuild", "--check"),
]


def _replace(path: Path, how: str) -> None:
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how == "zero":
        path.symlink_to("/dev/zero")
    elif how == "dir":
        path.mkdir()
    else:  # pragma: no cover
        raise AssertionError(how)


def _errors(env: dict[str, Any] | None) -> str:
    return " ".join(e["message"] for e in (env or {}).get("errors", []))


@pytest.mark.parametrize("how", ["zero", "fifo", "dir"])
@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c[0] + ("-check" if "--check" in c else ""))
def test_folder_index_that_is_not_a_regular_file(
    hws: Path, home: Path, how: str, cmd: tuple[str, ...]
) -> None:
    _replace(hws / "memories" / "_index.json", how)
    rc, env, _ = run(*cmd, "-w", str(hws), env_home=home)
    assert env is not None and rc in (0, 1, 6), (rc, env)
    if cmd[0] == "write":
        # Refused before anything is written: the only memory file is the first one.
        said = "outside the workspace" if how == "zero" else "regular file"
        assert rc == 1 and "memories/_index.json" in _errors(env) and said in _errors(env)
        assert "index-rebuild" in _errors(env)
        assert sorted(p.name for p in (hws / "memories").glob("*.md")) == ["note__release-train.md"]
    if cmd[0] == "recall":
        # /dev/zero is reached through a link out of the workspace: the warning names the link.
        said = "outside the workspace" if how == "zero" else "regular file"
        assert any(said in w and "index-rebuild" in w for w in env["warnings"]), env
    if cmd[0] in ("recall", "status"):
        assert rc == 0, env  # a warning, never an abort
    if cmd[0] == "index-rebuild":
        assert rc == 6


@pytest.mark.parametrize("name", ["_box-memory.json", "_index.json"])
@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c[0] + ("-check" if "--check" in c else ""))
def test_config_and_rollup_as_fifo(hws: Path, home: Path, name: str, cmd: tuple[str, ...]) -> None:
    _replace(hws / name, "fifo")
    rc, env, _ = run(*cmd, "-w", str(hws), env_home=home)
    assert env is not None, rc
    if name == "_box-memory.json":
        assert (
            rc == 1
            and _errors(env) == "_box-memory.json is a FIFO (named pipe); box-memory reads only regular files"
        )
    else:
        assert rc in (0, 6), env  # the rollup is derived: readers fall back to the folder indexes


def test_write_with_rollup_fifo_commits_and_releases_the_lock(hws: Path, home: Path) -> None:
    _replace(hws / "_index.json", "fifo")
    rc, env, _ = run("write", "Rollup is a pipe", "--title", "Pipe rollup", "-w", str(hws), env_home=home)
    assert rc == 0, env
    assert (hws / "memories" / "note__pipe-rollup.md").is_file()
    assert not (hws / "_box-memory.lock").exists()


def test_memory_file_as_fifo_is_skipped_by_recall(hws: Path, home: Path) -> None:
    _replace(hws / "memories" / "note__release-train.md", "fifo")
    rc, env, _ = run("recall", "release", "-w", str(hws), env_home=home)
    assert rc == 0 and env is not None
    assert any("note__release-train.md is a FIFO" in w for w in env["warnings"]), env
    rc, env, _ = run("get", "[[Release train]]", "-w", str(hws), env_home=home)
    assert rc == 1 and "is a FIFO" in _errors(env)


def test_oversized_index_is_refused_by_its_cap(tmp_path: Path) -> None:
    big = tmp_path / "_index.json"
    with big.open("wb") as f:
        f.truncate(LIMITS["index"] + 1)  # sparse: no disk used
    with pytest.raises(
        UnreadableFile,
        match=r"^memories/_index.json is larger than the 128 MiB limit for index files \(134217729 bytes\)$",
    ):
        read_regular(big, "index", "memories/_index.json")
    ok = tmp_path / "small.json"
    ok.write_bytes(b"{}")
    assert read_regular(ok, "index") == b"{}"


def test_lock_file_as_fifo_does_not_hang_a_writer(hws: Path, home: Path) -> None:
    os.mkfifo(hws / "_box-memory.lock")
    rc, env, _ = run("write", "Blocked?", "--title", "Lock pipe", "-w", str(hws), env_home=home)
    assert rc == 1 and "_box-memory.lock is a FIFO" in _errors(env), env
    assert not (hws / "memories" / "note__lock-pipe.md").exists()


# --- companions -----------------------------------------------------------------------------


@pytest.fixture
def with_companion(hws: Path, home: Path) -> Path:
    (hws / "files" / "plan.pdf").write_bytes(b"%PDF-1.7 plan")
    rc, env, _ = run("companion", str(hws / "files" / "plan.pdf"), "-w", str(hws), env_home=home)
    assert rc == 0, env
    return hws


@pytest.mark.parametrize("how", ["fifo", "chardev"])
@pytest.mark.parametrize(
    "cmd", [("companion", "--check", "FILE"), ("companion", "--stale"), ("index-rebuild", "--check")]
)
def test_companion_binary_replaced_by_a_non_regular_file(
    with_companion: Path, home: Path, how: str, cmd: tuple[str, ...]
) -> None:
    binary = with_companion / "files" / "plan.pdf"
    binary.unlink()
    if how == "fifo":
        os.mkfifo(binary)
    else:  # a character device (like /dev/null) in place of the binary: not a 0-byte file
        try:
            os.mknod(binary, stat.S_IFCHR | 0o644, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("creating a device node needs privileges")
    args = [str(binary) if a == "FILE" else a for a in cmd]
    rc, env, _ = run(*args, "-w", str(with_companion), env_home=home)
    assert env is not None and rc == (6 if cmd[0] == "companion" else rc), (rc, env)
    if cmd[0] == "index-rebuild":
        rows = env["data"]["stale_companions"]
    elif cmd[1] == "--stale":
        rows = env["data"]["stale"]
    else:
        rows = [env["data"]]
    assert [r["state"] for r in rows] == ["stale"], env
    kind = "a FIFO (named pipe)" if how == "fifo" else "a character device"
    assert rows[0]["error"] == f"files/plan.pdf is {kind}; box-memory reads only regular files"


def test_companion_of_a_folder_is_a_usage_error(hws: Path, home: Path) -> None:
    for args in (("companion", str(hws / "files")), ("companion", "--check", str(hws / "files"))):
        rc, env, _ = run(*args, "-w", str(hws), env_home=home)
        assert rc == 2, env
        assert (
            env is not None
            and env["errors"][0]["message"] == "files is a folder: a companion describes one file"
        )


# --- the MCP server: one slow call cannot hold the others -----------------------------------


def test_server_call_time_limit(hws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading
    import time

    from box_memory.serve import server as srv

    monkeypatch.setenv("BOX_MEMORY_HOME", str(home))
    monkeypatch.setenv("BOX_MEMORY_TOOL_TIMEOUT_S", "1")
    s = srv.MemoryServer(str(hws))
    release = threading.Event()
    holder = threading.Thread(target=lambda: (s._mutex.acquire(), release.wait(10), s._mutex.release()))
    holder.start()  # stands in for a call stuck in a read
    time.sleep(0.1)
    try:
        t0 = time.monotonic()
        result, is_error = s.call("status", {})
        assert is_error and result["errors"][0]["code"] == "busy"
        assert time.monotonic() - t0 < 5
    finally:
        release.set()
        holder.join()
    monkeypatch.setenv("BOX_MEMORY_TOOL_TIMEOUT_S", "120")  # a loaded machine: the real call may be slow
    result, is_error = s.call("status", {})
    assert not is_error, result


def test_server_tool_call_answers_within_the_limit(
    hws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the MCP handler: a call that cannot start (an earlier one is stuck) gets an error."""
    import threading
    import time
    from types import SimpleNamespace

    import anyio

    from box_memory.serve import server as srv

    monkeypatch.setenv("BOX_MEMORY_HOME", str(home))
    monkeypatch.setenv("BOX_MEMORY_TOOL_TIMEOUT_S", "1")
    s = srv.MemoryServer(str(hws))
    release = threading.Event()
    holder = threading.Thread(target=lambda: (s._mutex.acquire(), release.wait(10), s._mutex.release()))
    holder.start()
    time.sleep(0.1)
    try:
        t0 = time.monotonic()
        res = anyio.run(s._on_call_tool, None, SimpleNamespace(name="status", arguments={}))
        assert res.is_error and res.structured_content["errors"][0]["code"] in ("busy", "timeout")
        assert time.monotonic() - t0 < 5
    finally:
        release.set()
        holder.join()
    monkeypatch.setenv("BOX_MEMORY_TOOL_TIMEOUT_S", "120")  # a loaded machine: the real call may be slow
    res = anyio.run(s._on_call_tool, None, SimpleNamespace(name="status", arguments={}))
    assert not res.is_error
