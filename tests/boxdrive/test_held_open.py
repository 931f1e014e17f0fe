"""Files held open by someone else: replaces retry then fail cleanly, reads warn per file.

Windows refuses to replace a file that Box Drive, an editor or an antivirus holds open (a
sharing violation), and macOS File Provider can fail the first read of a file not downloaded
yet. Linux has neither, so the test hooks BOX_MEMORY_FAIL_REPLACE / BOX_MEMORY_FAIL_READ
(`<path suffix>:<n>`) make the first n replaces or reads of a file raise PermissionError, in a
real `box-memory` process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest


def bm(*args: str, fail_replace: str = "", fail_read: str = "") -> tuple[int, dict[str, Any]]:
    env = {**os.environ, "BOX_MEMORY_FAIL_REPLACE": fail_replace, "BOX_MEMORY_FAIL_READ": fail_read}
    cmd = [sys.executable, "-m", "box_memory", *args, "--json"]
    res = subprocess.run(cmd, check=False, capture_output=True, env=env, timeout=120)
    assert "Traceback" not in res.stderr.decode(), res.stderr.decode()
    return res.returncode, json.loads(res.stdout)


def leftovers(root: Path) -> list[str]:
    names = (".bm-tmp-", "_box-memory.lock")
    return [str(p.relative_to(root)) for p in root.rglob("*") if p.name.startswith(names)]


@pytest.fixture
def ws(tmp_path: Path, cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    cli.json("write", "first body", "--title", "First", "-w", str(root))
    return root


def test_a_replace_refused_a_few_times_is_retried_and_succeeds(ws):
    fault = "memories/_index.json:3"
    started = time.monotonic()
    code, env = bm("write", "second body", "--title", "Second", "-w", str(ws), fail_replace=fault)
    assert code == 0, env
    assert time.monotonic() - started >= 0.05 + 0.1 + 0.2  # three back-off waits, then success
    assert env["warnings"] == []
    idx = json.loads((ws / "memories" / "_index.json").read_bytes())
    assert env["data"]["id"] in {e["id"] for e in idx["entries"]}
    assert leftovers(ws) == []


def test_an_index_held_open_for_good_leaves_it_whole_and_the_memory_written(ws):
    before = (ws / "memories" / "_index.json").read_bytes()
    fault = "memories/_index.json:99"
    code, env = bm("write", "second body", "--title", "Second", "-w", str(ws), fail_replace=fault)
    assert code == 0, env  # the memory file is committed: the index is derived state
    busy = [w for w in env["warnings"] if "could not be replaced" in w]
    assert len(busy) == 1 and "memories/_index.json" in busy[0] and "index-rebuild" in busy[0]
    assert (ws / "memories" / "_index.json").read_bytes() == before  # old bytes, never half-written
    assert (ws / env["data"]["file"]).is_file()
    assert leftovers(ws) == []  # temp file removed, lock released
    # Once the file is free, the next write repairs the index: nothing was lost.
    code, nxt = bm("write", "third body", "--title", "Third", "-w", str(ws))
    assert code == 0
    idx = json.loads((ws / "memories" / "_index.json").read_bytes())
    assert {env["data"]["id"], nxt["data"]["id"]} <= {e["id"] for e in idx["entries"]}


def test_a_config_held_open_fails_the_command_cleanly(ws):
    before = (ws / "_box-memory.json").read_bytes()
    code, env = bm("team", "create", "ops", "-w", str(ws), fail_replace="_box-memory.json:99")
    assert code == 1
    assert env["errors"][0]["code"] == "file_busy"
    assert "_box-memory.json could not be replaced after 6 tries" in env["errors"][0]["message"]
    assert (ws / "_box-memory.json").read_bytes() == before
    assert leftovers(ws) == []


def test_a_read_refused_a_few_times_is_retried(ws, cli):
    path = next((ws / "memories").glob("note__*.md")).name
    started = time.monotonic()
    code, env = bm("recall", "first", "-w", str(ws), fail_read=f"{path}:2")
    assert code == 0 and env["warnings"] == []
    assert time.monotonic() - started >= 0.05 + 0.1  # two back-off waits, then the read
    assert env["data"]["hits"][0]["title"] == "First"


@pytest.mark.slow
def test_a_file_that_cannot_be_read_is_a_warning_never_a_failure_an_orphan_or_a_deletion(ws, snap):
    path = next((ws / "memories").glob("note__*.md")).name
    held = f"{path}:999"
    code, env = bm("recall", "first", "-w", str(ws), fail_read=held)
    assert code == 0
    assert [w for w in env["warnings"] if path in w and "could not be read" in w]
    code, env = bm("status", "-w", str(ws), fail_read="memories/_index.json:999")
    assert code == 0
    assert env["data"]["index_health"]["problems"][0]["problem"] == "unreadable"
    before = snap(ws)
    code, env = bm("index-rebuild", "-w", str(ws), fail_read=held)
    assert code == 0, env
    assert env["data"]["orphans"] == []
    assert [u for u in env["data"]["unreadable"] if path in u]
    assert [w for w in env["warnings"] if "not rebuilt" in w and path in w]
    after = snap(ws)
    kept = [k for k in before if k.endswith(".md") or k == "memories/_index.json"]
    assert {k: after.get(k) for k in kept} == {k: before[k] for k in kept}  # nothing lost or rewritten
    code, env = bm("index-rebuild", "--check", "-w", str(ws), fail_read=held)
    assert code == 0, env


def test_recall_reads_a_file_again_once_it_can_be_read(ws):
    path = next((ws / "memories").glob("note__*.md")).name
    code, env = bm("recall", "body", "-w", str(ws), fail_read=f"{path}:999")
    assert code == 0 and env["data"]["hits"] == []  # "body" is only in the file, not in its index entry
    assert [w for w in env["warnings"] if path in w and "could not be read" in w]
    code, env = bm("recall", "body", "-w", str(ws))
    assert code == 0 and env["warnings"] == []
    assert [h["title"] for h in env["data"]["hits"]] == ["First"]
