"""`is_memory_id` and `is_slug` answer as their patterns do (they test strings without compiling
the patterns: every recall asks both on its start)."""

from __future__ import annotations

import random
import re

from box_memory.format import ids

ID = "mem_01JGNTZAFEVSFTZCXNCF1XXSFQ"
EDGES = [
    "", "\n", "-", "a", "a-", "-a", "a--b", "a-b-c1", "A", "Ab", "1", "1-2", "a\n", "a\n\n", "a-\n",
    "ǆ", "ⅰ", "²", "a²", "é", "a b", "a_b", ID, ID + "\n", ID + "\n\n", " " + ID, ID.lower(),
    ID[:-1], ID + "X", ID[:-1] + "²", ID[:-1] + "-", "mem_" + "ǆ" * 26, "MEM_" + ID[4:], "mem_",
]  # fmt: skip


def _samples() -> list[str]:
    rng = random.Random(28)
    out = list(EDGES)
    for _ in range(4_000):
        out.append("".join(rng.choice("abz09AZ-_\n é²ǆ") for _ in range(rng.randint(0, 7))))
        out.append("mem_" + "".join(rng.choice("0Z9az_-\n²ǆ") for _ in range(rng.choice((25, 26, 27)))))
    return out


def test_is_memory_id_matches_the_id_patterns() -> None:
    strict, loose = re.compile(ids._ID_RE), re.compile(ids._LOOSE_ID_RE)
    for s in _samples():
        assert ids.is_memory_id(s) == bool(strict.match(s) or loose.match(s)), repr(s)


def test_is_slug_matches_the_slug_pattern() -> None:
    slug = re.compile(ids._SLUG_RE)
    for s in _samples():
        assert ids.is_slug(s) == bool(slug.match(s)), repr(s)
