"""Bad values are usage errors (exit 2, one line, nothing changed), never internal errors."""

from __future__ import annotations

import json
from pathlib import Path


def test_recall_limit_too_large(cli, ws: Path) -> None:
    env = cli.json("recall", "x", "--limit", "99999999999999999999", "-w", str(ws), code=2)
    assert env["errors"][0]["message"] == "--limit must be between 1 and 100000"


def test_auth_token_rejects_nan_expiry_and_non_ascii_tokens(cli) -> None:
    env = cli.json("auth", "token", "--token-stdin", "--expires-in", "nan", input="tok\n", code=2)
    assert "--expires-in must be a number of seconds above 0" in env["errors"][0]["message"]
    env = cli.json("auth", "token", "--token-stdin", input=b"tok\xff\n", code=2)
    assert "printable ASCII" in env["errors"][0]["message"]
    assert cli.json("auth", "status", code=None)["data"].get("source") in (None, "none")


def test_init_with_a_bad_team_creates_no_folder(cli, tmp_path: Path) -> None:
    target = tmp_path / "D"
    env = cli.json("init", "x", "--path", str(target), "--team", "../x", code=2)
    assert "invalid team name" in env["errors"][0]["message"]
    assert not target.exists()


def test_index_entry_fields_of_the_wrong_type(cli, ws: Path) -> None:
    w = ("-w", str(ws))
    cli.json("write", "A.", "--title", "A", *w)
    path = ws / "memories" / "_index.json"
    data = json.loads(path.read_bytes())
    data["entries"][0]["tags"] = [["x"]]
    data["entries"][0]["slug"] = ["a"]
    path.write_text(json.dumps(data))
    env = cli.json("write", "B.", "--title", "B", *w, code=1)
    assert "has slug, tags of the wrong type" in env["errors"][0]["message"]
    check = cli.json("index-rebuild", "--check", *w, code=6)
    assert check["data"]["folders"][0]["index"] == "unparseable"
    cli.json("index-rebuild", *w)
    cli.json("write", "B.", "--title", "B", *w)
