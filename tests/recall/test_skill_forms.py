"""Recall as the box-recall skill uses it: filters alone, `--id`, `--full`, history, `local_path`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from box_memory.serve.server import MemoryServer
from tests.conftest import Cli

SKILL = Path(__file__).resolve().parents[2] / "skills" / "box-recall" / "SKILL.md"


def _write(cli: Cli, ws: Path, title: str, body: str, *extra: str) -> str:
    env = cli.json("write", body, "--title", title, "--workspace", str(ws), *extra)
    mem_id: str = env["data"]["id"]
    return mem_id


def _seed(cli: Cli, ws: Path) -> dict[str, str]:
    return {
        "sec": _write(
            cli, ws, "Use JWT for auth", "We decided to use JWT.", "--kind", "decision", "--tag", "security"
        ),
        "other": _write(
            cli, ws, "Cache layer", "We decided on Redis.", "--kind", "decision", "--tag", "perf"
        ),
        "note": _write(cli, ws, "Security review notes", "Notes.", "--kind", "note", "--tag", "security"),
    }


def test_filters_alone_are_a_query(cli: Cli, ws: Path) -> None:
    ids = _seed(cli, ws)
    env = cli.json("recall", "--kind=decision", "--tag=security", "--workspace", str(ws))
    assert [h["id"] for h in env["data"]["hits"]] == [ids["sec"]]
    assert env["data"]["route"] == "filter"


def test_no_query_and_no_filter_is_a_usage_error(cli: Cli, ws: Path) -> None:
    env = cli.json("recall", "--workspace", str(ws), code=2)
    assert env["errors"][0]["code"] == "usage_error"
    assert "QUERY" in env["errors"][0]["message"]


def test_id_option_is_the_id_query(cli: Cli, ws: Path) -> None:
    ids = _seed(cli, ws)
    env = cli.json("recall", f"--id={ids['other']}", "--workspace", str(ws))
    assert [h["id"] for h in env["data"]["hits"]] == [ids["other"]]
    assert env["data"]["route"] == "id"
    bad = cli.json("recall", "--id", "not-an-id", "--workspace", str(ws), code=2)
    assert "--id" in bad["errors"][0]["message"]


def test_hits_carry_local_path(cli: Cli, ws: Path) -> None:
    ids = _seed(cli, ws)
    hit = cli.json("recall", ids["sec"], "--workspace", str(ws))["data"]["hits"][0]
    assert hit["local_path"] == hit["path"]
    assert (ws / hit["local_path"]).is_file()


def test_full_answers_what_did_we_decide_in_one_call(cli: Cli, ws: Path) -> None:
    ids = _seed(cli, ws)
    env = cli.json(
        "recall", "what did we decide about auth", "--kind", "decision", "--full", "--workspace", str(ws)
    )
    full = env["data"]["full"]
    assert full["id"] == ids["sec"]
    assert "We decided to use JWT." in full["content"]


def _tool(ws: Path, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    return MemoryServer(str(ws)).call(name, args)


def test_mcp_recall_takes_filters_alone_and_full(cli: Cli, ws: Path) -> None:
    ids = _seed(cli, ws)
    res, err = _tool(ws, "recall", {"kind": "decision", "tags": ["security"]})
    assert not err, res
    assert [h["id"] for h in res["data"]["hits"]] == [ids["sec"]]
    assert res["data"]["hits"][0]["local_path"]
    res, err = _tool(ws, "recall", {"query": "auth", "kind": "decision", "full": True})
    assert not err and res["data"]["full"]["id"] == ids["sec"]
    res, err = _tool(ws, "recall", {})
    assert err and res["exit_code"] == 2


def test_skill_text_names_full_for_decisions_and_history_forms() -> None:
    text = SKILL.read_text(encoding="utf-8")
    assert "What did we decide" in text and "--full" in text and '"full": true' in text
    assert "--include-superseded" in text and "get mem_... --history" in text
    assert "local_path" in text
    assert "box-memory recall --kind decision --tag security" in text
