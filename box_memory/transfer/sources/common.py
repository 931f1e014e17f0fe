"""What every source reader shares: `SourceItem`, bounded reading, walking, titles, frontmatter.

A source file is read the way every workspace file is (`format.safeio`): at most 8 MiB, never a
FIFO or device, never waited on, and never through a symbolic link that leads out of the source
(`read_inside`); nothing here writes to the source.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box_memory.errors import InvalidFile, InvalidInput
from box_memory.format import frontmatter
from box_memory.format.ids import validate_title
from box_memory.format.model import parse_time
from box_memory.format.safeio import UnreadableFile, read_regular

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
SKIP_DIRS = {".git", ".hg", ".svn", ".obsidian", ".basic-memory", "node_modules", "__pycache__", ".venv"}
H1_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_WIKILINK_RE = re.compile(r"\[\[([^\[\]|#\n]{1,200})(?:[|#][^\]\n]*)?\]\]")
# The frontmatter keys box-memory itself uses: a source's own key of one of these names is kept
# aside (in the source entry), never taken as the memory's.
KNOWN_KEYS = {
    "id", "slug", "title", "kind", "status", "created_at", "updated_at", "team", "agent", "confidence",
    "tags", "related", "links", "sources", "supersedes", "superseded_by", "expires_at", "companion_for",
}  # fmt: skip


@dataclass
class SourceItem:
    """One memory-to-be, read from the source. `error` set: reported, not written."""

    ref: str
    title: str = ""
    content: str = ""
    kind: str | None = None
    tags: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    agent: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    digest: str = ""
    extra_source: dict[str, Any] = field(default_factory=dict)
    # box-memory JSONL only: the memory's own id, status, chain and team.
    keep_id: str | None = None
    status: str | None = None
    supersedes: str | None = None
    team: str | None = None
    confidence: float | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # the source's own frontmatter keys, kept


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def iso_utc(value: object) -> str | None:
    """Any parseable timestamp as ISO-8601 UTC with `Z` (millisecond precision), else None."""
    t = parse_time(value)
    if t is None:
        return None
    import datetime as dt

    t = t.astimezone(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def mtime_iso(path: Path) -> str | None:
    import datetime as dt

    try:
        return iso_utc(dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC))
    except OSError:
        return None


def title_from_text(text: str, fallback: str) -> str:
    """The first `# heading`, else `fallback` (a file stem, or the text's first words)."""
    m = H1_RE.search(text)
    title = m.group(1).strip() if m else fallback
    return clean_title(title) or clean_title(fallback) or "Imported memory"


def clean_title(title: str) -> str:
    """A source title made acceptable as a memory title: no path separators or `..`, <= 120 chars."""
    t = " ".join(title.replace("/", " - ").replace("\\", " - ").split())
    while ".." in t:
        t = t.replace("..", ".")
    return t[:120].strip(" -")


def first_words(text: str, n: int = 10) -> str:
    return " ".join(text.split()[:n])


def wikilinks(text: str) -> list[str]:
    out: list[str] = []
    for m in _WIKILINK_RE.finditer(text):
        target = m.group(1).strip()
        try:
            validate_title(target)
        except InvalidInput:
            continue
        link = f"[[{target}]]"
        if link not in out:
            out.append(link)
    return out


def drop_title_heading(body: str, title: str) -> str:
    """The body without its `# <title>` line when text comes before it: the memory's own heading
    (written first) takes its place, instead of the title appearing twice."""
    if body.lstrip().startswith("# "):
        return body  # the heading leads already: kept as the memory's heading
    for m in H1_RE.finditer(body):
        if clean_title(m.group(1)) == title:
            end = m.end() + (1 if body[m.end() : m.end() + 1] == "\n" else 0)
            if body[end : end + 1] == "\n":
                end += 1
            return body[: m.start()] + body[end:]
    return body


def reason(e: BaseException) -> str:
    """Why a source file could not be read, as the report says it."""
    if isinstance(e, PermissionError):
        return "permission denied (unreadable file)"
    if isinstance(e, OSError):
        return f"unreadable ({e.strerror or e})"
    return str(e)


def read_text(path: Path, *, follow: bool = True) -> tuple[bytes, str]:
    """(bytes, UTF-8 text) of one source file; a FIFO, device or oversized file is refused, never
    waited on (the same bounded read as every workspace file). `follow=False`: a symbolic link
    is refused too, at the open itself."""
    try:
        raw = read_regular(path, "source", follow=follow)
    except UnreadableFile as e:
        raise InvalidInput(str(e)) from None
    try:
        return raw, raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("not UTF-8 text") from None


def outside(path: Path, root: Path) -> str | None:
    """Where `path` really leads when that is outside `root` (a symbolic link out of the source
    tree, to a file or through a linked folder), else None. A link that stays inside is fine."""
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    if real == top or top in real.parents:
        return None
    return str(real)


def abs_path(path: Path) -> Path:
    """`path` made absolute with `..` folded, links left alone."""
    return Path(os.path.normpath(path.absolute()))


def read_inside(path: Path, root: Path, *, walked: bool = True) -> tuple[bytes, str]:
    """`read_text` of a file found under `root`, never through a link that leaves it.

    `walked`: the path came from walking `root` (os.walk enters no linked folder), so only the
    file itself can be a link: a plain file is opened refusing links (no race with a swap), and
    only a link pays for resolving where it leads."""
    if walked and not path.is_symlink():
        return read_text(path, follow=False)
    target = outside(path, root)
    if target is not None:
        raise InvalidInput(f"a symbolic link out of the source (to {target}); not followed")
    return read_text(path)


def walk(root: Path, suffixes: tuple[str, ...] = TEXT_SUFFIXES) -> Iterator[Path]:
    """Text files under root in a stable order, skipping hidden/tool folders and symlinked dirs."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith(suffixes) and not name.startswith("."):
                yield Path(dirpath) / name


def split_frontmatter(text: str, where: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    try:
        return frontmatter.parse(text, where)
    except InvalidFile as e:
        raise InvalidInput(f"invalid frontmatter ({e})") from None


def tag_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [t.strip().lstrip("#") for t in value.split(",") if t.strip().lstrip("#")]
    if isinstance(value, list):
        return [str(t).strip().lstrip("#") for t in value if str(t).strip().lstrip("#")]
    return [str(value)]
