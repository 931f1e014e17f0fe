"""The recall cache's postings and tags always describe its live entries exactly.

A removed or replaced entry's postings and tags are found by their keys (the words of its folded
title, slug and tags, and its folded tags), not through an index by rid: after writes, supersedes,
edits in place, index rebuilds, retitles and a folder gone, every posting and tag row belongs to a
live entry and says what that entry's fields say, and a cache built from nothing holds the same.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

from tests.conftest import Cli
from tests.recall.helpers import cache_files, put, reindex
from tests.recall.test_edits_in_place import edit

WORD = re.compile(r"\w+")


Rows = tuple[set[tuple[str, str, int]], set[tuple[str, str]]]


def _rows(db_path: Path) -> tuple[Rows, Rows]:
    """((postings, tags) the cache holds, (postings, tags) its live entries' fields give), each
    row keyed by its entry's folder/id (an orphan by its rid)."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        key = {
            rid: f"{folder}/{mid}" for rid, folder, mid in db.execute("SELECT rid, folder, id FROM entries")
        }
        postings = {
            (key.get(r, f"orphan {r}"), w, f)
            for w, r, f in db.execute("SELECT word, rid, field FROM postings")
        }
        tags = {(key.get(r, f"orphan {r}"), t) for t, r in db.execute("SELECT tag, rid FROM tags")}
        want_p: set[tuple[str, str, int]] = set()
        want_t: set[tuple[str, str]] = set()
        for rid, title_cf, slug_cf, tags_cf, tags_json in db.execute(
            "SELECT rid, title_cf, slug_cf, tags_cf, tags FROM entries"
        ):
            field: dict[str, int] = {}
            for weight, text in ((2, tags_cf), (3, slug_cf), (4, title_cf)):
                field.update(dict.fromkeys(WORD.findall(text), weight))
            want_p |= {(key[rid], w, f) for w, f in field.items()}
            if tags_json != "[]":
                want_t |= {(key[rid], t) for t in tags_cf.split("\n")}
    finally:
        db.close()
    return (postings, tags), (want_p, want_t)


def _check(db_path: Path) -> Rows:
    (postings, tags), (want_p, want_t) = _rows(db_path)
    assert postings == want_p, sorted(postings ^ want_p)
    assert tags == want_t, sorted(tags ^ want_t)
    return postings, tags


def test_postings_and_tags_follow_every_change_and_match_a_fresh_build(tmp_path: Path, cli: Cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    for n in range(1, 30):
        put(root, f"Runbook {n} heron", n=n, tags=["ops", f"area/{n % 3}"])
    put(root, "Team pager rota", n=40, folder="teams/ops/memories", tags=["pager"])
    reindex(root)
    cli.json("recall", "heron", "-w", str(root))  # the cache, built
    (db,) = cache_files()
    _check(db)

    first = cli.json("write", "Heron pages after 3 failures.", "--title", "Heron paging", "--tag", "ops",
                     "-w", str(root))["data"]["id"]  # fmt: skip
    cli.json("write", "After 5 now.", "--title", "Heron paging v2", "--tag", "pager", "--supersedes", first,
             "-w", str(root))  # fmt: skip
    cli.json("recall", "heron", "-w", str(root))
    _check(db)

    # Retitled and retagged in place, then the index rebuilt: the old words and tags must go.
    path = root / "memories" / "note__runbook-7-heron.md"
    edit(path, "title: Runbook 7 heron", "title: Kestrel drills", keep_times=False)
    edit(path, "tags: [ops,", "tags: [drills,", keep_times=False)
    cli.json("recall", "kestrel", "-w", str(root))
    _check(db)
    reindex(root)
    cli.json("recall", "kestrel", "-w", str(root))
    postings, tags = _check(db)
    seven = next(k for k, w, _ in postings if w == "kestrel")
    assert (seven, "runbook", 4) not in postings and (seven, "runbook", 3) in postings  # slug kept
    assert (seven, "drills") in tags and (seven, "ops") not in tags

    shutil.rmtree(root / "teams" / "ops")  # a folder gone: its entries' rows go with it
    cli.json("recall", "heron", "-w", str(root))
    postings, tags = _check(db)
    assert not [k for k, _ in tags if k.startswith("teams/ops/")]

    kept = _rows(db)[0]
    for f in cache_files():
        f.unlink()
    cli.json("recall", "heron", "-w", str(root))  # from nothing
    assert _rows(cache_files()[0])[0] == kept
