"""`box-memory report -o FILE.html`: one self-contained page a reviewer can open anywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from box_memory.audit.report import CSP
from tests.audit.demo import HOSTILE, build
from tests.conftest import Cli


@pytest.fixture
def demo(tmp_path: Path, cli: Cli) -> dict[str, Any]:
    ws = tmp_path / "ws"
    made = build(ws, cli, tmp_path)
    out = tmp_path / "report.html"
    env = cli.json("report", "-o", str(out), "-w", str(ws))
    return {"ws": ws, "out": out, "env": env, **made}


def test_the_page_needs_nothing_but_itself(demo: dict[str, Any]) -> None:
    page = demo["out"].read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert f'content="{CSP}"' in page  # nothing may be fetched, even by mistake
    low = page.lower()
    for banned in ("<script", "<link", "<iframe", "<img", "<object", "<embed", "@import", "http://"):
        assert banned not in low, banned
    assert not re.search(r"<[^>]*\s(src|srcset|poster|data)\s*=", low)  # no tag loads anything
    urls = re.findall(r"https?://[^\s\"'<>]+", page)
    # The only URLs are Box links (anchors, none on a local workspace) and sources shown as text.
    assert all(u.startswith(("https://app.box.com/", "https://example.com/")) for u in urls), urls
    assert 'href="https://example.com' not in page  # a memory's source is shown, never linked
    assert set(re.findall(r"url\(([^)]*)\)", page)) == {"#arrow"}  # arrowheads, in the page


def test_memory_text_is_escaped(demo: dict[str, Any]) -> None:
    page = demo["out"].read_text(encoding="utf-8")
    assert HOSTILE not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;script&gt;" in page
    assert 'onerror="' not in page and "<script>" not in page


def test_the_page_holds_what_a_reviewer_asks_for(demo: dict[str, Any]) -> None:
    d = demo["env"]["data"]
    page = demo["out"].read_text(encoding="utf-8")
    weeks = d["per_week"]["weeks"]
    assert len(weeks) == 12 and sum(w["total"] for w in weeks) >= 38
    assert set(d["per_week"]["agents"]) >= {"claude-code", "codex", "release-bot"}
    bars = sum(1 for w in weeks for n in w["by_agent"].values() if n)
    assert page.count('<rect class="bar"') == bars > 10
    chains = d["chains"]
    assert [len(c) for c in chains] == [2, 3, 2]  # newest extended first
    assert chains[0][-1]["id"] != demo["gateway"]["id"] and chains[0][0]["id"] == demo["gateway"]["id"]
    assert page.count('<rect class="node"') == 7 and page.count('class="edge"') == 4
    decisions = d["recent_decisions"]
    gw = next(x for x in decisions if x["id"] == demo["gateway"]["id"])
    assert gw["agent"] == "claude-code" and gw["sources"] == [
        {"type": "url", "ref": "https://example.com/adr/7"}
    ]
    assert gw["status"] == "superseded" and gw["superseded_by"]
    assert [c["state"] for c in d["stale_companions"]] == ["stale"]
    assert "files/plan.pdf" in page
    assert d["index_health"]["ok"] is True and d["unreadable"] == []
    assert d["brain_candidates"] and all(c["id"] for c in d["brain_candidates"])
    assert any("await review" in s for s in d["summary"])
    assert "Jenkins" in page and "Box Brain candidates awaiting review" in page
    assert demo["env"]["data"]["output"] == str(demo["out"])


def test_bad_output_paths_are_refused_and_nothing_is_written(
    cli: Cli, ws: Path, tmp_path: Path, snap: Any
) -> None:
    before = snap(ws)
    env = cli.json("report", "-o", str(tmp_path / "no" / "such" / "r.html"), "-w", str(ws), code=2)
    assert "does not exist" in env["errors"][0]["message"]
    env = cli.json("report", "-o", str(tmp_path), "-w", str(ws), code=2)
    assert "is a folder" in env["errors"][0]["message"]
    env = cli.json("report", "-o", str(tmp_path / "r.html"), "--weeks", "0", "-w", str(ws), code=2)
    assert "--weeks" in env["errors"][0]["message"] and not (tmp_path / "r.html").exists()
    assert snap(ws) == before
    assert cli.json("report", "-w", str(ws), code=2)["errors"][0]["code"] == "usage_error"


def test_an_empty_workspace_still_makes_a_page(cli: Cli, ws: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    d = cli.json("report", "-o", str(out), "-w", str(ws))["data"]
    assert d["chains"] == [] and "No supersede chains yet." in out.read_text()


def test_a_report_on_box_links_to_box(make: Any, tmp_path: Path) -> None:
    """On a cloud workspace (the emulator over real HTTP) memories link to their Box files."""
    cloud = make("cloud")
    cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens", "--agent", "a")
    out = tmp_path / "r.html"
    d = cloud.data("report", "-o", str(out))
    assert d["workspace"]["url"].startswith("https://app.box.com/folder/")
    (dec,) = d["recent_decisions"]
    assert re.fullmatch(r"https://app\.box\.com/file/\d+", dec["url"])
    assert f'href="{dec["url"]}"' in out.read_text()
