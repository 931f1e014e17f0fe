"""Recall answers pinned: the benchmarks' query shapes over the benchmarks' corpus (bench/corpus.py,
seed 7) must rank exactly as the reference recorded in tests/fixtures/recall_reference/ - the
same memories, in the same order, with the same scores and routes.

Speed work on recall (the cache build, the scoring statements, the server's lanes) must not change
an answer; this is what says so. The reference was recorded after the ranking of the recall-trust
work; a change that means to rank differently records it again, on purpose, and says why in its
commit: `BOX_MEMORY_RECORD_REFERENCE=1 pytest tests/recall/test_reference_answers.py`.

The corpus is read twice: as it is (small: one scoring run over every entry) and with the
scoring's size limits lowered so that the same corpus goes through the paths a big one takes
(rid ranges read newest first, rare words scored up first): both must give the reference.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from bench.corpus import generate
from bench.recall_bench import _queries
from box_memory.recall import rank
from tests.conftest import Cli

N = 2000
REFERENCE = Path(__file__).parent.parent / "fixtures" / "recall_reference" / f"bench-{N}.json"
# Each shape as the bench asks it, and with the options agents pass most.
VARIANTS: list[list[str]] = [
    [],
    ["--limit", "3"],
    ["--limit", "40"],
    ["--kind", "decision"],
    ["--include-superseded"],
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("reference") / "ws"
    return root, generate(N, root)


def _answers(cli: Cli, root: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for shape, query, _ in _queries(manifest):
        for extra in VARIANTS:
            env = cli.json("recall", query, *extra, "-w", str(root))
            out[" ".join([shape, *extra])] = [
                [h["id"], h["score"], h["matched_on"]] for h in env["data"]["hits"]
            ]
    return out


@pytest.mark.slow
def test_the_benchmarks_queries_answer_as_the_reference(
    corpus: tuple[Path, dict[str, Any]], cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, manifest = corpus
    got = _answers(cli, root, manifest)
    assert sum(len(v) for v in got.values()) > 100  # the shapes find memories at all
    if os.environ.get("BOX_MEMORY_RECORD_REFERENCE"):
        REFERENCE.write_text(json.dumps(got, indent=1) + "\n")
        pytest.skip(f"reference recorded in {REFERENCE}")
    want = json.loads(REFERENCE.read_text())
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    # The same corpus through a big cache's paths: ranges newest first, rare words first.
    monkeypatch.setattr(rank, "WINDOW", 64)
    monkeypatch.setattr(rank, "SMALL", 256)
    monkeypatch.setattr(rank, "RARE", 40)
    ranges: list[int] = []
    rare: list[int] = []
    newest_first, rare_first = rank.Ladder._newest_first, rank.Ladder._rare_first

    def counting_ranges(self: rank.Ladder, *a: Any) -> Any:
        before = self.ranges_read
        out = newest_first(self, *a)
        ranges.append(self.ranges_read - before)
        return out

    def counting_rare(self: rank.Ladder, *a: Any) -> Any:
        out = rare_first(self, *a)
        rare.append(len(out[1]))
        return out

    monkeypatch.setattr(rank.Ladder, "_newest_first", counting_ranges)
    monkeypatch.setattr(rank.Ladder, "_rare_first", counting_rare)
    got = _answers(cli, root, manifest)
    for key in want:
        assert got[key] == want[key], f"{key} (read in ranges)"
    assert max(ranges) > 1 and max(rare) > 0, (ranges, rare)  # those paths did run
