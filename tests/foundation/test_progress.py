"""Long tasks show a progress bar on stderr, on a terminal only, never under --json or --quiet.

The CLI runs in a real child process whose stderr is a pseudo-terminal (or a pipe, for the
negative cases). `BOX_MEMORY_PROGRESS_AFTER_S=0` shows the bar at once instead of after ~1 s, so
small workspaces suffice.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.recall.helpers import put, reindex


def _run(args: list[str], *, tty: bool, delay: str = "0") -> tuple[int, str]:
    """Exit code and everything the command wrote to stderr."""
    env = {**os.environ, "BOX_MEMORY_PROGRESS_AFTER_S": delay, "COLUMNS": "120"}
    cmd = [sys.executable, "-m", "box_memory", *args]
    if not tty:
        proc = subprocess.run(cmd, env=env, capture_output=True, check=False, timeout=120)
        return proc.returncode, proc.stderr.decode("utf-8", "replace")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    return proc.wait(timeout=120), out.decode("utf-8", "replace")


@pytest.fixture
def filled(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    for n in range(1, 30):
        put(root, f"Progress memory {n}", n=n)
    reindex(root)
    (root / "files" / "big.bin").write_bytes(os.urandom(3 * 2**20))
    return root


def test_bars_on_a_terminal(filled: Path) -> None:
    w = ["-w", str(filled)]
    code, err = _run(["recall", "progress", *w], tty=True)
    assert code == 0 and "Recall cache: reading memory files" in err, err
    code, err = _run(["index-rebuild", *w], tty=True)
    assert code == 0 and "Reading memories/" in err, err
    code, err = _run(["companion", "files/big.bin", "--body", "A binary.", *w], tty=True)
    assert code == 0 and "Hashing files/big.bin" in err, err


@pytest.mark.parametrize(
    ("extra", "tty"), [(["--json"], True), (["--quiet"], True), ([], False)], ids=["json", "quiet", "pipe"]
)
def test_no_bar_under_json_quiet_or_off_a_terminal(filled: Path, extra: list[str], tty: bool) -> None:
    w = ["-w", str(filled)]
    for args in (["recall", "progress"], ["index-rebuild"], ["companion", "files/big.bin", "--check"]):
        code, err = _run([*args, *w, *extra], tty=tty)
        assert code in (0, 6), (args, err)
        assert "Recall cache" not in err and "Reading" not in err and "Hashing" not in err, (args, err)


def test_no_bar_for_a_quick_task(filled: Path) -> None:
    code, err = _run(["recall", "progress", "-w", str(filled)], tty=True, delay="30")
    assert code == 0 and "Recall cache" not in err, err


def test_serve_draws_no_bar_even_on_a_terminal(filled: Path, tmp_path: Path) -> None:
    """A cache build inside a tool call of a server started from a terminal: its stderr is a log."""
    import signal

    import anyio
    from mcp import Client

    from tests.helpers.net import free_port, wait_until_answering

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {**os.environ, "BOX_MEMORY_PROGRESS_AFTER_S": "0", "COLUMNS": "120"}
    leader, follower = pty.openpty()
    argv = ["serve", "--transport", "streamable-http", "--port", str(port), "-w", str(filled)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "box_memory", *argv],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    try:
        wait_until_answering(url, proc)  # type: ignore[arg-type]

        async def main() -> None:
            async with Client(url) as client:
                res = await client.call_tool("recall", {"query": "progress"})
                cache = res.structured_content["data"]["cache"]  # type: ignore[index]
                assert not res.is_error and cache["reread_files"] > 0, cache

        anyio.run(main)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    err = out.decode("utf-8", "replace")
    assert "box-memory MCP server on" in err  # the pty did receive the server's stderr
    assert "Recall cache" not in err, err
