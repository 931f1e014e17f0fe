"""Maps kept up to date incrementally by writes equal maps rebuilt from scratch."""

from __future__ import annotations

import json
import os
from pathlib import Path

from box_memory.workspace.index import INDEX_MAPS, build_maps


def maps_of(path: Path) -> tuple[dict, dict]:
    data = json.loads(path.read_bytes())
    return {k: data[k] for k in INDEX_MAPS}, build_maps(data["entries"])


def test_incremental_maps_match_a_full_rebuild(ws: Path, cli) -> None:
    ids = []
    for i in range(6):
        ids.append(
            cli.json(
                "write",
                f"body {i}",
                "--title",
                f"Note {i % 3}",
                "--new-slug",
                "--tag",
                f"t{i % 2}",
                "-w",
                str(ws),
            )["data"]["id"]
        )
    cli.json("write", "newer", "--title", "Note 0", "--supersedes", ids[0], "-w", str(ws))
    cli.json("write", "todo: task", "--title", "A task", "--kind", "task", "--status", "draft", "-w", str(ws))
    stored, rebuilt = maps_of(ws / "memories" / "_index.json")
    assert stored == rebuilt
    assert stored["by_wikilink"]["Note 0"] != ids[0]


def test_large_rollup_may_lag_and_index_rebuild_refreshes_it(ws: Path, cli) -> None:
    roll = ws / "_index.json"
    cli.json("write", "first", "--title", "First", "-w", str(ws))
    # Pretend the rollup is large and was just refreshed: the next write leaves it as it is.
    data = json.loads(roll.read_bytes())
    data["padding"] = "x" * (1024 * 1024 + 10)
    roll.write_text(json.dumps(data))
    before = roll.read_bytes()
    env = cli.json("write", "second", "--title", "Second", "-w", str(ws))["data"]
    assert roll.read_bytes() == before
    child = json.loads((ws / "memories" / "_index.json").read_bytes())
    assert child["updated_at"] > json.loads(before)["updated_at"]  # readers can see the lag
    # An old rollup is refreshed by the next write; index-rebuild always refreshes it.
    os.utime(roll, (1, 1))
    cli.json("write", "third", "--title", "Third", "-w", str(ws))
    assert env["id"] in {e["id"] for e in json.loads(roll.read_bytes())["entries"]}
