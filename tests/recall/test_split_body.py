"""`split_body` cuts a memory file at the line that closes its frontmatter: the first `---` after
the opening one that is alone on its line (trailing spaces and tabs allowed), with `\\n` or `\\r\\n`
line ends, or at the end of the file. It finds candidates with `str.find` and checks only those;
the cut is the one a regex search for the whole closing line gives."""

from __future__ import annotations

import random
import re

import pytest

from box_memory.recall.cache_db import split_body

_REFERENCE = re.compile(r"\r?\n---[ \t]*(?:\r?\n|\Z)")


def reference(raw: bytes) -> tuple[str, str]:
    text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
    if text.startswith("---"):
        m = _REFERENCE.search(text, 3)
        if m:
            return text[3 : m.start()], text[m.end() :]
    return "", text


@pytest.mark.parametrize(
    ("text", "front", "body"),
    [
        ("---\ntitle: a\n---\nbody\n", "\ntitle: a", "body\n"),
        ("---\r\ntitle: a\r\n---\r\nbody", "\r\ntitle: a", "body"),
        ("---\ntitle: a\n---  \t\nbody", "\ntitle: a", "body"),
        ("---\ntitle: a\n---", "\ntitle: a", ""),
        ("---\nt: ---x\n----\n---x\n---\nbody", "\nt: ---x\n----\n---x", "body"),
        ("\ufeff---\nt: a\n---\nb", "\nt: a", "b"),
        ("---\nt: a\nno close", "", "---\nt: a\nno close"),
        ("no frontmatter\n---\nx", "", "no frontmatter\n---\nx"),
        ("---\n---\nbody", "", "body"),
        ("---\r\n---\r\n", "", ""),
    ],
)
def test_the_frontmatter_ends_at_the_first_dashes_line(text: str, front: str, body: str) -> None:
    assert split_body(text.encode()) == (front, body) == reference(text.encode())


def test_it_cuts_where_a_search_for_the_closing_line_cuts() -> None:
    rng = random.Random(7)
    pieces = ["---", "\n", "\r\n", "\r", "-", "--", " ", "\t", "a", "k: v", "----", "x---"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        raw = (("---" + text) if rng.random() < 0.7 else text).encode()
        assert split_body(raw) == reference(raw), raw
