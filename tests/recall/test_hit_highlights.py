"""Every hit carries what a terminal highlights: `highlights`, [start, end) offsets into its
excerpt; an imported hit also carries the Box Brain's own label beside its section. Both in
`--json` and in the MCP tools' answers (the real `serve` over stdio, the real `mcp` client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.server.helpers import call, serve_argv, server_env


def _marked(hit: dict[str, Any]) -> list[str]:
    text = hit["excerpt"]
    spans = hit["highlights"]
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))  # ordered, apart
    return [text[a:b] for a, b in spans]


def _workspace(cli: Any, tmp_path: Path) -> tuple[Path, Path]:
    ws, docs = tmp_path / "ws", tmp_path / "docs"
    cli.json("init", "--path", str(ws))
    body = (
        "Billing runs on Postgres. We kept Postgres after the load test; the café team asked "
        "why postgres-backed queues were dropped: they were not."
    )
    cli.json("write", body, "--title", "Billing database", "--kind", "decision", "-w", str(ws))
    docs.mkdir()
    (docs / "runbook.md").write_text(
        "# Runbook\nRestart the Postgres replica first, then the billing workers.\n", encoding="utf-8"
    )
    cli.json("brain-sync", "--path", str(docs), "-w", str(ws))
    return ws, docs


def test_json_hits_carry_their_highlights_and_brain_hits_their_label(cli: Any, tmp_path: Path) -> None:
    ws, _ = _workspace(cli, tmp_path)
    data = cli.json("recall", "postgres", "-w", str(ws))["data"]
    [hit] = data["hits"]
    assert [m.lower() for m in _marked(hit)] == ["postgres"] * 3  # whole tokens: postgres-backed too
    [doc] = data["brain"]
    assert doc["section"] == "Box Brain (source-backed)" and doc["label"] == "box_brain"
    assert list(doc)[:2] == ["section", "label"]  # the label sits beside the section
    assert [m.lower() for m in _marked(doc)] == ["postgres"]

    # Offsets count characters (code points), so text before the match in another script or
    # with accents does not shift them.
    cafe = cli.json("recall", "café", "-w", str(ws))["data"]["hits"][0]
    assert _marked(cafe) == ["café"]

    # No words, no highlights (a listing by filters).
    listed = cli.json("recall", "--kind", "decision", "-w", str(ws))["data"]["hits"][0]
    assert listed["highlights"] == []


def test_mcp_answers_carry_the_same_highlights_and_label(cli: Any, tmp_path: Path) -> None:
    ws, _ = _workspace(cli, tmp_path)
    expected = cli.json("recall", "billing postgres", "-w", str(ws))["data"]
    argv = serve_argv("--transport", "stdio", "-w", str(ws))
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(), cwd=tmp_path)

    async def main() -> None:
        async with Client(params) as client:
            served = (await call(client, "recall", {"query": "billing postgres"}))["data"]
            assert [h["highlights"] for h in served["hits"]] == [h["highlights"] for h in expected["hits"]]
            assert {m.lower() for m in _marked(served["hits"][0])} == {"billing", "postgres"}
            assert [h["label"] for h in served["brain"]] == ["box_brain"]
            found = (await call(client, "brain_search", {"query": "replica"}))["data"]["hits"]
            assert [h["label"] for h in found] == ["box_brain"]
            assert [m.lower() for m in _marked(found[0])] == ["replica"]

    anyio.run(main)
