"""A question's whole answer, order included, against a brute-force ranking of every memory.

`rank` scores a question (COVER words or more) without reading every memory that holds one of its
words: it reads the entries a field holds a word of first, then only the bodies that can still
reach the cut, newest first. This reference instead scores every memory file with the formula of
rank's docstring and sorts them all by the one total order (score, newest, not superseded, later
id, folder); recall must give exactly that list for every question, and every `--limit N` must
be its first N. The corpus is full of ties: few words, titles and timestamps shared by many
memories, duplicates in two folders, superseded copies. Each corpus is asked with one run over
every entry and with tiny newest-first ranges (which also take `_rare_first`).
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
from box_memory.format.model import HIDDEN_STATUSES
from box_memory.recall import rank
from box_memory.recall.cache_db import folded
from box_memory.recall.query import RecallRequest, tokens_of
from box_memory.recall.rank import COVER, LEVELS
from box_memory.recall.service import recall
from box_memory.workspace.resolve import open_workspace
from tests.recall.helpers import put, reindex

# Made-up words the Porter stemmer leaves alone, so a body holds a token for FTS5 exactly when
# the reference's word split finds it there.
COMMON = ["bakox", "mizup", "tulez", "rekok", "zanop", "vipex", "lumiz", "petuk"]
OFTEN = [24, 12, 8, 6, 4, 3, 2, 1]  # how often each is drawn: the words weigh 1 to 4 here
OTHER = ["dorvik", "sufnal", "gembot"]
RARE = ["korbax", "nivup"]  # one or two memories each: `_rare_first` takes them in ranged mode
STAMPS = ["2026-03-01T10:00:00.000Z", "2026-03-01T10:00:00.000Z", "2026-02-01T10:00:00.000Z"]
FILLER = ["what", "did", "we", "about", "the"]  # stopwords: dropped from the tokens


def _corpus(root: Path, seed: int) -> None:
    rng = random.Random(seed)
    n = 0
    for k in range(70):
        # A third are named with words no question asks for: their bodies alone can match.
        named = OTHER if k % 3 == 0 else COMMON
        title = " ".join(dict.fromkeys(rng.choices(named, OFTEN[: len(named)], k=rng.randint(1, 3))))
        tags = sorted(set(rng.choices(named, OFTEN[: len(named)], k=rng.randint(0, 2))))
        body = " ".join(rng.choices(COMMON, OFTEN, k=rng.randint(0, 6)))
        stamp = rng.choice(STAMPS)
        for copy in range(rng.choice([1, 1, 2, 4])):  # an import's duplicates
            n += 1
            put(
                root,
                title.capitalize(),
                body + (" " + RARE[k % 2] if k in (3, 9, 10) and copy == 0 else ""),
                n=n,
                slug=f"{slugify(title)}-{n}",
                tags=tags or None,
                folder="memories" if copy % 2 == 0 else "teams/ops/memories",
                status="superseded" if rng.random() < 0.15 else "active",
                updated=stamp,
            )
    reindex(root)


def _memories(root: Path) -> list[dict[str, Any]]:
    mems = []
    for path in sorted(root.glob("**/memories/*.md")):
        meta, body = frontmatter.parse(path.read_text(), str(path))
        folder = str(path.parent.relative_to(root))
        mems.append({**meta, "tags": meta.get("tags") or [], "body": body, "folder": folder})
    return mems


def _field_words(m: dict[str, Any]) -> list[set[str]]:
    tags = {w for t in m["tags"] for w in re.findall(r"\w+", folded(t))}
    return [set(re.findall(r"\w+", folded(m["title"]))), set(re.findall(r"\w+", folded(m["slug"]))), tags]


def _in_field(t: str, words: set[str]) -> bool:
    return any(w == t or (len(t) >= 4 and w.startswith(t)) for w in words)


def _reference(query: str, mems: list[dict[str, Any]], include_hidden: bool) -> list[tuple[str, float]]:
    """Every memory scored by the formula, in the one total order: (id, score)."""
    tokens = tokens_of(query)
    assert len(tokens) >= COVER
    qn = folded(query)
    qslug = slugify(query)
    qtag = normalize_tag(query)
    held: list[tuple[list[bool], list[bool]]] = []  # per memory: (in a field, in the body) per token
    for m in mems:
        fields, body = _field_words(m), set(re.findall(r"\w+", m["body"].casefold()))
        held.append(([any(_in_field(t, f) for f in fields) for t in tokens], [t in body for t in tokens]))
    n = len(mems)
    weights = []
    for i in range(len(tokens)):
        df = max(sum(f[i] for f, _ in held), sum(b[i] for _, b in held))
        weights.append(1 + max(0, int(math.log2(n / (df + 1)))))
    total = sum(weights)
    scored: list[tuple[float, dict[str, Any]]] = []
    for m, (in_field, in_body) in zip(mems, held, strict=True):
        if not include_hidden and m["status"] in HIDDEN_STATUSES:
            continue
        if folded(m["title"]) == qn:
            scored.append((10.0, m))
        elif folded(m["slug"]) in (qn, qslug):
            scored.append((8.0, m))
        elif qn in [folded(t) for t in m["tags"]] or qtag in [folded(t) for t in m["tags"]]:
            scored.append((6.0, m))
        elif any(in_field) or any(in_body):
            w = sum(wt for wt, f, b in zip(weights, in_field, in_body, strict=True) if f or b)
            level = (w * 2 * LEVELS + total) // (2 * total)
            fields = _field_words(m)
            best = max((4 - k for k in range(3) for t in tokens if _in_field(t, fields[k])), default=1)
            scored.append(((10 + 4 * level + best - 1) / 10, m))
    scored.sort(key=lambda s: s[1]["folder"])
    scored.sort(key=lambda s: s[1]["id"], reverse=True)
    scored.sort(key=lambda s: (-s[0], _neg(s[1]["updated_at"]), bool(s[1].get("superseded_by"))))
    return [(m["id"], score) for score, m in scored]


def _neg(stamp: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in stamp)


def _questions(rng: random.Random, mems: list[dict[str, Any]]) -> list[str]:
    out = []
    for _ in range(24):
        words = rng.sample(COMMON, rng.randint(COVER, 5))
        if rng.random() < 0.3:
            words[0] = words[0][:4]  # a word's start: in a field from four letters, never in a body
        if rng.random() < 0.3:
            words.append(rng.choice(RARE))
        out.append(" ".join(rng.sample(FILLER, 2) + words))
    # Whole titles of three words: exact title hits above the partial ones.
    out += sorted({m["title"] for m in mems if len(tokens_of(m["title"])) >= COVER})[:4]
    return out


def _answer(root: Path, query: str, limit: int, include_hidden: bool) -> list[tuple[str, float]]:
    req = RecallRequest(query=query, limit=limit, include_superseded=include_hidden, brain=False)
    res = recall(open_workspace(str(root)), req)
    return [(h["id"], h["score"]) for h in res.data["hits"]]


@pytest.mark.parametrize("mode", ["one-run", "ranged"])
@pytest.mark.parametrize("seed", [1, 2, 3, 11])
def test_every_question_answers_the_brute_force_order(
    tmp_path: Path, cli, mode: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    if mode == "ranged":
        monkeypatch.setattr(rank, "SMALL", 0)
        monkeypatch.setattr(rank, "WINDOW", 3)
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    _corpus(root, seed)
    mems = _memories(root)
    rng = random.Random(seed)
    checked = 0
    for q in _questions(rng, mems):
        include_hidden = rng.random() < 0.25
        want = _reference(q, mems, include_hidden)
        assert _answer(root, q, 1000, include_hidden) == want, q
        for limit in sorted({1, 2, 3, 5, 10, 17, len(want) // 2, len(want) - 1} - {0}):
            if limit < len(want):
                assert _answer(root, q, limit, include_hidden) == want[:limit], (q, limit)
        checked += len(want)
    assert checked > 1000  # the questions really do match things
