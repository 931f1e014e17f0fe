"""init / write / get through the real CLI on temporary folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from box_memory.format import frontmatter


def read_index(root: Path, folder: str = "memories") -> dict:
    return json.loads((root / folder / "_index.json").read_bytes())


def test_init_creates_layout_and_is_idempotent(tmp_path: Path, cli, snap) -> None:
    root = tmp_path / "w"
    env = cli.json("init", "--path", str(root), "--team", "platform")
    assert env["command"] == "init" and env["status"] == "ok"
    assert env["data"]["existed"] is False
    for rel in (
        "_box-memory.json",
        "_index.json",
        "README.md",
        "memories/_index.json",
        "files/_index.json",
        "teams/default/memories/_index.json",
        "teams/platform/memories/_index.json",
        "teams/platform/files/_index.json",
    ):
        assert (root / rel).is_file(), rel
    cfg = json.loads((root / "_box-memory.json").read_bytes())
    assert cfg["teams"] == ["default", "platform"]
    assert cfg["settings"]["companion_layout"] == "sibling"
    roll = json.loads((root / "_index.json").read_bytes())
    assert {c["folder_path"] for c in roll["child_indexes"]} >= {"memories/", "teams/platform/memories/"}

    cli.json("write", "keep me", "--title", "Kept", "-w", str(root))
    before = snap(root)
    again = cli.json("init", "--path", str(root), "--team", "platform")
    assert again["data"]["existed"] is True and again["data"]["created"] == []
    after = snap(root)
    # Re-running changes nothing but the rollup's timestamp.
    assert {k: v for k, v in before.items() if k != "_index.json"} == {
        k: v for k, v in after.items() if k != "_index.json"
    }
    assert read_index(root)["entry_count"] == 1


def test_init_makes_default_workspace(tmp_path: Path, cli, monkeypatch) -> None:
    root = tmp_path / "w"
    cli.json("init", "--path", str(root))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    env = cli.json("write", "from anywhere", "--title", "Anywhere")
    assert (root / env["data"]["file"]).is_file()


def test_folder_layout_creates_companions_folder(tmp_path: Path, cli) -> None:
    root = tmp_path / "w"
    cli.json("init", "--path", str(root), "--layout", "folder")
    assert (root / "companions" / "_index.json").is_file()


def test_write_get_round_trip_every_field(ws: Path, cli) -> None:
    env = cli.json(
        "write",
        "We decided to use JWT.\n\nMobile clients cannot keep cookies.",
        "--title",
        "JWT vs Sessions Decision",
        "--tag",
        "auth",
        "--tag",
        "Auth/JWT",
        "--related",
        "[[Login Flow]]",
        "--related",
        "Session Pattern",
        "--confidence",
        "0.9",
        "--agent",
        "claude-code",
        "--source",
        "url:https://example.com/rfc",
        "--source",
        "box_file:1722847291673",
        "--status",
        "draft",
        "-w",
        str(ws),
    )
    d = env["data"]
    assert d["kind"] == "decision"  # inferred from "We decided"
    assert d["id"].startswith("mem_") and len(d["id"]) == 30
    assert d["file"] == "memories/decision__jwt-vs-sessions-decision.md"
    got = cli.json("get", d["id"], "-w", str(ws))["data"]
    fm = got["frontmatter"]
    assert fm["id"] == d["id"]
    assert fm["slug"] == "jwt-vs-sessions-decision"
    assert fm["title"] == "JWT vs Sessions Decision"
    assert fm["kind"] == "decision"
    assert fm["status"] == "draft"
    assert fm["team"] == "default"
    assert fm["agent"] == "claude-code"
    assert fm["confidence"] == 0.9
    assert fm["tags"] == ["auth", "auth/jwt"]
    assert fm["related"] == ["[[Login Flow]]", "[[Session Pattern]]"]
    assert fm["sources"] == [
        {"type": "url", "ref": "https://example.com/rfc"},
        {"type": "box_file", "ref": "1722847291673"},
    ]
    assert fm["created_at"].endswith("Z") and fm["updated_at"] == fm["created_at"]
    assert "superseded_by" not in fm and "expires_at" not in fm  # optional fields omitted, not null
    assert got["body"].startswith("\n# JWT vs Sessions Decision\n")
    assert "Mobile clients cannot keep cookies." in got["body"]
    # get by [[Title]], case-insensitive title, and slug resolve to the same memory
    for ref in ("[[JWT vs Sessions Decision]]", "[[jwt vs sessions decision]]", "jwt-vs-sessions-decision"):
        assert cli.json("get", ref, "-w", str(ws))["data"]["id"] == d["id"]
    idx = read_index(ws)
    assert idx["entry_count"] == 1
    e = idx["entries"][0]
    assert idx["by_id"] == {d["id"]: 0}
    assert idx["by_slug"] == {"jwt-vs-sessions-decision": d["id"]}
    assert idx["by_wikilink"] == {"JWT vs Sessions Decision": d["id"]}
    assert idx["by_kind"] == {"decision": [d["id"]]}
    assert idx["by_tag"] == {"auth": [d["id"]], "auth/jwt": [d["id"]]}
    assert idx["by_status"] == {"draft": [d["id"]]}
    assert idx["by_companion_for"] == {}
    assert e["filename"] == "decision__jwt-vs-sessions-decision.md"
    assert e["size_bytes"] == (ws / d["file"]).stat().st_size
    roll = json.loads((ws / "_index.json").read_bytes())
    assert roll["by_id"] == {d["id"]: 0}
    assert roll["entries"][0]["folder_path"] == "memories/"


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        ("We will use Postgres for the ledger", "decision"),
        ("We chose Rust for the agent", "decision"),
        ("TODO: rotate the keys", "task"),
        ("We need to migrate the bucket", "task"),
        ("- [ ] ship it\n- [ ] announce", "task"),
        ("The build takes nine minutes", "note"),
    ],
)
def test_kind_inference(ws: Path, cli, content: str, kind: str) -> None:
    env = cli.json("write", "-", "--title", "K " + kind, "-w", str(ws), input=content)
    assert env["data"]["kind"] == kind


def test_write_from_stdin(ws: Path, cli) -> None:
    env = cli.json(
        "write", "-", "--title", "From stdin", "--kind", "fact", "-w", str(ws), input="piped text\n"
    )
    body = cli.json("get", env["data"]["id"], "-w", str(ws))["data"]["body"]
    assert "piped text" in body


def test_supersede_chain_and_history_from_any_member(ws: Path, cli) -> None:
    a = cli.json("write", "v1", "--title", "Auth strategy", "--kind", "decision", "-w", str(ws))["data"]
    b = cli.json(
        "write",
        "v2",
        "--title",
        "Auth strategy",
        "--kind",
        "decision",
        "--supersedes",
        a["id"],
        "-w",
        str(ws),
    )["data"]
    c = cli.json(
        "write",
        "v3",
        "--title",
        "Auth strategy v3",
        "--kind",
        "decision",
        "--supersedes",
        b["id"],
        "-w",
        str(ws),
    )["data"]
    assert b["slug"] == "auth-strategy-2"  # same title -> its own file, next suffix
    assert c["slug"] == "auth-strategy-v3"
    for member in (a, b, c):
        got = cli.json("get", member["id"], "--history", "-w", str(ws))["data"]
        assert [h["id"] for h in got["history"]] == [a["id"], b["id"], c["id"]]
        assert [h["status"] for h in got["history"]] == ["superseded", "superseded", "active"]
        if member is not c:
            assert got["current_id"] == c["id"]
    old = frontmatter.parse((ws / a["file"]).read_text())[0]
    assert old["status"] == "superseded" and old["superseded_by"] == b["id"] and old["id"] == a["id"]
    assert old["updated_at"] > old["created_at"]
    newest = frontmatter.parse((ws / c["file"]).read_text())[0]
    assert newest["supersedes"] == [b["id"]]
    idx = read_index(ws)
    assert idx["by_wikilink"]["Auth strategy"] == b["id"]  # newest of that title; B is superseded too
    assert idx["by_status"] == {"superseded": [a["id"], b["id"]], "active": [c["id"]]}
    # The old slug finds the old memory, which points at the current one.
    assert cli.json("get", "auth-strategy", "-w", str(ws))["data"]["current_id"] == c["id"]
    # Superseding a superseded memory would fork the chain: refused.
    env = cli.json("write", "v4", "--title", "Fork", "--supersedes", a["id"], "-w", str(ws), code=2)
    assert "already superseded" in env["errors"][0]["message"]


def test_slug_collisions_get_suffixes(ws: Path, cli) -> None:
    a = cli.json("write", "x", "--title", "Auth: JWT", "-w", str(ws))["data"]
    b = cli.json("write", "y", "--title", "Auth JWT", "-w", str(ws))["data"]
    c = cli.json("write", "z", "--title", "auth -- jwt!", "-w", str(ws))["data"]
    assert [a["slug"], b["slug"], c["slug"]] == ["auth-jwt", "auth-jwt-2", "auth-jwt-3"]
    assert (ws / "memories/note__auth-jwt-3.md").is_file()
    d = cli.json("write", "w", "--title", "Auth: JWT", "--new-slug", "-w", str(ws))["data"]
    assert d["slug"] == "auth-jwt-4"


def test_duplicate_title_refused_without_change(ws: Path, cli, snap) -> None:
    cli.json("write", "one", "--title", "Same Title", "-w", str(ws))
    before = snap(ws)
    env = cli.json("write", "two", "--title", "Same Title", "-w", str(ws), code=1)
    assert env["errors"][0]["code"] == "duplicate"
    assert snap(ws) == before


def test_non_ascii_title(ws: Path, cli) -> None:
    env = cli.json("write", "Résumé du café", "--title", "Café — décision", "-w", str(ws))["data"]
    assert env["slug"] == "cafe-decision"
    raw = (ws / env["file"]).read_text(encoding="utf-8")
    assert 'title: "Café — décision"' in raw
    only_symbols = cli.json("write", "x", "--title", "日本語", "-w", str(ws))["data"]
    assert only_symbols["slug"] == "memory"


def test_team_folders(tmp_path: Path, cli) -> None:
    root = tmp_path / "w"
    cli.json("init", "--path", str(root), "--team", "platform")
    env = cli.json("write", "team note", "--title", "Deploy window", "--team", "platform", "-w", str(root))
    assert env["data"]["file"] == "teams/platform/memories/note__deploy-window.md"
    assert env["data"]["team"] == "platform"
    idx = read_index(root, "teams/platform/memories")
    assert idx["entries"][0]["team"] == "platform"
    # Same title in another scope is not a duplicate.
    cli.json("write", "default note", "--title", "Deploy window", "-w", str(root))
    roll = json.loads((root / "_index.json").read_bytes())
    assert roll["entry_count"] == 2
    assert {e["folder_path"] for e in roll["entries"]} == {"memories/", "teams/platform/memories/"}
    bad = cli.json("write", "x", "--title", "T", "--team", "nope", "-w", str(root), code=2)
    assert "unknown team" in bad["errors"][0]["message"]


def test_held_memory_is_never_modified(ws: Path, cli, snap) -> None:
    a = cli.json("write", "legal", "--title", "Held one", "-w", str(ws))["data"]
    path = ws / a["file"]
    path.write_text(path.read_text().replace("status: active", "status: held"))
    before = snap(ws)
    env = cli.json("write", "new", "--title", "Replacement", "--supersedes", a["id"], "-w", str(ws), code=1)
    assert env["errors"][0]["code"] == "held"
    assert snap(ws) == before


def test_get_is_right_with_the_recall_cache_deleted_or_corrupt(ws: Path, cli, _isolated_home: Path) -> None:
    import shutil

    a = cli.json("write", "v1", "--title", "Cache proof", "-w", str(ws))["data"]
    cache_dir = _isolated_home / "cache"
    assert cli.json("get", "cache-proof", "-w", str(ws))["data"]["id"] == a["id"]
    shutil.rmtree(cache_dir)
    b = cli.json("write", "v2", "--title", "Cache proof", "--supersedes", a["id"], "-w", str(ws))["data"]
    got = cli.json("get", "[[Cache proof]]", "--history", "-w", str(ws))["data"]
    assert got["id"] == b["id"] and [h["id"] for h in got["history"]] == [a["id"], b["id"]]
    for db in cache_dir.rglob("*"):
        if db.is_file():
            db.write_bytes(b"not a database")
    assert cli.json("get", a["id"], "-w", str(ws))["data"]["current_id"] == b["id"]
