"""status: counts, index health, recent memories, top tags, next steps; read-only."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integrity.util import write_md


def test_status_counts_and_health_on_a_healthy_workspace(cli, ws: Path, snap) -> None:
    cli.json("team", "create", "ops", "-w", str(ws))
    a = cli.json("write", "We decided to use Postgres.", "--title", "DB", "--tag", "db", "-w", str(ws))[
        "data"
    ]
    cli.json("write", "Postgres 16.", "--title", "DB", "--supersedes", a["id"], "--tag", "db", "-w", str(ws))
    cli.json(
        "write",
        "TODO rotate keys",
        "--title",
        "Keys",
        "--tag",
        "ops",
        "--tag",
        "db",
        "--team",
        "ops",
        "-w",
        str(ws),
    )
    cli.json("write", "draft", "--title", "Draft", "--status", "draft", "-w", str(ws))
    (ws / "files" / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n fake")
    cli.json("companion", "files/diagram.png", "-w", str(ws))
    before = snap(ws)
    d = cli.json("status", "-w", str(ws))["data"]
    assert snap(ws) == before  # read-only
    assert d["totals"] == {"entries": 5, "memories": 4, "companions": 1, "files": 1}
    assert d["by_status"] == {"active": 3, "draft": 1, "superseded": 1}
    # the superseding "DB" keeps the decision kind of the memory it replaces
    assert d["by_kind"] == {"companion": 1, "decision": 2, "note": 1, "task": 1}
    assert d["teams"]["ops"]["memories"] == 1 and d["teams"]["default"]["memories"] == 3
    assert d["teams"]["default"]["companions"] == 1 and d["teams"]["default"]["files"] == 1
    assert d["index_health"]["ok"] is True and d["index_health"]["drifted"] == []
    assert d["index_health"]["rollup"]["state"] == "ok" and d["index_health"]["lock"] is None
    assert d["top_tags"][0] == {"tag": "db", "count": 2}  # the superseded memory is not counted
    assert d["recent"][0]["title"] == "Companion — diagram.png" and len(d["recent"]) <= 5
    assert all(r["status"] != "superseded" for r in d["recent"])
    assert any("recall" in s for s in d["next"])
    assert d["workspace"]["default_team"] == "default" and d["workspace"]["companion_layout"] == "sibling"
    full = cli.json("status", "--check-indexes", "-w", str(ws))["data"]
    assert full["index_check"]["drift"] is False and full["index_health"]["ok"] is True


def test_status_reports_drift_problems_and_what_to_run(cli, ws: Path, snap) -> None:
    cli.json("write", "x", "--title", "Indexed", "-w", str(ws))
    write_md(ws / "memories", title="Not indexed")
    (ws / "teams" / "default" / "memories" / "_index.json").write_bytes(b"{broken")
    (ws / "memories" / "_index (1).json").write_bytes(b'{"entries": []}')
    before = snap(ws)
    env = cli.json("status", "-w", str(ws))
    assert snap(ws) == before
    h = env["data"]["index_health"]
    assert h["ok"] is False
    assert h["drifted"] == ["memories/"]
    assert (
        h["problems"][0]["folder"] == "teams/default/memories/"
        and h["problems"][0]["problem"] == "unparseable"
    )
    assert h["conflict_copies"] == ["memories/_index (1).json"]
    assert any("index-rebuild" in s for s in env["data"]["next"])
    assert any("not in its index" in w for w in env["warnings"])
    full = cli.json("status", "--check-indexes", "-w", str(ws))["data"]
    assert full["index_check"]["drift"] is True and full["index_check"]["added"] == 1
    cli.json("index-rebuild", "-w", str(ws))
    after = cli.json("status", "--check-indexes", "-w", str(ws))["data"]
    assert after["index_health"]["ok"] is True and after["totals"]["entries"] == 2


def test_status_shows_a_stale_lock(cli, ws: Path) -> None:
    lock = ws / "_box-memory.lock"
    lock.write_bytes(json.dumps({"writer": "w", "pid": 1, "renewed_at": "2020-01-01T00:00:00Z"}).encode())
    import os

    os.utime(lock, (1_600_000_000, 1_600_000_000))
    d = cli.json("status", "-w", str(ws))["data"]
    assert d["index_health"]["lock"]["stale"] is True and d["index_health"]["lock"]["writer"] == "w"
    assert any("stale write lock" in s for s in d["next"])


def test_status_on_an_empty_workspace_and_no_workspace(cli, ws: Path, tmp_path: Path) -> None:
    d = cli.json("status", "-w", str(ws))["data"]
    assert d["totals"]["entries"] == 0 and any("write" in s for s in d["next"])
    missing = cli.json("status", "-w", str(tmp_path / "nowhere"), code=3)
    assert missing["errors"][0]["code"] == "workspace_not_found"
