"""A write either commits something that reads back, or changes nothing (exit 2 for bad input)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from box_memory.serve.server import MemoryServer


def test_oversized_tag_agent_and_frontmatter_are_refused_before_writing(cli, ws: Path, snap) -> None:
    before = snap(ws)
    w = ("-w", str(ws))
    cases = [
        (("--tag", "t" * 70000), "tag t"),
        (("--agent", "a" * 100000), "agent name is longer than 200 characters"),
        (("--agent", "bad\x1b[31mred"), "contains control or bidi characters"),
        (("--agent", "evil\u202eexe.txt"), "contains control or bidi characters"),
        # 700 tags of 100 characters: each is valid, the rendered frontmatter is over 64 KiB.
        (
            tuple(a for i in range(700) for a in ("--tag", f"t{i}-" + "x" * 90)),
            "frontmatter is larger than 64 KiB",
        ),
    ]
    for extra, words in cases:
        env = cli.json("write", "Body.", "--title", "Too big", *extra, *w, code=2)
        assert words in env["errors"][0]["message"], env
    assert snap(ws) == before
    assert cli.json("index-rebuild", "--check", *w)["data"]["drift"] is False


def test_content_frontmatter_expires_at_must_be_a_date(cli, ws: Path, snap) -> None:
    before = snap(ws)
    env = cli.json(
        "write",
        "-",
        "--title",
        "Expiring",
        "-w",
        str(ws),
        code=2,
        input="---\nexpires_at: not-a-date\n---\nBody.\n",
    )
    assert (
        env["errors"][0]["message"]
        == "content frontmatter: 'expires_at' is not an ISO-8601 date ('not-a-date')"
    )
    assert snap(ws) == before
    ok = cli.json(
        "write", "-", "--title", "Expiring", "-w", str(ws), input="---\nexpires_at: 2031-01-02\n---\nBody.\n"
    )
    assert (
        "expires_at: '2031-01-02'" in (ws / ok["data"]["file"]).read_text()
        or "2031-01-02" in (ws / ok["data"]["file"]).read_text()
    )


def test_mcp_write_refuses_an_oversized_agent(ws: Path) -> None:
    before = sorted(p.name for p in (ws / "memories").iterdir())
    result, is_error = MemoryServer(str(ws)).call(
        "write", {"content": "Body.", "title": "Via MCP", "agent": "a" * 100000}
    )
    assert is_error and result["exit_code"] == 2, result
    assert sorted(p.name for p in (ws / "memories").iterdir()) == before


@pytest.mark.parametrize("team", ["../../outside", "a/b", "..", "x\\y", "", 7])
def test_config_team_that_escapes_is_refused_on_open(cli, ws: Path, snap, team: object) -> None:
    cfg = ws / "_box-memory.json"
    data = json.loads(cfg.read_bytes())
    data["teams"] = [*data["teams"], team]
    cfg.write_text(json.dumps(data))
    before = snap(ws)
    env = cli.json("write", "Body.", "--title", "New one", "-w", str(ws), code=1)
    assert "is not a folder name inside teams/" in env["errors"][0]["message"]
    assert env["errors"][0]["message"].startswith(f"{ws}/_box-memory.json: team ")
    assert snap(ws) == before
    assert not (ws.parent / "outside").exists()


# --- cloud: a failure after the memory is committed -------------------------------------------


@pytest.fixture(autouse=True)
def _close_server_caches() -> Iterator[None]:
    """In-process MemoryServer calls keep recall caches open (as `serve` does): close them after."""
    yield
    from box_memory.recall.cache import close_held

    close_held()


@pytest.mark.slow
def test_cloud_index_failure_after_commit_is_a_warning_and_the_retry_is_idempotent(
    cloud, emu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Box goes away right after the memory file is uploaded (a real server stop, at our own
    crash-point seam): the write reports the memory saved (exit 0, a warning); the identical retry
    is recognised as done, and completes the index."""
    from box_memory.write import commit

    real = commit.crash_point

    def box_dies(step: str) -> None:
        real(step)
        if step == "write:file-created":
            emu.stop()

    monkeypatch.setenv("BOX_MEMORY_LOCK_STALE_S", "2")  # the lock Box could not be told about
    monkeypatch.setattr(commit, "crash_point", box_dies)
    first = cloud.run("write", "The deploy window is Tuesday.", "--title", "Deploy window")
    assert first["exit_code"] == 0
    assert any("is saved, but updating the indexes failed" in w for w in first["warnings"]), first
    monkeypatch.setattr(commit, "crash_point", real)
    emu.start()
    time.sleep(2.2)
    again = cloud.run("write", "The deploy window is Tuesday.", "--title", "Deploy window")
    assert again["data"]["already_written"] is True and again["data"]["id"] == first["data"]["id"]
    assert [h["id"] for h in cloud.data("recall", "deploy window")["hits"]] == [first["data"]["id"]]
    assert cloud.run("index-rebuild", "--check")["data"]["drift"] is False
    # A different body under the same title is still a duplicate, not a retry.
    dup = cloud.run("write", "The deploy window is Friday.", "--title", "Deploy window", code=1)
    assert dup["errors"][0]["code"] == "duplicate"


def test_local_identical_retry_is_idempotent(cli, ws: Path) -> None:
    w = ("-w", str(ws))
    first = cli.json("write", "Same text.", "--title", "Same", "--tag", "a", *w)["data"]
    again = cli.json("write", "Same text.", "--title", "Same", "--tag", "a", *w)["data"]
    assert again["already_written"] is True and again["id"] == first["id"]
    assert sorted(p.name for p in (ws / "memories").glob("*.md")) == ["note__same.md"]
    # The memory file landed but its index entry did not (killed writer): the retry completes it.
    index = json.loads((ws / "memories" / "_index.json").read_bytes())
    index["entries"] = []
    (ws / "memories" / "_index.json").write_text(json.dumps(index))
    third = cli.json("write", "Same text.", "--title", "Same", "--tag", "a", *w)["data"]
    assert third["already_written"] is True and third["id"] == first["id"]
    assert [e["id"] for e in json.loads((ws / "memories" / "_index.json").read_bytes())["entries"]] == [
        first["id"]
    ]


@pytest.mark.parametrize("step", ["write:file-created", "write:old-rewritten", "write:index-saved", ""])
def test_retried_supersede_is_idempotent(cli, ws: Path, step: str) -> None:
    """`write --supersedes OLD` killed at each step (or completed), then retried as is: the retry
    returns the memory the first attempt wrote and finishes its bookkeeping, never a second one."""
    import signal

    from box_memory.format import frontmatter
    from tests.integrity.util import bm, bm_json

    w = ("-w", str(ws))
    old = cli.json("write", "The first policy.", "--title", "Policy", "--tag", "ops", *w)["data"]
    args = ["write", "The second policy.", "--supersedes", old["id"], *w]
    if step:
        proc = bm(*args, env={"BOX_MEMORY_CRASH_AT": step})
        assert proc.returncode == -signal.SIGKILL, proc.stderr
    else:
        bm_json(*args)
    files = {p.name: frontmatter.parse(p.read_text())[0] for p in (ws / "memories").glob("*.md")}
    (new_id,) = [m["id"] for m in files.values() if m["id"] != old["id"]]
    fast = {"BOX_MEMORY_LOCK_STALE_S": "1", "BOX_MEMORY_LOCK_WAIT_S": "30"}
    again = bm_json(*args, env=fast)["data"]
    assert (again["already_written"], again["id"], again["supersedes"]) == (True, new_id, old["id"])
    files = {p.name: frontmatter.parse(p.read_text())[0] for p in (ws / "memories").glob("*.md")}
    assert len(files) == 2
    old_meta = next(m for m in files.values() if m["id"] == old["id"])
    assert (old_meta["status"], old_meta["superseded_by"]) == ("superseded", new_id)
    entries = {e["id"]: e for e in json.loads((ws / "memories" / "_index.json").read_bytes())["entries"]}
    assert set(entries) == {old["id"], new_id} and entries[old["id"]]["status"] == "superseded"
    assert bm_json("index-rebuild", "--check", *w)["data"]["drift"] is False
    # A retry with another body is a new supersede of a superseded memory: still refused.
    other = bm_json("write", "A third policy.", "--supersedes", old["id"], *w, code=2)
    assert "already superseded" in other["errors"][0]["message"]


@pytest.mark.slow
def test_cloud_retried_supersede_after_box_went_away_is_idempotent(
    cloud, emu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Box stops right after the new memory of a supersede is uploaded: the retry returns that
    memory and marks the old one superseded by it, instead of writing a second successor."""
    from box_memory.write import commit

    old = cloud.data("write", "The deploy window is Monday.", "--title", "Deploy window")
    real = commit.crash_point

    def box_dies(step: str) -> None:
        real(step)
        if step == "write:file-created":
            emu.stop()

    monkeypatch.setenv("BOX_MEMORY_LOCK_STALE_S", "2")
    monkeypatch.setattr(commit, "crash_point", box_dies)
    args = ("write", "The deploy window is Tuesday.", "--supersedes", old["id"])
    first = cloud.run(*args)
    assert any("is saved, but updating the indexes failed" in w for w in first["warnings"]), first
    monkeypatch.setattr(commit, "crash_point", real)
    emu.start()
    time.sleep(2.2)
    again = cloud.data(*args)
    assert (again["already_written"], again["id"]) == (True, first["data"]["id"])
    assert cloud.data("get", old["id"])["frontmatter"]["superseded_by"] == first["data"]["id"]
    assert [h["id"] for h in cloud.data("recall", "deploy window")["hits"]] == [first["data"]["id"]]
    assert cloud.run("index-rebuild", "--check")["data"]["drift"] is False
