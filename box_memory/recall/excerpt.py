"""Excerpts of recall hits: ~200 characters of a body around the first match, and the highlights."""

from __future__ import annotations

import functools
import re

EXCERPT_CHARS = 200


def excerpt(body: str, title: str, terms: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """~200 characters of the body around the first match (else its opening), with match spans."""
    lines = body.strip().splitlines()
    if lines and lines[0].lstrip("# ").strip() == title.strip() and lines[0].startswith("#"):
        lines = lines[1:]
    flat = " ".join(" ".join(lines).split())
    if not flat:
        return "", []
    whole, stemmed = _patterns(tuple(terms))
    rx = whole
    m = rx.search(flat) if rx else None
    if m is None and stemmed is not None:
        # Stemmed body matches ("decide" found "decided"): fall back to the word's stem.
        rx = stemmed
        m = rx.search(flat)
    start = 0
    if m is not None and m.start() > EXCERPT_CHARS // 3:
        start = m.start() - EXCERPT_CHARS // 3
        sp = flat.find(" ", start)
        start = sp + 1 if 0 <= sp < m.start() else start
    end = start + EXCERPT_CHARS
    if end < len(flat):
        sp = flat.rfind(" ", start + EXCERPT_CHARS // 2, end)
        end = sp if sp > 0 else end
    text = flat[start:end]
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
    marks = [(a.start() + len(prefix), a.end() + len(prefix)) for a in rx.finditer(text)] if rx else []
    return prefix + text + suffix, marks


@functools.lru_cache(maxsize=64)
def _patterns(terms: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The query's terms as whole tokens (`use` does not mark the start of `user-facing`) and as
    stems: built once per query, not once per hit."""
    pats = [re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if t]
    whole = re.compile(r"(?<!\w)(?:" + "|".join(pats) + r")(?!\w)", re.IGNORECASE) if pats else None
    stems = [re.escape(t[: max(3, len(t) - 3)]) for t in terms if len(t) > 3]
    stemmed = re.compile(r"\b(?:" + "|".join(stems) + r")\w*", re.IGNORECASE) if stems else None
    return whole, stemmed


def spans_out(spans: list[tuple[int, int]]) -> list[list[int]]:
    """Highlights as JSON gives them: [start, end) offsets in characters (Unicode code points)
    into the hit's `excerpt`, in order and never overlapping - what a terminal shows in colour."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if b > a and (not out or a >= out[-1][1]):
            out.append([a, b])
    return out


def mark_terms(text: str, terms: list[str]) -> list[list[int]]:
    """The spans of `terms` in an excerpt (whole tokens, any case; else a stem of each word, as a
    stemmed full-text match found it)."""
    pats = [re.escape(t) for t in sorted(set(terms), key=len, reverse=True) if t]
    if not text or not pats:
        return []
    rx = re.compile(r"(?<!\w)(?:" + "|".join(pats) + r")(?!\w)", re.IGNORECASE)
    spans = [(m.start(), m.end()) for m in rx.finditer(text)]
    if not spans:
        stems = [re.escape(t[: max(3, len(t) - 3)]) for t in terms if len(t) > 3]
        if stems:
            rx = re.compile(r"\b(?:" + "|".join(stems) + r")\w*", re.IGNORECASE)
            spans = [(m.start(), m.end()) for m in rx.finditer(text)]
    return spans_out(spans)
