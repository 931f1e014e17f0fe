"""Every command on a cloud workspace gives the same results as on a local one.

`bk` runs each test on a local folder and on a Box folder behind the emulator (default shape).
The transcript tests run one scripted session on both backends and require the normalised
outputs to be identical: the whole session in the default shape, and the core subset in every
alternative answer shape (offset paging, JSON-as-text payloads, numeric ids, all combined), with
listings paged 3 entries at a time.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cloud import scenario
from tests.cloud.conftest import SHAPES, Backend


def _titles(env_data: dict[str, Any]) -> list[str]:
    return [h["title"] for h in env_data["hits"]]


def _differs(local: Any, cloud: Any) -> str:
    return f"{local[0]} differs:\nlocal {json.dumps(local)[:2000]}\ncloud {json.dumps(cloud)[:2000]}"


@pytest.mark.slow
def test_full_session_matches_local(make: Any) -> None:
    local = scenario.normalise(scenario.run_script(make("local")))
    cloud = scenario.normalise(scenario.run_script(make("cloud")))
    assert [s[0] for s in cloud] == [s[0] for s in local]
    for lstep, cstep in zip(local, cloud, strict=True):
        assert cstep == lstep, _differs(lstep, cstep)


@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "cloud"])
@pytest.mark.slow
def test_core_session_matches_local_in_every_shape(make: Any, shape: str) -> None:
    local = scenario.normalise(scenario.run_core(make("local")))
    cloud = scenario.normalise(scenario.run_core(make(shape)))
    for lstep, cstep in zip(local, cloud, strict=True):
        assert cstep == lstep, f"{shape}: " + _differs(lstep, cstep)


def test_init_is_idempotent(bk: Backend) -> None:
    first = bk.init_data
    assert first["existed"] is False
    for part in (
        "memories/",
        "files/",
        "_archive/",
        "memories/_index.json",
        "teams/default/memories/_index.json",
        "README.md",
    ):
        assert part in first["created"]
    assert first["teams"] == ["default"]
    again = bk.init()["data"]
    assert again["existed"] is True and again["created"] == []
    status = bk.data("status")
    assert status["totals"]["entries"] == 0
    assert status["index_health"]["ok"] is True
    assert status["workspace"]["backend"] == ("cloud" if bk.cloud else "local")
    config = json.loads(bk.path("_box-memory.json").read_text())
    if bk.cloud:
        ids = config["folder_ids"]
        assert config["workspace_root_id"] == ids["root"] == bk.spec.removeprefix("box:")
        for key in (
            "memories",
            "files",
            "teams",
            "team_default_root",
            "team_default_memories",
            "team_default_files",
        ):
            assert ids[key].isdigit()
        assert config["tier"] == "enterprise_plus"
        assert config["metadata_template_key"] == "boxMemory"


def test_write_get_and_refusals(bk: Backend) -> None:
    w = bk.data("write", "We decided to use JWT for auth.", "--title", "Auth tokens", "--tag", "auth")
    assert (w["kind"], w["slug"], w["file"]) == (
        "decision",
        "auth-tokens",
        "memories/decision__auth-tokens.md",
    )
    if bk.cloud:
        assert w["file_id"].isdigit()
    for ref in (w["id"], "auth-tokens", "[[Auth tokens]]", "[[auth TOKENS]]"):
        got = bk.data("get", ref)
        assert got["id"] == w["id"] and "We decided to use JWT for auth." in got["body"]
        assert got["frontmatter"]["tags"] == ["auth"]
    before = bk.path("memories/_index.json").read_bytes()
    dup = bk.run("write", "again", "--title", "Auth tokens", code=1)
    assert dup["errors"][0]["code"] == "duplicate"
    bad = bk.run("write", "x", "--title", "a/b", code=2)
    assert bad["errors"][0]["code"] == "invalid_input"
    assert bk.path("memories/_index.json").read_bytes() == before
    both = bk.data("write", "A second view.", "--title", "Auth tokens", "--new-slug")
    assert both["slug"] == "auth-tokens-2"
    # A file that exists but is not indexed yet takes its name: the write takes the next suffix.
    bk.put("memories/note__caching.md", scenario.EXTERNAL.replace("external-note", "caching").encode())
    res = bk.run("write", "Use redis.", "--title", "Caching")
    assert res["data"]["slug"] == "caching-2"
    assert any("repaired drifted index" in w for w in res["warnings"])


def test_supersede_chain_and_history(bk: Backend) -> None:
    b = bk
    a = b.data("write", "We decided to use JWT.", "--title", "Auth tokens")["id"]
    b2 = b.data("write", "We decided to use PASETO.", "--title", "Auth tokens", "--supersedes", a)
    c = b.data("write", "We decided to use PASETO v4.", "--title", "Auth tokens", "--supersedes", b2["id"])
    assert (b2["slug"], c["slug"]) == ("auth-tokens-2", "auth-tokens-3")
    hist = b.data("get", a, "--history")
    assert [h["id"] for h in hist["history"]] == [a, b2["id"], c["id"]]
    assert [h["status"] for h in hist["history"]] == ["superseded", "superseded", "active"]
    assert hist["current_id"] == c["id"]
    assert b.data("recall", "[[Auth tokens]]")["hits"][0]["id"] == c["id"]
    shown = b.data("recall", "Auth tokens", "--include-superseded")
    assert sorted(h["id"] for h in shown["hits"]) == sorted([a, b2["id"], c["id"]])
    assert all(h["current_id"] == c["id"] for h in shown["hits"])
    assert b.data("recall", "Auth tokens")["count"] == 1
    check = b.run("index-rebuild", "--check")
    assert check["data"]["drift"] is False


def test_recall_query_shapes(bk: Backend) -> None:
    b = bk
    jwt = b.data(
        "write",
        "We decided to use JWT; sessions last one hour.",
        "--title",
        "Auth tokens",
        "--tag",
        "auth",
        "--tag",
        "security",
    )
    b.data(
        "write",
        "Redis caches the session lookups.",
        "--title",
        "Session cache",
        "--kind",
        "fact",
        "--tag",
        "perf",
        "--tag",
        "auth",
    )
    b.data(
        "write", "TODO: rotate the signing keys every quarter", "--title", "Rotate keys", "--tag", "security"
    )
    by_id = b.data("recall", jwt["id"])
    assert (by_id["route"], _titles(by_id)) == ("id", ["Auth tokens"])
    if b.cloud:
        by_file = b.data("recall", jwt["file_id"])
        assert (by_file["route"], _titles(by_file)) == ("file_id", ["Auth tokens"])
    wl = b.data("recall", "[[Session cache]]")
    assert (wl["route"], _titles(wl), wl["hits"][0]["matched_on"]) == (
        "wikilink",
        ["Session cache"],
        "wikilink",
    )
    dangling = b.run("recall", "[[Nope]]")
    assert dangling["data"]["dangling"] is True and dangling["data"]["count"] == 0
    assert any("dangling wikilink" in w for w in dangling["warnings"])
    slug = b.data("recall", "rotate-keys")
    assert (slug["route"], _titles(slug)) == ("slug", ["Rotate keys"])
    structured = b.data("recall", "kind:decision tag:auth")
    assert _titles(structured) == ["Auth tokens"]
    tagged = b.data("recall", "tag:auth")
    assert sorted(_titles(tagged)) == ["Auth tokens", "Session cache"]
    text = b.data("recall", "auth")
    assert _titles(text)[:2] == ["Session cache", "Auth tokens"]  # tag match 6 each: newest first
    assert [h["score"] for h in text["hits"][:2]] == [6.0, 6.0]
    body = b.data("recall", "quarter")
    assert _titles(body) == ["Rotate keys"] and body["hits"][0]["matched_on"] == "body"
    full = b.data("recall", "session cache", "--full")
    assert full["full"]["content"].startswith("---\n") and "Redis caches" in full["full"]["content"]
    none = b.run("recall", "zebra")
    assert none["data"]["count"] == 0 and any("no memories match" in w for w in none["warnings"])


def test_index_rebuild_detects_and_repairs(bk: Backend) -> None:
    bk.data("write", "One.", "--title", "First")
    assert bk.run("index-rebuild", "--check")["data"]["drift"] is False
    bk.put("memories/note__external-note.md", scenario.EXTERNAL.encode(), mtime=scenario.EXTERNAL_MTIME)
    bk.put("memories/note__broken.md", b"---\nid: [unclosed\n---\nnot a memory\n")
    drifted = bk.run("index-rebuild", "--check", code=6)["data"]
    assert drifted["drift"] is True
    assert [e["id"] for e in drifted["diff"]["added"]] == ["mem_01HZZZZZZZZZZZZZZZZZZZZZZZ"]
    seen = bk.run("recall", "external")
    assert any("may be stale" in w for w in seen["warnings"])
    fixed = bk.data("index-rebuild")
    assert [o["path"] for o in fixed["orphans"]] == ["memories/note__broken.md"]
    assert bk.path("memories/note__broken.md").exists()  # reported, never deleted
    assert bk.run("index-rebuild", "--check")["data"]["drift"] is False
    assert _titles(bk.data("recall", "external")) == ["External note"]


def test_companion_life_cycle(bk: Backend) -> None:
    bk.put("files/report.pdf", scenario.PDF)
    assert bk.run("companion", "files/report.pdf", "--check", code=6)["data"]["state"] == "missing"
    made = bk.data("companion", "files/report.pdf", "--tag", "q3")
    assert (made["action"], made["path"], made["type"]) == ("created", "files/report.pdf.md", "pdf")
    meta = bk.data("get", made["id"])["frontmatter"]
    cf = meta["companion_for"]
    assert cf["sha256"] == made["sha256"] and cf["local_path"] == "files/report.pdf"
    assert (cf["file_id"] or "").isdigit() == bk.cloud
    assert bk.data("companion", "files/report.pdf", "--check")["state"] == "current"
    assert bk.data("companion", "files/report.pdf")["action"] == "unchanged"
    bk.put("files/report.pdf", scenario.PDF2)
    assert bk.run("companion", "files/report.pdf", "--check", code=6)["data"]["state"] == "stale"
    listed = bk.run("companion", "--stale", code=6)["data"]
    assert [c["id"] for c in listed["stale"]] == [made["id"]]
    again = bk.data("companion", "files/report.pdf")
    assert (again["action"], again["supersedes"]) == ("superseded", made["id"])
    assert again["archived"] == f"_archive/companions/report.pdf.{made['id']}.md"
    assert bk.path(again["archived"]).exists()
    assert bk.data("companion", "files/report.pdf", "--check")["state"] == "current"
    assert bk.run("index-rebuild", "--check")["data"]["drift"] is False


def test_team_create_and_scoped_memories(bk: Backend) -> None:
    made = bk.data("team", "create", "research")
    assert made["existed"] is False and "teams/research/memories/_index.json" in made["created"]
    w = bk.data("write", "Compare three vector stores.", "--title", "Research plan", "--team", "research")
    assert w["file"] == "teams/research/memories/note__research-plan.md"
    assert _titles(bk.data("recall", "team:research")) == ["Research plan"]
    rows = {t["team"]: t for t in bk.data("team", "ls")["teams"]}
    assert rows["research"]["memories"] == 1 and rows["default"]["memories"] == 0
    assert bk.data("team", "create", "research")["existed"] is True
    if bk.cloud:
        ids = json.loads(bk.path("_box-memory.json").read_text())["folder_ids"]
        assert ids["team_research_memories"].isdigit() and ids["team_research_files"].isdigit()


def test_status_reports_the_same_counts(bk: Backend) -> None:
    bk.data("write", "We decided X.", "--title", "X", "--tag", "a")
    bk.data("write", "Fact Y.", "--title", "Y", "--kind", "fact", "--tag", "a")
    bk.put("files/diagram.png", b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    st = bk.data("status")
    assert st["totals"] == {"entries": 2, "memories": 2, "companions": 0, "files": 1}
    assert st["by_kind"] == {"decision": 1, "fact": 1}
    assert st["top_tags"] == [{"tag": "a", "count": 2}]
    assert st["index_health"]["ok"] is True
    assert bk.data("status", "--check-indexes")["index_check"]["drift"] is False
