"""Reads that hang: Box Drive serves an online-only file on demand, and its first read waits while
the file downloads - for a long time, or forever when the network is gone.

Linux has no Box Drive, so the folder is a fake HOME's `Box` on a simulated macOS (what
`paths.box_drive_roots` finds with Box Drive's data folder beside it: reads there are timed exactly
as on macOS and Windows) and the test hook
BOX_MEMORY_HANG_READ=<path suffix>[:<seconds>] stalls the read of one file inside a real
`box-memory` process. Every command must end in bounded time, say which file was not read, keep
every other result and change nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from box_memory import settings
from box_memory.format import safeio

TIMEOUT = 1.5


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "Box").mkdir(parents=True)
    (home / "Library" / "Application Support" / "Box" / "Box").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("BOX_MEMORY_PLATFORM", "darwin")
    monkeypatch.delenv("USERPROFILE", raising=False)
    return home


def bm(*args: str, hang: str = "", timeout: float = TIMEOUT) -> tuple[int, dict[str, Any], float]:
    env = {**os.environ, "BOX_MEMORY_HANG_READ": hang, "BOX_MEMORY_READ_TIMEOUT_S": str(timeout)}
    started = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "box_memory", *args, "--json"],
        check=False,
        capture_output=True,
        env=env,
        timeout=120,
    )
    took = time.monotonic() - started
    assert "Traceback" not in res.stderr.decode(), res.stderr.decode()
    return res.returncode, json.loads(res.stdout), took


@pytest.fixture
def ws(home: Path) -> Path:
    root = home / "Box" / "ws"
    assert bm("init", "--path", str(root))[0] == 0
    for title in ("Alpha", "Beta", "Gamma"):
        code, _, _ = bm("write", f"{title} notes on the kestrel launch", "--title", title, "-w", str(root))
        assert code == 0
    return root


def hits(env: dict[str, Any]) -> list[str]:
    return sorted(h["title"] for h in env["data"]["hits"])


def test_recall_warns_about_a_hanging_file_keeps_the_others_and_reads_it_next_time(ws, snap):
    before = snap(ws)
    code, env, took = bm("recall", "kestrel", "-w", str(ws), hang="memories/note__beta.md")
    assert code == 0, env
    assert took < 30  # the read hangs for an hour
    assert hits(env) == ["Alpha", "Gamma"]  # Beta matches only by its body, which was not read
    late = [w for w in env["warnings"] if "memories/note__beta.md" in w]
    assert len(late) == 1 and f"was not read within {TIMEOUT:g}s" in late[0]
    assert "Box Drive may still be downloading it" in late[0]
    assert snap(ws) == before
    # Once Box Drive has the file, the next recall reads it (the cache did not keep it as empty).
    code, env, _ = bm("recall", "kestrel", "-w", str(ws))
    assert code == 0 and env["warnings"] == []
    assert hits(env) == ["Alpha", "Beta", "Gamma"]


def test_recall_still_finds_a_hanging_memory_by_its_index_entry(ws):
    code, env, _ = bm("recall", "Beta", "-w", str(ws), hang="memories/note__beta.md")
    assert code == 0
    assert hits(env) == ["Beta"]
    assert [w for w in env["warnings"] if "note__beta.md was not read" in w]


def test_get_of_a_hanging_file_fails_in_bounded_time_with_one_line(ws, snap):
    before = snap(ws)
    code, env, took = bm("get", "beta", "-w", str(ws), hang="memories/note__beta.md")
    assert code == 4, env  # cli.md: backend unavailable (Box Drive did not deliver)
    assert took < 30
    err = env["errors"][0]
    assert err["code"] == "read_timeout"
    assert err["message"] == (
        f"memories/note__beta.md was not read within {TIMEOUT:g}s: Box Drive may still be "
        "downloading it (an online-only file) or be offline"
    )
    assert snap(ws) == before


def test_a_write_whose_index_hangs_changes_nothing_and_releases_the_lock(ws, snap):
    before = snap(ws)
    code, env, took = bm(
        "write", "Delta body", "--title", "Delta", "-w", str(ws), hang="memories/_index.json"
    )
    assert code == 4, env
    assert took < 30
    assert env["errors"][0]["code"] == "read_timeout"
    assert "memories/_index.json" in env["errors"][0]["message"]
    assert snap(ws) == before
    assert not (ws / "_box-memory.lock").exists()


def test_index_rebuild_leaves_the_folder_alone_when_a_file_hangs(ws, snap):
    before = snap(ws)
    code, env, took = bm("index-rebuild", "-w", str(ws), hang="memories/note__beta.md")
    assert code == 0, env
    assert took < 30
    assert env["data"]["orphans"] == []
    assert [u for u in env["data"]["unreadable"] if "note__beta.md was not read within" in u]
    assert [w for w in env["warnings"] if w.startswith("memories/ not rebuilt") and "note__beta.md" in w]
    after = snap(ws)
    kept = [k for k in before if k.endswith(".md") or k == "memories/_index.json"]
    assert {k: after.get(k) for k in kept} == {k: before[k] for k in kept}  # not rewritten without Beta
    code, env, _ = bm("index-rebuild", "--check", "-w", str(ws), hang="memories/note__beta.md")
    assert code == 0, env  # not reported as a removal


def test_status_reports_a_hanging_rollup_as_unreadable(ws):
    code, env, took = bm("status", "-w", str(ws), hang="ws/_index.json")
    assert code == 0, env
    assert took < 30
    roll = env["data"]["index_health"]["rollup"]
    assert roll["state"] == "unreadable" and "_index.json was not read within" in roll["detail"]


def test_brain_sync_of_a_local_source_skips_a_hanging_file_and_takes_it_next_run(home, ws):
    src = home / "Box" / "docs"
    src.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (src / name).write_text(f"{name}: the kestrel launch plan\n")
    code, env, took = bm("brain-sync", "--path", str(src), hang="docs/b.md")
    assert code == 0, env
    assert took < 30
    run = env["data"]["runs"][0]
    assert run["status"] == "partial"
    by_id = {i["id"]: i for i in run["items"]}
    assert by_id["a.md"]["status"] == by_id["c.md"]["status"] == "indexed"
    assert by_id["b.md"]["status"] == "skipped"
    assert "was not read within" in by_id["b.md"]["reason"] and "Box Drive" in by_id["b.md"]["reason"]
    code, env, _ = bm("brain-sync", "--path", str(src))
    run = env["data"]["runs"][0]
    assert code == 0 and run["status"] == "completed"
    assert run["counts"]["indexed"] == 1 and run["counts"]["unchanged"] == 2


@pytest.mark.slow
def test_many_hanging_files_end_the_command_in_bounded_time(home):
    root = home / "Box" / "many"
    assert bm("init", "--path", str(root))[0] == 0
    for i in range(14):
        assert (
            bm("write", f"Memo {i} about the kestrel launch", "--title", f"Memo {i}", "-w", str(root))[0] == 0
        )
    hung = [f"memories/note__memo-{i}.md" for i in range(12)]
    code, env, took = bm("recall", "kestrel", "-w", str(root), hang=",".join(hung), timeout=2)
    assert code == 0, env
    # One read waits 2 s, the next three too (fewer than 4 stuck), the other eight 0.5 s each
    # (4 or more stuck): about 12 s, where twelve full waits would be 24 s.
    assert took < 20, took
    assert hits(env) == ["Memo 12", "Memo 13"]  # files that are there are still read
    for path in hung:
        assert len([w for w in env["warnings"] if path in w and "Box Drive" in w]) == 1
    assert len([w for w in env["warnings"] if "was not read within 0.5s" in w]) == 8


def test_reads_stop_being_started_while_64_are_stuck_and_resume_when_they_return(monkeypatch):
    monkeypatch.setenv("BOX_MEMORY_READ_TIMEOUT_S", "0.01")
    readers = safeio._Readers()
    monkeypatch.setattr(safeio, "_readers", readers)
    gate = threading.Event()
    for i in range(safeio.MAX_STUCK):
        with pytest.raises(safeio.ReadTimedOut, match=f"file{i} was not read within 0.01s"):
            safeio._timed(gate.wait, (), f"file{i}")
    started = time.monotonic()
    with pytest.raises(safeio.ReadTimedOut, match="64 earlier reads are still waiting for Box Drive"):
        safeio._timed(gate.wait, (), "one more")
    assert time.monotonic() - started < 0.01 + 0.5  # refused at once
    workers = _reader_threads()
    gate.set()  # Box Drive delivers: the stuck reads return and their threads are reused
    deadline = time.monotonic() + 10
    while readers.stuck and time.monotonic() < deadline:
        time.sleep(0.01)
    assert readers.stuck == 0
    monkeypatch.setenv("BOX_MEMORY_READ_TIMEOUT_S", "5")
    assert [safeio._timed(str, (i,), "x") for i in range(100)] == [str(i) for i in range(100)]
    assert _reader_threads() == workers


def test_a_slow_download_within_the_timeout_is_simply_read(ws):
    code, env, took = bm("recall", "kestrel", "-w", str(ws), hang="memories/note__beta.md:0.5", timeout=20)
    assert code == 0 and env["warnings"] == []
    assert hits(env) == ["Alpha", "Beta", "Gamma"]
    assert took >= 0.5


def test_a_timeout_of_zero_waits_for_the_read(ws):
    code, env, took = bm("recall", "kestrel", "-w", str(ws), hang="memories/note__beta.md:2", timeout=0)
    assert code == 0 and env["warnings"] == []
    assert hits(env) == ["Alpha", "Beta", "Gamma"]
    assert took >= 2


def test_a_hanging_binary_never_stalls_companion_status_or_recall(ws, snap):
    binary = ws / "files" / "plan.pdf"
    binary.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40)
    hang = "files/plan.pdf"
    code, env, took = bm("companion", "files/plan.pdf", "-w", str(ws), hang=hang)
    assert code == 4, env  # hashing needs the binary: nothing is written without it
    assert took < 30
    assert env["errors"][0]["code"] == "read_timeout" and "files/plan.pdf" in env["errors"][0]["message"]
    assert not (ws / "files" / "plan.pdf.md").exists()
    code, env, _ = bm("companion", "files/plan.pdf", "-w", str(ws))
    assert code == 0, env
    data = bytearray(binary.read_bytes())
    data[100] ^= 1
    binary.write_bytes(bytes(data))  # same size, changed: the next check must hash it again
    os.utime(binary, (time.time() + 5, time.time() + 5))
    before = snap(ws)
    code, env, took = bm("status", "-w", str(ws), hang=hang)
    assert code == 0, env
    assert took < 30
    comps = env["data"]["companions"]
    assert comps["stale"] == 0  # not known to be stale
    assert [p for p in comps["problems"] if "files/plan.pdf was not read within" in p]
    code, env, took = bm("recall", "plan.pdf", "-w", str(ws), hang=hang)
    assert code == 0, env
    assert took < 30
    assert [h["title"] for h in env["data"]["hits"]] == ["Companion \u2014 plan.pdf"]
    code, env, took = bm("companion", "files/plan.pdf", "--check", "-w", str(ws), hang=hang)
    assert code == 4, env  # not known to be stale: Box Drive did not deliver the binary
    assert took < 30
    assert snap(ws) == before


def test_import_from_box_drive_skips_a_hanging_note_in_detection_and_reading(home, tmp_path):
    src = home / "Box" / "notes"
    src.mkdir()
    for i in (1, 2, 3):
        (src / f"n{i}.md").write_text(f"# Note {i}\n\nabout the kestrel launch {i}\n")
    root = tmp_path / "ws"
    assert bm("init", "--path", str(root))[0] == 0
    code, env, took = bm("import", str(src), "-w", str(root), hang="notes/n2.md")  # no --from: detected
    assert code == 0, env
    assert took < 30
    assert env["data"]["format"] == "markdown" and env["data"]["imported"] == 2
    assert [w for w in env["warnings"] if "n2.md was not read within" in w]
    assert sorted(p.name for p in (root / "memories").glob("*.md")) == ["note__note-1.md", "note__note-3.md"]


def _reader_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "box-memory-read")


def test_only_files_in_box_drive_are_read_on_a_worker_thread(tmp_path, home, monkeypatch):
    monkeypatch.setattr(safeio, "_readers", None)
    monkeypatch.setattr(safeio, "_in_box_drive", {})
    outside = tmp_path / "elsewhere.md"
    outside.write_bytes(b"plain")
    inside = home / "Box" / "inside.md"
    inside.write_bytes(b"in box")
    before = _reader_threads()
    for _ in range(50):
        assert safeio.read_regular(outside, "memory") == b"plain"
    assert safeio._readers is None and _reader_threads() == before  # no thread, no hand-off
    for _ in range(50):
        assert safeio.read_regular(inside, "memory") == b"in box"
    assert safeio._readers is not None
    assert _reader_threads() == before + 1  # one worker, kept between reads


def test_a_placeholder_outside_the_box_drive_folders_is_read_timed(tmp_path, home, monkeypatch):
    # The placeholder flags exist only on macOS (st_flags) and Windows (st_file_attributes);
    # here the platform's answer is replaced - the one stand-in in this file.
    monkeypatch.setattr(safeio, "_readers", None)
    monkeypatch.setattr(safeio, "_NOT_LOCAL_FLAGS", True)
    monkeypatch.setattr(safeio, "_not_local", lambda st: True)
    f = tmp_path / "online-only.md"
    f.write_bytes(b"remote")
    assert safeio.read_regular(f, "memory") == b"remote"
    assert safeio._readers is not None


@pytest.mark.parametrize(
    ("st", "remote"),
    [
        (SimpleNamespace(st_flags=0x40000000), True),  # macOS SF_DATALESS
        (SimpleNamespace(st_flags=0x00000020), False),  # macOS UF_COMPRESSED: local
        (SimpleNamespace(st_file_attributes=0x00400000), True),  # RECALL_ON_DATA_ACCESS
        (SimpleNamespace(st_file_attributes=0x00040000), True),  # RECALL_ON_OPEN
        (SimpleNamespace(st_file_attributes=0x00001000), True),  # OFFLINE
        (SimpleNamespace(st_file_attributes=0x00000020 | 0x00080000), False),  # ARCHIVE | PINNED
        (SimpleNamespace(), False),  # Linux: neither field
    ],
)
def test_placeholder_flags(st, remote):
    assert safeio._not_local(st) is remote  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("", 30.0), ("2.5", 2.5), ("0", 0.0), ("-1", 30.0), ("nan", 30.0), ("inf", 30.0), ("soon", 30.0)],
)
def test_the_timeout_setting(monkeypatch, value, expected):
    monkeypatch.setenv("BOX_MEMORY_READ_TIMEOUT_S", value)
    assert settings.read_timeout_s() == expected


def test_an_excerpt_never_waits_for_a_file_box_drive_has_to_download(ws, snap):
    """The recall cache keeps no bodies: excerpts are read back from the files. A hit whose file
    hangs (evicted to the cloud after the cache was built) comes at once, without an excerpt."""
    code, env, _ = bm("recall", "kestrel", "-w", str(ws))  # builds the cache: every file read
    assert code == 0 and hits(env) == ["Alpha", "Beta", "Gamma"]
    before = snap(ws)
    code, env, took = bm("recall", "kestrel", "-w", str(ws), hang="memories/note__beta.md:60", timeout=30)
    assert code == 0, env
    assert took < 15  # the read would hang for 60 s and the read timeout is 30 s
    excerpts = {h["title"]: h["excerpt"] for h in env["data"]["hits"]}
    assert set(excerpts) == {"Alpha", "Beta", "Gamma"}  # found through the cache all the same
    assert excerpts["Beta"] == "" and "kestrel" in excerpts["Alpha"] and "kestrel" in excerpts["Gamma"]
    assert snap(ws) == before
