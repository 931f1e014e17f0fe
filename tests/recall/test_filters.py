"""Structured filters: inline `kind:` `tag:` `team:` `status:` and the options; they intersect."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.recall.helpers import ids, mem_id, put, reindex


@pytest.fixture
def mixed(tmp_path: Path, cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    put(
        root,
        "Auth decision",
        n=1,
        kind="decision",
        tags=["auth", "security"],
        updated="2026-03-01T00:00:00.000Z",
    )
    put(root, "Auth task", n=2, kind="task", tags=["auth"], updated="2026-03-02T00:00:00.000Z")
    put(root, "JWT rotation", n=3, kind="decision", tags=["auth/jwt"], updated="2026-03-03T00:00:00.000Z")
    put(
        root,
        "Ops auth decision",
        n=4,
        kind="decision",
        tags=["auth", "security"],
        folder="teams/ops/memories",
        updated="2026-03-04T00:00:00.000Z",
    )
    put(
        root,
        "Draft idea",
        n=5,
        kind="note",
        status="draft",
        tags=["ideas"],
        updated="2026-03-05T00:00:00.000Z",
    )
    put(root, "Security review", n=6, kind="fact", tags=["security"], updated="2026-02-01T00:00:00.000Z")
    reindex(root)
    return root


def test_structured_query_lists_newest_first(mixed: Path, cli) -> None:
    env = cli.json("recall", "kind:decision", "-w", str(mixed))
    assert env["data"]["route"] == "filter"
    assert ids(env) == [mem_id(4), mem_id(3), mem_id(1)]
    assert {h["matched_on"] for h in env["data"]["hits"]} == {"filter"}


def test_tags_repeat_as_and_and_nest(mixed: Path, cli) -> None:
    assert ids(cli.json("recall", "tag:auth", "-w", str(mixed))) == [mem_id(n) for n in (4, 3, 2, 1)]
    assert ids(cli.json("recall", "tag:auth tag:security", "-w", str(mixed))) == [mem_id(4), mem_id(1)]
    both = cli.json("recall", "tag:auth", "--tag", "security", "-w", str(mixed))
    assert ids(both) == [mem_id(4), mem_id(1)]
    assert ids(cli.json("recall", "tag:auth/jwt", "-w", str(mixed))) == [mem_id(3)]


def test_filters_intersect(mixed: Path, cli) -> None:
    env = cli.json("recall", "kind:decision tag:security team:ops", "-w", str(mixed))
    assert ids(env) == [mem_id(4)]
    env = cli.json("recall", "tag:security", "--kind", "fact", "-w", str(mixed))
    assert ids(env) == [mem_id(6)]
    env = cli.json("recall", "kind:task", "--team", "ops", "-w", str(mixed))
    assert ids(env) == []
    assert any("no memories match" in w for w in env["warnings"])


def test_status_filter(mixed: Path, cli) -> None:
    assert ids(cli.json("recall", "status:draft", "-w", str(mixed))) == [mem_id(5)]
    assert ids(cli.json("recall", "ideas", "--status", "active", "-w", str(mixed))) == []


def test_since_until_on_updated_at(mixed: Path, cli) -> None:
    env = cli.json("recall", "tag:auth", "--since", "2026-03-02", "--until", "2026-03-03", "-w", str(mixed))
    assert ids(env) == [mem_id(3), mem_id(2)]
    env = cli.json("recall", "tag:security", "--until", "2026-02-28T23:59:59Z", "-w", str(mixed))
    assert ids(env) == [mem_id(6)]


def test_filters_apply_to_free_text(mixed: Path, cli) -> None:
    env = cli.json("recall", "auth kind:decision", "-w", str(mixed))
    assert set(ids(env)) == {mem_id(1), mem_id(3), mem_id(4)}
    assert env["data"]["filters"]["kind"] == ["decision"]
    env = cli.json("recall", "auth", "--team", "ops", "-w", str(mixed))
    assert ids(env) == [mem_id(4)]


@pytest.mark.parametrize(
    "args",
    [
        ["kind:bogus"],
        ["x", "--kind", "bogus"],
        ["status:nope"],
        ["x", "--team", "nosuchteam"],
        ["x", "--since", "yesterday-ish"],
        ["x", "--limit", "0"],
        [""],
        ["   "],
    ],
)
def test_bad_input_is_a_usage_error(mixed: Path, cli, snap, args: list[str]) -> None:
    before = snap(mixed)
    env = cli.json("recall", *args, "-w", str(mixed), code=2)
    assert env["status"] == "error" and len(env["errors"]) == 1
    assert snap(mixed) == before
