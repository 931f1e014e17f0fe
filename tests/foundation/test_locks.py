"""box_memory.locks: the one file lock behind the workspace lock, the token store and brain-sync."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from box_memory import locks
from box_memory.locks import FileLock

REPO = Path(__file__).resolve().parents[2]

HOLD = """
import sys, time
from pathlib import Path
from box_memory.locks import FileLock
lock = FileLock(Path(sys.argv[1]), kernel=True)
assert lock.acquire()
print("held", flush=True)
time.sleep(60)
"""


def _holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


@pytest.mark.skipif(not locks.KERNEL_LOCKS, reason="no kernel locks on this platform")
def test_kernel_lock_is_exclusive_across_processes_and_dies_with_its_holder(tmp_path: Path) -> None:
    path = tmp_path / "a.lock"
    proc = _holder(path)
    try:
        started = time.monotonic()
        assert not FileLock(path, kernel=True, wait=0.2).acquire()
        assert time.monotonic() - started >= 0.2  # it waited before giving up
        assert path.read_text().strip() == str(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        with FileLock(path, kernel=True) as held:  # the OS released it: no staleness to wait out
            assert held
    finally:
        proc.kill()
        proc.wait(10)


def test_lock_file_is_exclusive_and_released(tmp_path: Path) -> None:
    path = tmp_path / "_x.lock"
    first = FileLock(path, kernel=False, stale_after=30, body={"writer": "one"})
    assert first.acquire()
    body = json.loads(path.read_bytes())
    assert body == {"writer": "one", "token": first.token}
    second = FileLock(path, kernel=False, wait=0.1, stale_after=30)
    assert not second.acquire()
    assert second.holder()["writer"] == "one"
    second.release()  # not held: leaves the holder's file alone
    assert path.exists()
    first.release()
    assert not path.exists()


def test_a_stale_lock_file_is_taken_over_and_the_old_holder_leaves_it(tmp_path: Path) -> None:
    path = tmp_path / "_x.lock"
    old = FileLock(path, kernel=False, stale_after=0.3)
    assert old.acquire()
    assert not FileLock(path, kernel=False, stale_after=30).acquire()  # fresh: not taken
    past = time.time() - 10
    os.utime(path, (past, past))
    new = FileLock(path, kernel=False, stale_after=0.3)
    assert new.acquire()
    old.release()  # the file is no longer its own
    assert json.loads(path.read_bytes())["token"] == new.token
    new.release()
    assert not path.exists()


def test_renewed_at_ages_the_lock_and_renewal_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "_x.lock"
    # a recent renewed_at in the body keeps a lock whose mtime is old (a synced copy) ...
    from box_memory.format.model import now_iso

    path.write_text(json.dumps({"renewed_at": now_iso(), "token": "t"}))
    past = time.time() - 100
    os.utime(path, (past, past))
    assert not FileLock(path, kernel=False, stale_after=50).acquire()
    path.write_text(json.dumps({"renewed_at": "2001-01-01T00:00:00Z", "token": "t"}))
    os.utime(path, (past, past))
    lock = FileLock(path, kernel=False, stale_after=50)
    assert lock.acquire()
    lock.release()
    # ... a body marked released is free at once ...
    path.write_text(json.dumps({"released_at": "2026-01-01T00:00:00Z", "token": "t"}))
    lock = FileLock(path, kernel=False, stale_after=1000)
    assert lock.acquire()
    lock.release()
    # ... and a holder that renews is never taken over however long it holds.
    keeper = FileLock(path, kernel=False, stale_after=0.5, renew_every=0.1, body={"renewed_at": ""})
    assert keeper.acquire()
    time.sleep(1.0)
    assert not FileLock(path, kernel=False, wait=0.2, stale_after=0.5).acquire()
    assert json.loads(path.read_bytes())["renewed_at"] != ""
    keeper.release()
    assert not path.exists()
    assert not list(tmp_path.glob(".bm-tmp-*"))


def test_a_missing_folder_is_an_error_not_a_wait(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        FileLock(tmp_path / "gone" / "_x.lock", kernel=False, wait=5).acquire()
