"""`box-memory log`: the workspace's timeline, newest first, answered from the indexes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli

OLD_BODY = """---
id: mem_01HXYZA1B2C3D4E5F6G7H8J9K0
slug: retired-runbook
title: Retired runbook
kind: reference
status: archived
team: default
agent: plugin-agent
created_at: 2026-01-05T10:00:00Z
updated_at: 2026-02-01T09:00:00Z
---

# Retired runbook

The old runbook, archived in place by the plugin.
"""


def _write(cli: Cli, ws: Path, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = cli.json("write", *args, "-w", str(ws))["data"]
    return data


def _log(cli: Cli, ws: Path, *args: str, code: int = 0) -> dict[str, Any]:
    return cli.json("log", *args, "-w", str(ws), code=code)


@pytest.fixture
def story(cli: Cli, ws: Path) -> dict[str, Any]:
    """Two agents, a supersede, an archive by successor, one archived in place, a team change."""
    (ws / "memories" / "reference__retired-runbook.md").write_text(OLD_BODY, encoding="utf-8")
    cli.json("index-rebuild", "-w", str(ws))
    a = _write(cli, ws, "We decided to use JWT.", "--title", "Auth tokens", "--agent", "claude-code")
    b = _write(cli, ws, "We decided on sessions.", "--supersedes", a["id"], "--agent", "codex")
    fact = _write(cli, ws, "Redis is 7.2.", "--title", "Redis version", "--kind", "fact", "--agent", "codex")
    cli.json("team", "create", "eng", "-w", str(ws))
    note = _write(cli, ws, "An eng note.", "--title", "Eng note", "--team", "eng", "--agent", "claude-code")
    from box_memory.workspace.resolve import open_workspace
    from box_memory.write.memories import write_memory
    from box_memory.write.prepare import WriteRequest

    retired = write_memory(
        open_workspace(str(ws)),
        WriteRequest(content="No longer true.", supersedes=fact["id"], status="archived", agent="reviewer"),
    ).data
    return {"a": a, "b": b, "fact": fact, "note": note, "retired": retired}


def test_log_lists_every_kind_of_event_newest_first_with_chain_links(
    cli: Cli, ws: Path, story: dict[str, Any]
) -> None:
    env = _log(cli, ws)
    events = env["data"]["events"]
    kinds = [(e["event"], e["id"]) for e in events]
    a, b, fact, retired = story["a"], story["b"], story["fact"], story["retired"]
    assert kinds[0] == ("archive", retired["id"])  # the newest first
    times = [e["at"] for e in events]
    assert times == sorted(times, reverse=True)
    by = {(e["event"], e["id"]): e for e in events}
    sup = by[("supersede", b["id"])]
    assert sup["supersedes"] == [a["id"]] and sup["agent"] == "codex"
    assert sup["path"] == b["file"] and sup["folder"] == "memories/" and sup["kind"] == "decision"
    first = by[("write", a["id"])]
    assert first["superseded_by"] == b["id"] and first["status"] == "superseded"
    assert first["agent"] == "claude-code" and first["title"] == "Auth tokens"
    assert by[("archive", retired["id"])]["supersedes"] == [fact["id"]]
    assert by[("write", fact["id"])]["superseded_by"] == retired["id"]
    # Archived in place by the plugin: its write and, at its updated_at, its archive.
    old = "mem_01HXYZA1B2C3D4E5F6G7H8J9K0"
    assert by[("write", old)]["at"] == "2026-01-05T10:00:00Z"
    assert by[("archive", old)]["at"] == "2026-02-01T09:00:00Z"
    assert by[("write", story["note"]["id"])]["team"] == "eng"
    team = [e for e in events if e["event"] == "team-create"]
    assert len(team) == 1 and team[0]["team"] == "eng" and team[0]["kind"] == "team"
    assert env["data"]["matched"] == env["data"]["total"] == len(events) == 8


def test_log_filters(cli: Cli, ws: Path, story: dict[str, Any]) -> None:
    codex = _log(cli, ws, "--agent", "CODEX")["data"]["events"]
    assert {e["id"] for e in codex} == {story["b"]["id"], story["fact"]["id"]}
    decisions = _log(cli, ws, "--kind", "decision")["data"]["events"]
    assert [e["event"] for e in decisions] == ["supersede", "write"]
    eng = _log(cli, ws, "--team", "eng")["data"]["events"]
    assert {e["event"] for e in eng} == {"write", "team-create"}
    until = _log(cli, ws, "--until", "2026-01-31")["data"]["events"]
    assert [(e["event"], e["id"]) for e in until] == [("write", "mem_01HXYZA1B2C3D4E5F6G7H8J9K0")]
    since = _log(cli, ws, "--since", "2026-01-06", "--until", "2026-02-01")["data"]["events"]
    assert [e["event"] for e in since] == ["archive"]
    limited = _log(cli, ws, "--limit", "2")
    assert len(limited["data"]["events"]) == 2 and limited["data"]["matched"] == 8
    assert any("6 older event(s) not shown" in w for w in limited["warnings"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--kind", "memo"], "unknown kind 'memo'"),
        (["--since", "last tuesday"], "invalid date 'last tuesday'"),
        (["--team", "nobody"], "nobody"),
        (["--limit", "0"], "--limit"),
        (["--since", "2026-03-01", "--until", "2026-02-01"], "is after --until"),
    ],
)
def test_bad_filters_are_one_clear_error(cli: Cli, ws: Path, snap: Any, args: list[str], needle: str) -> None:
    before = snap(ws)
    env = _log(cli, ws, *args, code=2)
    assert env["status"] == "error" and needle in env["errors"][0]["message"]
    assert snap(ws) == before


def test_log_answers_from_the_indexes_without_reading_memory_files(
    cli: Cli, ws: Path, story: dict[str, Any]
) -> None:
    before = _log(cli, ws)["data"]["events"]
    for md in (ws / "memories").glob("*__*.md"):
        md.write_bytes(b"\x00 not a memory any more")  # a read of any of them would fail or differ
    assert _log(cli, ws)["data"]["events"] == before


def test_indexes_from_before_agent_and_supersedes_still_give_the_chain(
    cli: Cli, ws: Path, story: dict[str, Any]
) -> None:
    idx_path = ws / "memories" / "_index.json"
    idx = json.loads(idx_path.read_text())
    for e in idx["entries"]:
        e.pop("agent", None)
        e.pop("supersedes", None)
    idx_path.write_text(json.dumps(idx))
    events = {(e["event"], e["id"]): e for e in _log(cli, ws)["data"]["events"]}
    sup = events[("supersede", story["b"]["id"])]
    assert sup["supersedes"] == [story["a"]["id"]] and sup["agent"] is None
    env = cli.json("index-rebuild", "--check", "-w", str(ws), code=None)
    assert env["exit_code"] == 0, env  # entries without the new keys are not drift


def test_plain_output_is_one_line_per_event(cli: Cli, ws: Path, story: dict[str, Any]) -> None:
    res = cli("log", "-w", str(ws))
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert len(lines) == 8
    sup = next(line for line in lines if " supersede " in line)
    assert "codex" in sup and "decision" in sup and "Auth tokens" in sup
    assert f"supersedes {story['a']['id']}" in sup
    first = next(line for line in lines if story["a"]["id"] in line and " write " in line)
    assert f"superseded by {story['b']['id']}" in first and "claude-code" in first


def test_a_title_cannot_forge_a_line(cli: Cli, ws: Path) -> None:
    # A hand-made file (write refuses such titles) carries markup, a newline escape and a bidi mark.
    text = OLD_BODY.replace("title: Retired runbook", 'title: "Evil [bold]title[/bold] \\u202eexe.txt"')
    (ws / "memories" / "reference__evil.md").write_text(text.replace("retired-runbook", "evil"))
    cli.json("index-rebuild", "-w", str(ws))
    out = cli("log", "-w", str(ws)).stdout
    assert "[bold]title[/bold]" in out and "\\u202e" in out and "\u202e" not in out


def _on_a_terminal(ws: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    """Run `box-memory log` with stdout on a pseudo-terminal; return (exit code, what it showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.execve(sys.executable, [sys.executable, "-m", "box_memory", "log", "-w", str(ws), *args], env)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), out.decode("utf-8", "replace")


def test_on_a_terminal_log_goes_through_the_pager(tmp_path: Path, cli: Cli, ws: Path) -> None:
    _write(cli, ws, "We decided to page.", "--title", "Paging", "--agent", "pager-test")
    seen = tmp_path / "paged.txt"
    pager = tmp_path / "pager.py"
    pager.write_text(f"import sys\nopen({str(seen)!r}, 'wb').write(sys.stdin.buffer.read())\n")
    env = {**os.environ, "BOX_MEMORY_PAGER": f"{sys.executable} {pager}"}
    code, shown = _on_a_terminal(ws, env)
    assert code == 0
    paged = seen.read_text()
    assert "Paging" in paged and "pager-test" in paged
    assert "Paging" not in shown  # the pager printed nothing itself: the text went only to it
    seen.unlink()
    code, shown = _on_a_terminal(ws, env, "--no-pager")
    assert code == 0 and "Paging" in shown and not seen.exists()
    code, shown = _on_a_terminal(ws, {**env, "BOX_MEMORY_PAGER": "cat"})
    assert code == 0 and "Paging" in shown and not seen.exists()
    # Piped (not a terminal): never the pager.
    proc = subprocess.run(
        [sys.executable, "-m", "box_memory", "log", "-w", str(ws)], env=env, capture_output=True, check=True
    )
    assert b"Paging" in proc.stdout and not seen.exists()


def test_the_timeline_cache_follows_every_change_and_is_only_derived(cli: Cli, ws: Path) -> None:
    from box_memory.audit.timeline_cache import cache_file
    from box_memory.workspace.resolve import open_workspace

    first = _write(cli, ws, "One.", "--title", "One", "--agent", "a")
    assert [e["id"] for e in _log(cli, ws)["data"]["events"]] == [first["id"]]
    db = cache_file(open_workspace(str(ws)))
    assert db.is_file()
    second = _write(cli, ws, "Two.", "--title", "Two", "--agent", "b")
    assert [e["id"] for e in _log(cli, ws)["data"]["events"]] == [second["id"], first["id"]]
    # A superseded memory's line changes with the bookkeeping that rewrote its index entry.
    third = _write(cli, ws, "One again.", "--supersedes", first["id"], "--agent", "c")
    by = {e["id"]: e for e in _log(cli, ws)["data"]["events"]}
    assert by[first["id"]]["superseded_by"] == third["id"] and by[third["id"]]["event"] == "supersede"
    expected = _log(cli, ws)["data"]
    db.write_bytes(b"not a database at all")  # corrupt: replaced, never trusted
    assert _log(cli, ws)["data"] == expected
    db.unlink()
    assert _log(cli, ws)["data"] == expected


def test_an_unusable_index_is_a_warning_and_the_rest_is_listed(cli: Cli, ws: Path) -> None:
    cli.json("team", "create", "eng", "-w", str(ws))
    note = _write(cli, ws, "Eng.", "--title", "Eng note", "--team", "eng")
    _write(cli, ws, "Default.", "--title", "Default note")
    (ws / "memories" / "_index.json").write_text("{ not json")
    env = _log(cli, ws)
    assert [e["id"] for e in env["data"]["events"] if e["event"] == "write"] == [note["id"]]
    assert any("memories/_index.json is unparseable" in w for w in env["warnings"])
