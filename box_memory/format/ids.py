"""Memory ids (`mem_<ULID>`), slugs, and validation of names that become paths."""

from __future__ import annotations

import re
from typing import NewType

from box_memory.errors import InvalidInput

MemoryId = NewType("MemoryId", str)

# Patterns, compiled on first use (`re.compile` keeps them): compiling them at import cost every
# command's start, and most commands use one or two of them.
_ID_RE = r"^mem_[0-9A-HJKMNP-TV-Z]{26}$"
_LOOSE_ID_RE = r"^mem_[0-9A-Za-z]{26}$"
_SLUG_RE = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
_TEAM_RE = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
_TAG_RE = r"^[a-z0-9]+(?:[-/][a-z0-9]+)*$"
_CONTROL_RE = r"[\x00-\x1f\x7f-\x9f]"
MAX_TITLE = 200


def new_id() -> MemoryId:
    from ulid import ULID

    return MemoryId(f"mem_{ULID()}")


def is_memory_id(text: str) -> bool:
    """Accepts the plugin's example ids too (they are not strict Crockford base32): what
    `_LOOSE_ID_RE` matches (`_ID_RE`'s ids are among them), tested without compiling a pattern
    (every recall asks, ~0.2 ms of its start for the two patterns)."""
    body = text[4:-1] if text.endswith("\n") else text[4:]  # `$` also matches before a final newline
    return text.startswith("mem_") and len(body) == 26 and body.isascii() and body.isalnum()


def slugify(title: str) -> str:
    """Lowercase ASCII kebab-case; a title with no ASCII letters/digits gets `memory`."""
    if title.isascii():  # its own NFKD form: no unicodedata (a C extension) loaded for it
        ascii_text = title
    else:
        import unicodedata

        ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:80].rstrip("-") or "memory"


def is_slug(text: str) -> bool:
    """What `_SLUG_RE` matches (lowercase ASCII words joined by single hyphens), without compiling it."""
    if text.endswith("\n"):  # `$` also matches before a final newline
        text = text[:-1]
    return all(p.isascii() and p.isalnum() and (p.islower() or p.isdigit()) for p in text.split("-"))


def next_free_slug(base: str, taken: set[str]) -> str:
    """`base`, else `base-2`, `base-3`, ... - the first not in `taken`."""
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


def validate_title(title: str) -> str:
    title = title.strip()
    if not title:
        raise InvalidInput("title is empty")
    if len(title) > MAX_TITLE:
        raise InvalidInput(f"title is longer than {MAX_TITLE} characters")
    if re.compile(_CONTROL_RE).search(title):
        raise InvalidInput("title contains control characters")
    if ".." in title:
        raise InvalidInput("title contains '..'")
    if "/" in title or "\\" in title:
        raise InvalidInput("title contains a path separator ('/' or '\\')")
    return title


def validate_team(team: str) -> str:
    if not re.compile(_TEAM_RE).match(team) or len(team) > 64:
        raise InvalidInput(
            f"invalid team name {team!r}: use lowercase kebab-case (a-z, 0-9, '-'), at most 64 characters"
        )
    from box_memory.format.names import check_name

    return check_name(team, "team name")  # `con`, `nul`, `com1`...: Windows Box Drive cannot hold them


def normalize_tag(tag: str) -> str:
    """Tags are lowercase and hyphenated; '/' nests (`auth/jwt`)."""
    raw = tag.strip().lower()
    if re.compile(_CONTROL_RE).search(raw):
        raise InvalidInput(f"tag {tag!r} contains control characters")
    parts = [re.sub(r"[^a-z0-9]+", "-", p).strip("-") for p in raw.split("/")]
    if not parts or any(not p for p in parts):
        raise InvalidInput(f"invalid tag {tag!r}: use lowercase words joined by '-', nested with '/'")
    norm = "/".join(parts)
    if not re.compile(_TAG_RE).match(norm):
        raise InvalidInput(f"invalid tag {tag!r}")
    return norm
