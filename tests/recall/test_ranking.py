"""The scoring ladder, pinned on hand-built workspaces (cli.md, `recall`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.recall.helpers import ids, mem_id, put, reindex


@pytest.fixture
def ladder(tmp_path: Path, cli) -> Path:
    """One memory per rung of the ladder for the query "rollout", plus one that must not match."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    put(root, "Rollout", n=1)  # whole query = title
    put(root, "Rollout!", n=2, folder="teams/ops/memories")  # slug "rollout"
    put(root, "Deploy plan", n=3, tags=["rollout"])  # whole query = a tag
    put(root, "Rollout checklist", n=4)  # token inside the title
    put(root, "Deploy steps", n=5, slug="canary-rollout-steps")  # token inside the slug only
    put(root, "Deploy notes", n=6, tags=["rollout-2026"])  # token inside a tag only
    put(root, "Weekly sync", "The rollout went fine on Tuesday.", n=7)  # body only
    put(root, "Unrelated", "Nothing to see.", n=8)
    reindex(root)
    return root


def test_exact_title_beats_slug_beats_tag_beats_partial_beats_body(ladder: Path, cli) -> None:
    env = cli.json("recall", "rollout", "-w", str(ladder))
    hits = env["data"]["hits"]
    assert ids(env) == [mem_id(n) for n in (1, 2, 3, 4, 5, 6, 7)]
    assert [h["score"] for h in hits] == [10, 8, 6, 4, 3, 2, 1.9]
    assert [h["matched_on"] for h in hits] == ["title", "slug", "tag", "title", "slug", "tag", "body"]
    assert env["warnings"] == []


def test_comparisons_ignore_case_and_spacing(ladder: Path, cli) -> None:
    env = cli.json("recall", "  ROLLOUT  ", "-w", str(ladder))
    assert ids(env)[:3] == [mem_id(1), mem_id(2), mem_id(3)]


def test_limit_keeps_the_best(ladder: Path, cli) -> None:
    env = cli.json("recall", "rollout", "--limit", "3", "-w", str(ladder))
    assert ids(env) == [mem_id(1), mem_id(2), mem_id(3)]
    assert env["data"]["count"] == 3


def test_json_hit_fields(ladder: Path, cli) -> None:
    env = cli.json("recall", "rollout", "-w", str(ladder))
    assert env["command"] == "recall" and env["status"] == "ok"
    fields = {
        "id",
        "title",
        "kind",
        "status",
        "team",
        "tags",
        "score",
        "matched_on",
        "path",
        "updated_at",
        "excerpt",
    }
    for h in env["data"]["hits"]:
        assert fields <= set(h), set(h) ^ fields
        assert (ladder / h["path"]).is_file()
    tag_hit = env["data"]["hits"][2]
    assert tag_hit["tags"] == ["rollout"] and tag_hit["team"] == "default" and tag_hit["kind"] == "note"
    assert env["data"]["hits"][1]["team"] == "ops"
    assert env["data"]["brain"] == []


def test_further_tokens_add_a_tenth_and_ties_go_to_the_newest(tmp_path: Path, cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "Canary rollout plan", n=1, updated="2026-02-01T00:00:00.000Z")  # both in the title
    put(root, "Rollout notes", "We watched the canary closely.", n=2, updated="2026-02-02T00:00:00.000Z")
    put(root, "Rollout notes two", "Nothing else.", n=3, updated="2026-02-09T00:00:00.000Z")  # one token
    put(root, "Canary", n=4, tags=["rollout"], updated="2026-02-03T00:00:00.000Z")  # title + tag
    put(root, "Release", "rollout and canary both, body only", n=5)
    reindex(root)
    env = cli.json("recall", "rollout canary", "-w", str(root))
    hits = env["data"]["hits"]
    assert ids(env)[:4] == [mem_id(4), mem_id(2), mem_id(1), mem_id(3)]
    assert [h["score"] for h in hits[:4]] == [4.1, 4.1, 4.1, 4.0]
    assert hits[4]["id"] == mem_id(5) and hits[4]["matched_on"] == "body"


def test_question_scores_never_reach_the_exact_tiers(tmp_path: Path, cli) -> None:
    """A query of many words ranks by the share of its words a memory holds (5.3 at most: all of
    them, in the title), always below an exact tag match (6)."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
    ]
    put(root, " ".join(words) + " x", n=1, slug="many-words")
    put(root, "Something", n=2, tags=["alpha"], slug="something")
    reindex(root)
    env = cli.json("recall", " ".join(words), "-w", str(root))
    assert [h["score"] for h in env["data"]["hits"]] == [5.3, 1.5]
    env = cli.json("recall", "alpha", "-w", str(root))
    assert [h["score"] for h in env["data"]["hits"]] == [6.0, 4.0]


def test_a_question_ranks_by_the_words_a_memory_holds(tmp_path: Path, cli) -> None:
    """The issue's case: "go" inside "good" in a title no longer outranks a body holding the
    question's rare words; whole words (or word starts, from four letters) count, the rarer a
    word the more, then the field (title > slug > tag > body), then the newest."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "Went to a LGBTQ support group", "Caroline: it was so moving.", n=1)
    put(root, "Good morning", "Caroline: hi there!", n=2, updated="2026-03-01T10:00:00.000Z")
    put(root, "Weekend plans", "Caroline: I go to the support group on Fridays.", n=3)
    for n in range(4, 12):
        put(root, f"Chat {n}", f"Caroline: chat number {n}.", n=n)
    reindex(root)
    env = cli.json("recall", "When did Caroline go to the LGBTQ support group?", "-w", str(root))
    hits = env["data"]["hits"]
    assert [h["id"] for h in hits[:2]] == [mem_id(1), mem_id(3)]
    assert [h["matched_on"] for h in hits[:2]] == ["title", "body"]
    # A short keyword query keeps the ladder: "go" inside a title still scores 4.
    env = cli.json("recall", "go", "-w", str(root))
    assert ids(env)[0] == mem_id(2) and env["data"]["hits"][0]["score"] == 4.0


def test_body_only_scores_between_one_and_one_point_nine(tmp_path: Path, cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "First", "zebra zebra zebra zebra grazing zebra", n=1)
    put(root, "Second", "a long story " * 40 + "zebra", n=2)
    reindex(root)
    hits = cli.json("recall", "zebra", "-w", str(root))["data"]["hits"]
    assert [h["id"] for h in hits] == [mem_id(1), mem_id(2)]
    assert hits[0]["score"] == 1.9
    assert 1.0 <= hits[1]["score"] < 1.9
    assert all(h["matched_on"] == "body" for h in hits)


def test_stopwords_do_not_match_everything(ladder: Path, cli) -> None:
    env = cli.json("recall", "what did we decide about the rollout", "-w", str(ladder))
    assert set(ids(env)) == {mem_id(n) for n in (1, 2, 3, 4, 5, 6, 7)}


def test_excerpt_is_around_the_match(tmp_path: Path, cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    body = "Filler sentence. " * 40 + "The zeppelin docked at noon. " + "More filler. " * 40
    put(root, "Airships", body, n=1)
    reindex(root)
    hit = cli.json("recall", "zeppelin", "-w", str(root))["data"]["hits"][0]
    assert "zeppelin" in hit["excerpt"]
    assert 100 <= len(hit["excerpt"]) <= 210
    assert hit["excerpt"].startswith("…") and hit["excerpt"].endswith("…")
