"""Bad input: one clear line, the right exit code, and the workspace byte-for-byte unchanged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _one_line(env: dict) -> str:
    assert env["status"] == "error"
    assert len(env["errors"]) == 1
    msg = env["errors"][0]["message"]
    assert "\n" not in msg and msg
    return msg


BOMB = (
    "---\ntitle: Bomb\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    + "".join(f"c{i}: &c{i} [*b, *b, *b, *b, *b, *b, *b, *b]\n" for i in range(1))
    + "---\nbody\n"
)


@pytest.mark.parametrize(
    ("args", "stdin", "code", "needle"),
    [
        (["-", "--title", "T"], "---\ntitle: [unclosed\n---\nbody", 2, "invalid YAML"),
        (["-", "--title", "T"], BOMB, 2, "anchors/aliases"),
        (["-", "--title", "T"], "---\nx: !!python/object/apply:os.system [ls]\n---\nbody", 2, "invalid YAML"),
        (["-", "--title", "T"], "x" * (50 * 1024 * 1024), 2, "larger than"),
        (["-", "--title", "T"], b"\x89PNG\r\n\x1a\n\x00\x00binary", 2, "binary"),
        (["-", "--title", "T"], "   \n", 2, "empty"),
        (["text", "--title", "../escape"], None, 2, "'..'"),
        (["text", "--title", "a/b"], None, 2, "path separator"),
        (["text", "--title", "bell\x07"], None, 2, "control characters"),
        (["text", "--title", "T", "--team", "../x"], None, 2, "invalid team"),
        (["text", "--title", "T", "--team", "a/b"], None, 2, "invalid team"),
        (["text", "--title", "T", "--team", "Tab\tTeam"], None, 2, "invalid team"),
        (["text", "--title", "T", "--kind", "opinion"], None, 2, "unknown kind"),
        (["text", "--title", "T", "--status", "superseded"], None, 2, "unknown status"),
        (["text", "--title", "T", "--status", "bogus"], None, 2, "unknown status"),
        (["text", "--title", "T", "--confidence", "1.5"], None, 2, "confidence"),
        (["text", "--title", "T", "--source", "nocolon"], None, 2, "--source"),
        (["text", "--title", "T", "--supersedes", "not-an-id"], None, 2, "--supersedes"),
        (["text"], None, 2, "--title is required"),
        ([], None, 2, "no content"),
    ],
)
def test_write_rejects_bad_input_and_changes_nothing(ws: Path, cli, snap, args, stdin, code, needle) -> None:
    cli.json("write", "existing", "--title", "Existing", "-w", str(ws))
    before = snap(ws)
    env = cli.json("write", *args, "-w", str(ws), input=stdin, code=code)
    assert needle in _one_line(env)
    assert snap(ws) == before


def test_human_error_is_one_line_on_stderr(ws: Path, cli) -> None:
    res = cli("write", "x", "--title", "../up", "-w", str(ws))
    assert res.exit_code == 2
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and res.stderr.startswith("error:")


def test_unparseable_config_is_an_error_naming_the_file(ws: Path, cli, snap) -> None:
    (ws / "_box-memory.json").write_text("{not json")
    before = snap(ws)
    for args in (["write", "x", "--title", "T"], ["get", "anything"], ["init", "--path", str(ws)]):
        env = cli.json(*args, "-w", str(ws), code=1) if args[0] != "init" else cli.json(*args, code=1)
        msg = _one_line(env)
        assert "_box-memory.json" in msg and "not valid JSON" in msg
    assert snap(ws) == before


def test_unparseable_index_is_an_error_naming_the_file(ws: Path, cli, snap) -> None:
    (ws / "memories" / "_index.json").write_text('{"entries": [')
    before = snap(ws)
    env = cli.json("write", "x", "--title", "T", "-w", str(ws), code=1)
    msg = _one_line(env)
    assert "memories/_index.json" in msg and "index-rebuild" in msg
    assert snap(ws) == before


def test_malformed_memory_file_get_is_one_line(ws: Path, cli) -> None:
    env = cli.json("write", "x", "--title", "Broken later", "-w", str(ws))
    path = ws / env["data"]["file"]
    path.write_text("---\ntitle: [oops\n---\nbody")
    err = cli.json("get", env["data"]["id"], "-w", str(ws), code=1)
    assert "invalid YAML" in _one_line(err)


def test_missing_workspace_exits_3(tmp_path: Path, cli, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = cli.json("write", "x", "--title", "T", code=3)
    assert env["errors"][0]["code"] == "workspace_not_found"
    assert "box-memory init" in _one_line(env)
    env = cli.json("get", "x", "-w", str(tmp_path / "nope"), code=3)
    assert env["errors"][0]["code"] == "workspace_not_found"


def test_held_lock_past_the_wait_exits_5(ws: Path, cli, snap, monkeypatch) -> None:
    monkeypatch.setenv("BOX_MEMORY_LOCK_WAIT_S", "0.3")
    lock = ws / "_box-memory.lock"
    lock.write_text(
        json.dumps({"writer": "other-agent", "pid": 4242, "host": "h", "renewed_at": "2999-01-01T00:00:00Z"})
    )
    before = snap(ws)
    env = cli.json("write", "x", "--title", "Blocked", "-w", str(ws), code=5)
    assert env["errors"][0]["code"] == "lock_busy"
    assert "other-agent" in _one_line(env)
    assert snap(ws) == before


def test_stale_lock_is_taken_over(ws: Path, cli, monkeypatch) -> None:
    monkeypatch.setenv("BOX_MEMORY_LOCK_STALE_S", "1")
    lock = ws / "_box-memory.lock"
    lock.write_text(json.dumps({"writer": "dead", "pid": 1, "renewed_at": "2000-01-01T00:00:00Z"}))
    os.utime(lock, (1, 1))
    cli.json("write", "x", "--title", "After takeover", "-w", str(ws))
    assert not lock.exists()  # released after the write


def test_json_envelope_shape(ws: Path, cli) -> None:
    env = cli.json("write", "hello", "--title", "Envelope", "-w", str(ws))
    assert set(env) == {
        "box_memory_result_version",
        "command",
        "status",
        "exit_code",
        "duration_ms",
        "data",
        "warnings",
        "errors",
    }
    assert env["box_memory_result_version"] == 1 and env["command"] == "write"
    assert isinstance(env["duration_ms"], int) and env["errors"] == []
    err = cli.json("get", "mem_01HXYZA1B2C3D4E5F6G7H8J9ZZ", "-w", str(ws), code=1)
    assert err["status"] == "error" and err["errors"][0]["code"] == "not_found" and err["data"] == {}


def test_dangling_wikilink_in_get_is_not_found(ws: Path, cli) -> None:
    env = cli.json("get", "[[Nobody wrote this]]", "-w", str(ws), code=1)
    assert "dangling wikilink" in _one_line(env)


def test_content_frontmatter_supplies_fields(ws: Path, cli) -> None:
    text = "---\ntitle: From frontmatter\nkind: fact\ntags: [ops]\nid: mem_IGNORED\n---\nThe fact.\n"
    env = cli.json("write", "-", "--tag", "extra", "-w", str(ws), input=text)["data"]
    assert env["title"] == "From frontmatter" and env["kind"] == "fact"
    fm = cli.json("get", env["id"], "-w", str(ws))["data"]["frontmatter"]
    assert fm["tags"] == ["ops", "extra"] and fm["id"] == env["id"]
