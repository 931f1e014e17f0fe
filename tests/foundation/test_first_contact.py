"""What a new user meets first: supersede keeps what it replaces, piped output is exact, errors
are sentences, and --json holds for usage errors too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from box_memory.format import frontmatter


def bm(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """The real console entry point, stdout a pipe (not a terminal)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOX_")}
    env["BOX_MEMORY_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "box_memory", *args], capture_output=True, env=env, cwd=cwd, check=False
    )


def test_supersede_inherits_kind_tags_team_related(cli, ws: Path) -> None:
    cli.json("team", "create", "platform", "-w", str(ws))
    cli.json("write", "Token rotation runbook", "--title", "Rotation", "-w", str(ws))
    old = cli.json(
        "write",
        "We decided to use short-lived JWTs",
        "--title",
        "Auth strategy",
        "--kind",
        "decision",
        "--tag",
        "auth",
        "--tag",
        "mobile",
        "--team",
        "platform",
        "--related",
        "[[Rotation]]",
        "-w",
        str(ws),
    )["data"]
    new = cli.json("write", "Opaque sessions now", "--supersedes", old["id"], "-w", str(ws))["data"]
    assert new["kind"] == "decision" and new["title"] == "Auth strategy" and new["team"] == "platform"
    assert set(new["inherited"]) == {"title", "kind", "tags", "related", "team"}
    assert new["file"] == "teams/platform/memories/decision__auth-strategy-2.md"
    meta, _ = frontmatter.parse((ws / new["file"]).read_text(), "x")
    assert meta["tags"] == ["auth", "mobile"] and meta["related"] == ["[[Rotation]]"]
    hits = cli.json("recall", "auth strategy", "--kind", "decision", "-w", str(ws))["data"]["hits"]
    assert [h["id"] for h in hits] == [new["id"]]

    # An explicit different kind is allowed, and said.
    third = cli.json(
        "write", "Sessions are a fact now", "--supersedes", new["id"], "--kind", "fact", "-w", str(ws)
    )["data"]
    assert third["kind"] == "fact" and third["kind_changed_from"] == "decision"
    assert "kind" not in third.get("inherited", [])
    res = cli("write", "again", "--supersedes", third["id"], "--kind", "note", "-w", str(ws))
    assert "kind changed: fact -> note" in res.stdout


def test_chain_ties_rank_the_successor_first_and_history_shows_creation(cli, ws: Path) -> None:
    a = cli.json("write", "first", "--title", "Deploy window", "-w", str(ws))["data"]
    b = cli.json("write", "second", "--supersedes", a["id"], "-w", str(ws))["data"]
    hits = cli.json("recall", "deploy window", "--include-superseded", "-w", str(ws))["data"]["hits"]
    assert [h["id"] for h in hits] == [b["id"], a["id"]]
    assert hits[0]["updated_at"] == hits[1]["updated_at"]  # the tie the bookkeeping makes
    hist = cli.json("get", b["id"], "--history", "-w", str(ws))["data"]["history"]
    created = {
        h["id"]: frontmatter.parse((ws / h["local_path"]).read_text(), "x")[0]["created_at"] for h in hist
    }
    assert [h["created_at"] for h in hist] == [created[a["id"]], created[b["id"]]]
    assert hist[0]["created_at"] < hist[1]["created_at"]
    out = cli("get", b["id"], "--history", "-w", str(ws)).stdout
    assert created[a["id"]] in out


def test_piped_get_and_full_recall_are_the_file_byte_for_byte(cli, ws: Path, tmp_path: Path) -> None:
    body = "Use [[JWT rotation]] here.\n- [ ] rotate keys\n- [x] \\[bold] stays\n"
    w = cli.json(
        "write", body, "--title", "Auth strategy", "--tag", "auth", "--tag", "mobile", "-w", str(ws)
    )["data"]
    home = Path(os.environ["BOX_MEMORY_HOME"])
    stored = (ws / w["file"]).read_bytes()
    got = bm("get", "[[Auth strategy]]", "-w", str(ws), home=home)
    assert got.returncode == 0 and got.stdout == stored
    meta_piped = yaml.safe_load(got.stdout.decode().split("---\n")[1])
    assert meta_piped == yaml.safe_load(stored.decode().split("---\n")[1])
    assert meta_piped["tags"] == ["auth", "mobile"]
    full = bm("recall", "auth strategy", "--full", "-w", str(ws), home=home)
    assert full.returncode == 0 and full.stdout == stored
    # Errors and warnings off a terminal carry the user's brackets unescaped.
    nope = bm("recall", "[[Nope]]", "-w", str(ws), home=home)
    assert b"[[Nope]]" in nope.stderr and b"\\[" not in nope.stderr


def test_os_errors_read_as_sentences(cli, tmp_path: Path) -> None:
    afile = tmp_path / "plain.txt"
    afile.write_text("x")
    env = cli.json("init", "x", "--path", str(afile / "sub"), code=2)
    msg = env["errors"][0]["message"]
    assert str(afile / "sub") in msg and "Error" not in msg and "Errno" not in msg
    assert not (afile / "sub").exists()


def test_json_holds_for_usage_errors_and_before_the_command(cli, ws: Path) -> None:
    for args in (
        ["recall", "--json"],
        ["--json", "recall"],
        ["recall", "x", "--bogus", "--json"],
        ["--json", "nosuch"],
    ):
        res = cli(*args)
        assert res.exit_code == 2, args
        env = json.loads(res.stdout)
        assert env["exit_code"] == 2 and env["status"] == "error"
        assert env["errors"][0]["code"] == "usage_error"
    assert json.loads(cli("recall", "--json").stdout)["command"] == "recall"
    res = cli("--json", "status", "-w", str(ws))
    assert res.exit_code == 0 and json.loads(res.stdout)["command"] == "status"
    # Without --json a usage error stays Click's text on stderr.
    plain = cli("get")
    assert plain.exit_code == 2 and "Missing argument" in plain.stderr and not plain.stdout
    # recall's QUERY is optional (filters alone are a query): with neither, a one-line usage error.
    plain = cli("recall")
    assert plain.exit_code == 2 and "missing QUERY" in plain.stderr and not plain.stdout
