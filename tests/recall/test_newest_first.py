"""Free-text scoring reads a large cache newest first, in rid ranges, and stops once nothing older
can make the cut (`rank.Ladder._newest_first`). The answers must be exactly those of one run
over every entry: same memories, same order, same scores - ties included."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from box_memory.recall import rank
from tests.recall.helpers import put, reindex

WORDS = ["rollout", "canary", "retry", "backoff", "plan", "sso", "auth", "queue", "ledger", "cache"]
RARE = ["zephyr", "quokka"]  # in very few memories: scored up front (`_rare_first`)
FILLER = ["the", "team", "agreed", "after", "review", "oauth", "retrying", "caches", "planned", "notes"]
# Few distinct times: many memories share one, so ties on score and time decide the cut-off.
STAMPS = [f"2026-0{m}-1{d}T10:00:00.000Z" for m in (1, 2, 3) for d in (1, 2, 3)] + [
    "2026-03-13T10:00:00.001Z",
    "2026-03-13T10:00:00.002Z",
]


@pytest.fixture
def corpus(tmp_path: Path, cli) -> Path:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    rng = random.Random(15)
    for n in range(1, 361):
        title_words = rng.sample(WORDS, rng.choice([1, 1, 2, 2, 3]))
        if n % 61 == 0:
            title_words.append(RARE[n % 2])
        body = " ".join(rng.choice(WORDS + FILLER + FILLER) for _ in range(rng.randint(3, 30)))
        if n % 47 == 0:
            body += " " + RARE[(n + 1) % 2]
        put(
            root,
            " ".join(w.capitalize() if i == 0 else w for i, w in enumerate(title_words)) + f" {n % 7}",
            body,
            n=n,
            kind=rng.choice(["decision", "fact", "note"]),
            tags=rng.sample([*WORDS, "auth/jwt", "ops"], rng.choice([0, 1, 2])) or None,
            folder=rng.choice(["memories", "teams/ops/memories"]),
            status="superseded" if n % 23 == 0 else "active",
            updated=rng.choice(STAMPS),
        )
    reindex(root)
    return root


def _queries() -> list[list[str]]:
    out: list[list[str]] = []
    for size in (1, 2, 3, 4):
        for combo in itertools.islice(itertools.combinations(WORDS, size), 0, None, 11 if size > 1 else 1):
            out.append([" ".join(combo)])
    out += [
        ["retry backoff zephyr"],
        ["quokka plan"],
        ["zephyr quokka"],
        ["rollout canary retry backoff plan sso auth queue ledger cache notes"],
        ["auth kind:decision"],
        ["plan retry tag:auth"],
        ["cache queue", "--since", "2026-02-12"],
        ["sso plan", "--include-superseded"],
        ["retry", "--until", "2026-02-12"],
        ["what did we decide about the retry queue"],
    ]
    return out


def _answers(cli, root: Path) -> list[Any]:
    out = []
    for q in _queries():
        for limit in (2, 10, 40):
            env = cli.json("recall", *q, "--limit", str(limit), "-w", str(root))
            out.append([(h["id"], h["score"], h["matched_on"]) for h in env["data"]["hits"]])
    return out


@pytest.mark.slow
def test_reading_newest_first_answers_as_one_run_over_everything(
    corpus: Path, cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs: list[int] = []
    real = rank.Ladder._newest_first

    def counted(self: rank.Ladder, *args: Any) -> Any:
        before = self.ranges_read
        got = real(self, *args)
        runs.append(self.ranges_read - before)
        return got

    monkeypatch.setattr(rank.Ladder, "_newest_first", counted)
    monkeypatch.setattr(rank, "SMALL", 10**9)  # one run over every entry
    whole = _answers(cli, corpus)
    assert set(runs) == {1}
    runs.clear()
    monkeypatch.setattr(rank, "SMALL", 0)
    monkeypatch.setattr(rank, "WINDOW", 4)  # ranges of 4, 6, 9, 13... entries
    ranged = _answers(cli, corpus)
    assert ranged == whole
    assert sum(1 for h in whole if h) > 100  # the queries do find memories
    # It did read in ranges, and stopped early for some queries (else it proves nothing).
    assert max(runs) > 3 and min(runs) < max(runs)


def test_a_cache_of_the_previous_schema_is_rebuilt_with_rids_in_time_order(corpus: Path, cli) -> None:
    import sqlite3

    from box_memory.paths import user_dirs
    from box_memory.recall.cache_db import RID_SHIFT, SCHEMA_VERSION, rid_bucket, uts_below

    first = cli.json("recall", "retry backoff", "-w", str(corpus))
    (path,) = user_dirs().recall_cache_dir.glob("*.sqlite3")
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET v = '8' WHERE k = 'schema'")  # as the release before left it
    db.commit()
    db.close()
    again = cli.json("recall", "retry backoff", "-w", str(corpus))
    assert again["data"]["cache"]["rebuilt"] is True
    assert again["data"]["hits"] == first["data"]["hits"]
    db = sqlite3.connect(path)
    assert db.execute("SELECT v FROM meta WHERE k = 'schema'").fetchone()[0] == SCHEMA_VERSION
    rows = db.execute("SELECT rid, updated_ts FROM entries ORDER BY rid").fetchall()
    entries = db.execute("SELECT v FROM meta WHERE k = 'entries'").fetchone()[0]
    db.close()
    assert int(entries) == len(rows) > 300
    buckets = [rid_bucket(t) for _, t in rows]
    assert buckets == sorted(buckets)  # rid order is updated-time order (to the bucket)
    assert len(set(buckets)) > 5
    for rid, t in rows:  # and every entry below a rid is older than what `uts_below` says
        bound = uts_below(rid + 1)
        assert bound is not None and t < bound and rid >> RID_SHIFT > 0


def test_a_query_matching_many_memories_exactly_cuts_them_in_the_final_order(corpus: Path, cli) -> None:
    # `retry` is a tag of dozens of memories (exact 6) and a word in many titles (partial 4):
    # only the `limit` best exact matches are fetched, so every shorter answer must be a prefix
    # of the longest one.
    for query in ("retry", "queue", "auth"):
        whole = cli.json("recall", query, "--limit", "400", "-w", str(corpus))["data"]["hits"]
        assert sum(1 for h in whole if h["score"] == 6) > 15
        for limit in (1, 2, 5, 9, 16, 30):
            part = cli.json("recall", query, "--limit", str(limit), "-w", str(corpus))["data"]["hits"]
            assert part == whole[:limit]
