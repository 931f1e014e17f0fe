"""How the Box Brain review reads text: documents, memories, their sentences, words and claims.

The documents and memories it compares, their sentences and words, and the claims in them
(quantities with their subject, `Key: value` lines).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from box_memory.brain.entry import clean_name

EXCERPT = 240


_STOP = frozenset(
    [
        "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
        "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did",
        "do", "does", "doing", "down", "during", "each", "few", "for", "from", "had", "has", "have",
        "having", "he", "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it",
        "its", "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on",
        "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she", "should", "so",
        "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
        "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were",
        "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
        "your", "yours", "shall", "may", "might", "must", "per", "via"
    ]
)  # fmt: skip
WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+")


_FACT_KEYS = frozenset(
    [
        "owner", "budget", "deadline", "due", "effective", "version", "status", "decision", "policy",
        "contact", "retention", "sla", "rto", "rpo", "region", "vendor", "approver", "approved", "cost",
        "price", "term", "renewal"
    ]
)  # fmt: skip
_KEY_VALUE = re.compile(r"^\s*(?:[-*+]\s*)?\**([A-Za-z][A-Za-z ]{1,30}?)\**\s*:\s*(\S.{0,118})$")
_QUANTITY = re.compile(
    r"(?<![\w.])([$€£])?\s?(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
    r"(%|percent|days?|weeks?|months?|years?|hours?|hrs?|minutes?|mins?|seconds?|secs?|"
    r"kb|mb|gb|tb|eur|usd|gbp|dollars?|euros?|users?|seats?|licen[cs]es?|times?|people|requests?)?\b",
    re.I,
)
_UNITS = {
    "percent": "%",
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
    "hour": "hour",
    "hr": "hour",
    "minute": "minute",
    "min": "minute",
    "second": "second",
    "sec": "second",
    "dollar": "usd",
    "euro": "eur",
    "licence": "license",
    "people": "user",
}
_CURRENCY = {"$": "usd", "€": "eur", "£": "gbp"}
_UNIT_WORDS = frozenset(
    [
        "percent", "day", "days", "week", "weeks", "month", "months", "year", "years", "hour", "hours",
        "hrs", "minute", "minutes", "mins", "second", "seconds", "secs", "eur", "usd", "gbp", "dollar",
        "dollars", "euro", "euros", "user", "users", "seat", "seats", "license", "licenses", "licence",
        "licences", "time", "times", "people", "request", "requests"
    ]
)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Inputs


@dataclass
class Doc:
    """A document the run imported (new or changed)."""

    box_id: str
    name: str
    url: str | None
    path: str
    version: str | None
    text: str
    replaced: bool = False

    def evidence(self, excerpt: str) -> dict[str, Any]:
        return {
            "file": self.name,
            "box_id": self.box_id,
            "url": self.url,
            "path": self.path,
            "version": self.version,
            "excerpt": clipped(excerpt),
        }


@dataclass
class Mem:
    """An active workspace memory, as the review reads it."""

    id: str
    title: str
    kind: str
    body: str
    sources: list[dict[str, Any]] = field(default_factory=list)

    def evidence(self, excerpt: str) -> dict[str, Any]:
        return {"memory_id": self.id, "memory_title": self.title, "excerpt": clipped(excerpt)}


def clipped(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= EXCERPT else flat[: EXCERPT - 1].rstrip() + "…"


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in _STOP and len(w) > 2 and not w.isdigit()}


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("#>*-+ ").strip()
        if not line or set(line) <= set("-=*_`|#"):
            continue
        out.extend(s.strip() for s in _SENTENCE_SPLIT.split(line) if s.strip())
    return out


def safe_title(text: str, limit: int = 120) -> str:
    """A memory title from untrusted text: one line, no path separators or '..', capped."""
    title = clean_name(text, 1000).replace("/", "-").replace("\\", "-")
    while ".." in title:
        title = title.replace("..", ".")
    title = title.strip(" .-") or "Box document"
    if len(title) > limit:
        title = title[: limit - 1].rstrip() + "…"
    return title


def stem(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name[1:] else name


# ---------------------------------------------------------------------------------------------
# Claims (for conflicts)


@dataclass(frozen=True)
class Quantity:
    subject: frozenset[str]
    unit: str
    value: float
    sentence: str


def _unit(raw: str | None, currency: str | None) -> str | None:
    if currency:
        return _CURRENCY.get(currency)
    if not raw:
        return None
    u = raw.lower()
    if u in _UNITS:
        return _UNITS[u]
    if u.endswith("s") and u[:-1] in _UNITS:
        return _UNITS[u[:-1]]
    return u[:-1] if u.endswith("s") and len(u) > 3 else u


def quantities(text: str) -> list[Quantity]:
    out: list[Quantity] = []
    for sentence in sentences(text):
        found = []
        for m in _QUANTITY.finditer(sentence):
            unit = _unit(m.group(3), m.group(1))
            if unit is None:
                continue
            try:
                value = float(m.group(2).replace(",", ""))
            except ValueError:
                continue
            found.append((unit, value))
        if not found:
            continue
        subject = frozenset(words(sentence) - _UNIT_WORDS)
        for unit, value in found:
            out.append(Quantity(subject, unit, value, sentence))
    return out


def key_values(text: str) -> dict[str, tuple[str, str]]:
    """`Key: value` lines for well-known keys -> {key: (value, line)}."""
    out: dict[str, tuple[str, str]] = {}
    for raw in text.splitlines():
        m = _KEY_VALUE.match(raw)
        if not m:
            continue
        key = " ".join(m.group(1).lower().split())
        if not (set(key.split()) & _FACT_KEYS):
            continue
        out.setdefault(key, (m.group(2).strip().strip("*").strip(), raw.strip()))
    return out


def overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def fmt(value: float) -> str:
    return f"{value:g}"
