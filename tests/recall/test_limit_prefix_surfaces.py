"""`limit: N` is the first N of the whole answer on the MCP tool and on a Box cloud workspace too
(the cloud one against the Box MCP emulator over real HTTP, tests/cloud/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from box_memory.format.ids import slugify
from box_memory.serve.server import MemoryServer
from tests.cloud import conftest as cloud
from tests.cloud.conftest import Backend
from tests.conftest import Cli
from tests.recall.helpers import put, reindex

box_server, emu, make = cloud.box_server, cloud.emu, cloud.make  # the cloud tests' fixtures
STAMP = "2026-03-01T10:00:00.000Z"  # one import: every note stamped alike


def _notes(root: Path, count: int) -> None:
    for n in range(1, count + 1):
        title = ["Deploy canary", "Canary deploy steps", "Rollback plan"][n % 3]
        put(root, title, "deploy canary steps", n=n, slug=f"{slugify(title)}-{n}", updated=STAMP)


def test_the_mcp_recall_tool_answers_the_first_n(tmp_path: Path, cli: Cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    _notes(root, 60)
    reindex(root)
    server = MemoryServer(str(root))

    def ids(query: str, limit: int | None) -> list[str]:
        args: dict[str, Any] = {"query": query, "brain": False}
        if limit is not None:
            args["limit"] = limit
        result, failed = server.call("recall", args)
        assert not failed, result
        return [h["id"] for h in result["data"]["hits"]]

    for query in ("deploy canary", "Deploy canary", "rollback", "canary steps"):
        whole = ids(query, 200)
        assert len(whole) > 10
        assert ids(query, None) == whole[:10]  # the default listing is the top 10 too
        for limit in (1, 2, 3, 7, 19, len(whole)):
            assert ids(query, limit) == whole[:limit], (query, limit)


def test_a_cloud_workspace_answers_the_first_n(make: Any) -> None:
    b: Backend = make("cloud")
    _notes(b.root, 30)  # placed in Box behind the tool's back, then indexed
    b.run("index-rebuild")
    for query in ("deploy canary", "Rollback plan", "canary"):
        whole = [h["id"] for h in b.data("recall", query, "--no-brain", "--limit", "100")["hits"]]
        assert len(whole) > 5, query
        for limit in (1, 2, 5, len(whole) - 1):
            part = [h["id"] for h in b.data("recall", query, "--no-brain", "--limit", str(limit))["hits"]]
            assert part == whole[:limit], (query, limit)
