"""`--limit N` is exactly the first N hits of the unlimited answer, for every query and every N.

Generated corpora are full of ties: many memories share a title, a slug word, a tag, a body and
one of two timestamps (an import stamps them all alike), so score and `updated_at` leave most of
the order to the stable key. Each corpus is asked with one run over every entry and with the
newest-first ranges (`Search._newest_first`, made to read tiny ranges here so that a small corpus
takes the early-stop path; a corpus of 100 memories or more also takes `_rare_first`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from box_memory.format.ids import slugify
from box_memory.recall import rank
from tests.conftest import Cli
from tests.recall.helpers import put, reindex

WORDS = ["deploy", "canary", "rollback", "plan"]
RARE = "zephyr"
STAMPS = ["2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z", "2026-02-01T10:00:00.000Z"]
QUERIES = [
    "deploy canary",
    "deploy",
    "canary rollback plan",
    "plan zephyr",
    "canary plan zephyr",
    "Deploy canary",
    "rollback kind:note",
    "kind:decision",
    "tag:ops",
    "deploy --include-superseded",
]

note = st.fixed_dictionaries(
    {
        "title": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True),
        "body": st.lists(st.sampled_from([*WORDS, "notes", "the", RARE]), min_size=0, max_size=6),
        "kind": st.sampled_from(["note", "decision"]),
        "tags": st.lists(st.sampled_from(["ops", "deploy", "plan"]), max_size=2, unique=True),
        "folder": st.sampled_from(["memories", "teams/ops/memories"]),
        "stamp": st.sampled_from(STAMPS),
        "superseded": st.booleans(),
    }
)


def _build(root: Path, cli: Cli, notes: list[dict[str, Any]], copies: int) -> None:
    cli.json("init", "--path", str(root), "--team", "ops")
    n = 0
    for spec in notes:
        for _ in range(copies):  # the same note many times over: an import's duplicates
            n += 1
            title = " ".join(spec["title"]).capitalize()
            body = " ".join(w for w in spec["body"] if w != RARE or n % 40 == 1)
            put(
                root,
                title,
                body or "Notes.",
                n=n,
                slug=f"{slugify(title)}-{n}",
                kind=spec["kind"],
                tags=spec["tags"] or None,
                folder=spec["folder"],
                status="superseded" if spec["superseded"] and n % 3 == 0 else "active",
                updated=spec["stamp"],
            )
    reindex(root)


def _ids(cli: Cli, root: Path, query: str, limit: int) -> list[tuple[str, float]]:
    words = query.split(" --")
    args = [words[0], *(f"--{w}" for w in words[1:])]
    env = cli.json("recall", *args, "--no-brain", "--limit", str(limit), "-w", str(root))
    return [(h["id"], h["score"]) for h in env["data"]["hits"]]


def _check(cli: Cli, root: Path, queries: list[str]) -> None:
    for q in queries:
        whole = _ids(cli, root, q, 1000)
        assert whole, q  # every query finds something: else the property holds trivially
        for limit in sorted({1, 2, 3, 5, 8, len(whole) - 1, len(whole)} - {0}):
            assert _ids(cli, root, q, limit) == whole[:limit], (q, limit)


@pytest.mark.parametrize("mode", ["one-run", "ranged"])
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    notes=st.lists(note, min_size=2, max_size=8),
    copies=st.sampled_from([1, 4, 13]),
    queries=st.lists(st.sampled_from(QUERIES), min_size=2, max_size=3, unique=True),
)
@pytest.mark.slow
def test_limit_n_is_the_first_n_of_the_whole_answer(
    mode: str,
    notes: list[dict[str, Any]],
    copies: int,
    queries: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if mode == "ranged":
        monkeypatch.setattr(rank, "SMALL", 0)
        monkeypatch.setattr(rank, "WINDOW", 3)
    cli = Cli()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        _build(root, cli, notes, copies)
        # Exact title matches: many memories share each title.
        queries = [*queries, *sorted({" ".join(n["title"]) for n in notes})]
        if any(n["tags"] for n in notes):
            queries.append(next(t for n in notes for t in n["tags"]))  # exact tag matches
        found = [q for q in queries if _ids(cli, root, q, 1000)]
        _check(cli, root, found)


def test_three_hundred_imported_notes_answer_the_same_first_hit_for_every_limit(
    tmp_path: Path, cli: Cli
) -> None:
    """The issue's case: one import, one timestamp, identical scores."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    for n in range(300):
        put(root, f"Note {n}", "deploy canary steps", n=n + 1, updated="2026-03-01T10:00:00.000Z")
    reindex(root)
    firsts = {_ids(cli, root, "deploy canary", limit)[0] for limit in (1, 2, 5, 10, 50)}
    assert len(firsts) == 1
    whole = _ids(cli, root, "deploy canary", 1000)
    assert len(whole) == 300
    for limit in (1, 2, 5, 10, 150, 299):
        assert _ids(cli, root, "deploy canary", limit) == whole[:limit]
