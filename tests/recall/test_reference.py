"""Recall's ranking against a direct reading of the spec, on a randomised workspace.

The reference below re-reads every memory file and scores it the way cli.md words the ladder
(and a query of COVER words or more as recall's module docstring words it);
recall (SQLite cache, postings, FTS5) must agree on every title/slug/tag hit - id, score, order -
and on which memories match by body only.
"""

from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from box_memory.format import frontmatter
from box_memory.format.ids import normalize_tag, slugify
from box_memory.recall.cache_db import folded
from box_memory.recall.query import tokens_of
from box_memory.recall.rank import COVER, LEVELS
from tests.recall.helpers import put, reindex

# Made-up words that the Porter stemmer leaves alone (no English suffixes), so "the body holds the
# token" means the same thing to FTS5 and to the reference's word split.
SYL = ["ba", "ko", "mi", "tu", "re", "za", "no", "vi", "pe", "lu"]
END = ["k", "x", "z", "p"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYL) for _ in range(rng.randint(1, 2))) + rng.choice(END)


def _reference(query: str, mems: list[dict[str, Any]]) -> tuple[list[tuple[str, float]], set[str]]:
    """(title/slug/tag hits as (id, score) best first, ids matching by body only)."""
    qn = folded(query)
    tokens = tokens_of(query)
    qslug = slugify(query) if re.search("[A-Za-z0-9]", query) else None
    try:
        qtag = normalize_tag(query)
    except Exception:
        qtag = None
    field: list[tuple[float, str, str]] = []
    body_only: set[str] = set()
    for m in mems:
        title, slug, tags = folded(m["title"]), folded(m["slug"]), [folded(t) for t in m["tags"]]
        words = set(re.findall(r"\w+", m["body"].casefold()))
        if title == qn:
            score = 10.0
        elif slug in (qn, qslug):
            score = 8.0
        elif qn in tags or (qtag is not None and qtag in tags):
            score = 6.0
        elif len(tokens) >= COVER:
            scored = _cover(tokens, m, mems)
            if scored is None:
                continue
            score, best = scored
            if best == 1:  # in the body only
                body_only.add(m["id"])
                continue
        else:
            best = 0
            for t in tokens:
                w = 4 if t in title else 3 if t in slug else 2 if any(t in g for g in tags) else 0
                best = max(best, w)
            if not best:
                if any(t in words for t in tokens):
                    body_only.add(m["id"])
                continue
            found = sum(
                1 for t in tokens if t in title or t in slug or any(t in g for g in tags) or t in words
            )
            score = round(best + 0.1 * min(9, found - 1), 6)
        field.append((score, m["updated_at"], m["id"]))
    field.sort(key=lambda x: (-x[0], _neg(x[1]), x[2]))
    return [(i, s) for s, _u, i in field], body_only


def _field_words(m: dict[str, Any]) -> list[set[str]]:
    """The words of the title, the slug and the tags (the fields 4, 3, 2)."""
    tags = {w for t in m["tags"] for w in re.findall(r"\w+", folded(t))}
    return [set(re.findall(r"\w+", folded(m["title"]))), set(re.findall(r"\w+", folded(m["slug"]))), tags]


def _cover(tokens: list[str], m: dict[str, Any], mems: list[dict[str, Any]]) -> tuple[float, int] | None:
    """A question's (score, best field) as recall's docstring words it; None: nothing matches."""

    def in_field(t: str, words: set[str]) -> bool:
        return any(w == t or (len(t) >= 4 and w.startswith(t)) for w in words)

    def holds(t: str, mem: dict[str, Any]) -> tuple[bool, bool]:
        fields = any(in_field(t, f) for f in _field_words(mem))
        return fields, t in set(re.findall(r"\w+", mem["body"].casefold()))

    n = len(mems)
    weights = []
    for t in tokens:
        got = [holds(t, x) for x in mems]
        df = max(sum(b for _, b in got), sum(f for f, _ in got))
        weights.append(1 + max(0, int(math.log2(n / (df + 1)))))
    held = [t for t in tokens if any(holds(t, m))]
    if not held:
        return None
    w = sum(weights[i] for i, t in enumerate(tokens) if t in held)
    level = (w * 2 * LEVELS + sum(weights)) // (2 * sum(weights))
    fields = _field_words(m)
    best = max((4 - k for k in range(3) for t in held if in_field(t, fields[k])), default=1)
    return (10 + 4 * level + best - 1) / 10, best


def _neg(stamp: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in stamp)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]], random.Random]:
    from typer.testing import CliRunner

    from box_memory.cli.app import app

    rng = random.Random(20260522)
    root = tmp_path_factory.mktemp("ref") / "ws"
    res = CliRunner().invoke(app, ["init", "--path", str(root), "--team", "ops", "--json"])
    assert res.exit_code == 0, res.stdout
    vocab = sorted({_word(rng) for _ in range(60)})
    taken: set[tuple[str, str]] = set()
    for n in range(1, 161):
        folder = "memories" if rng.random() < 0.6 else "teams/ops/memories"
        title = " ".join(rng.sample(vocab, rng.randint(1, 3)))
        if rng.random() < 0.2:
            title = title.capitalize() + "!"
        slug = slugify(title) if rng.random() < 0.8 else "-".join(rng.sample(vocab, 2))
        while (folder, slug) in taken:
            slug += "-x"
        taken.add((folder, slug))
        tags = sorted(
            {rng.choice(vocab) + rng.choice(["", "-" + rng.choice(vocab)]) for _ in range(rng.randint(0, 3))}
        )
        body = " ".join(rng.choices(vocab, k=rng.randint(3, 25)))
        minute = rng.randrange(0, 60 * 24 * 28)
        stamp = f"2026-02-{minute // 1440 + 1:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:00.000Z"
        put(root, title, body, n=n, slug=slug, tags=tags, folder=folder, updated=stamp)
    reindex(root)
    mems = []
    for path in sorted(root.glob("**/memories/*.md")):
        meta, body = frontmatter.parse(path.read_text(), str(path))
        mems.append({**meta, "tags": meta.get("tags") or [], "body": body})
    return root, mems, rng


@pytest.mark.slow
def test_ranking_matches_the_reference(world, cli) -> None:
    root, mems, rng = world
    vocab = sorted({w for m in mems for w in re.findall(r"\w+", m["title"].casefold())})
    queries = [m["title"] for m in rng.sample(mems, 8)]
    queries += [m["slug"].replace("-", " ") for m in rng.sample(mems, 4)]
    queries += [t for m in rng.sample(mems, 12) for t in m["tags"][:1]]
    queries += [" ".join(rng.sample(vocab, k)) for k in (1, 1, 2, 2, 3, 3, 4)]
    queries += [w[:3] for w in rng.sample(vocab, 4)]  # substrings of words
    checked = 0
    for q in queries:
        env = cli.json("recall", q, "--limit", "500", "-w", str(root))
        got = [(h["id"], h["score"]) for h in env["data"]["hits"] if h["matched_on"] != "body"]
        got_body = {h["id"] for h in env["data"]["hits"] if h["matched_on"] == "body"}
        want, want_body = _reference(q, mems)
        assert got == want, q
        assert got_body == want_body, q
        checked += len(want) + len(want_body)
    assert checked > 200  # the queries really do match things
