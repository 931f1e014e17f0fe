"""Many writers, one folder, same moment: no write is lost, every file parses, no drift."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from box_memory.format import frontmatter
from tests.integrity.util import ROOT, all_json_parse, bm, bm_json, index

PROCS = 8
EACH = 25


def _ids_on_disk(folder: Path) -> set[str]:
    ids = set()
    for p in folder.glob("*.md"):
        meta, _ = frontmatter.parse(p.read_text(encoding="utf-8"), str(p))
        ids.add(meta["id"])
    return ids


@pytest.mark.slow
def test_eight_processes_writing_25_memories_each_into_one_folder(ws: Path, tmp_path: Path) -> None:
    start = tmp_path / "go"
    env = {
        **os.environ,
        "BOX_MEMORY_LOCK_WAIT_S": "300",  # a loaded CI box must not turn contention into exit 5
        "PYTHONPATH": str(ROOT),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.integrity.writer_driver", str(ws), str(start), str(p), str(EACH)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        for p in range(PROCS)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < PROCS and time.monotonic() < deadline:
        time.sleep(0.01)
    start.touch()  # every writer is past its imports: they all start writing at once
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]

    envelopes = [json.loads(line) for out, _ in outs for line in out.decode().splitlines() if line.strip()]
    assert len(envelopes) == PROCS * EACH
    assert all(e["exit_code"] == 0 for e in envelopes), [e["errors"] for e in envelopes if e["exit_code"]]
    written = {e["data"]["id"] for e in envelopes}
    assert len(written) == PROCS * EACH

    folder = ws / "memories"
    assert len(list(folder.glob("*.md"))) == PROCS * EACH
    assert _ids_on_disk(folder) == written
    idx = index(ws)
    assert len(idx["entries"]) == PROCS * EACH and idx["entry_count"] == PROCS * EACH
    assert {e["id"] for e in idx["entries"]} == written
    assert set(idx["by_id"]) == written
    assert all_json_parse(ws)  # every JSON file in the workspace parses
    assert not (ws / "_box-memory.lock").exists()
    check = bm_json("index-rebuild", "--check", "-w", str(ws))
    assert check["data"]["drift"] is False
    assert check["data"]["diff"] == {"added": [], "removed": [], "changed": []}
    roll = json.loads((ws / "_index.json").read_bytes())
    assert {e["id"] for e in roll["entries"]} == written


def test_concurrent_cold_cli_processes(ws: Path) -> None:
    """Real `python -m box_memory write` processes racing, including two on the same title."""
    env = {**os.environ, "BOX_MEMORY_LOCK_WAIT_S": "120"}
    titles = ["Alpha", "Beta", "Gamma", "Delta", "Same", "Same"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "box_memory", "write", f"Text {i}", "--title", t, "-w", str(ws), "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        for i, t in enumerate(titles)
    ]
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    ok = [r for r in results if r["exit_code"] == 0]
    refused = [r for r in results if r["exit_code"] != 0]
    # Exactly one of the two "Same" writes wins; the other is refused as a duplicate, not lost.
    assert len(ok) == 5 and len(refused) == 1 and refused[0]["errors"][0]["code"] == "duplicate"
    assert {e["id"] for e in index(ws)["entries"]} == {r["data"]["id"] for r in ok}
    assert bm("index-rebuild", "--check", "-w", str(ws)).returncode == 0
