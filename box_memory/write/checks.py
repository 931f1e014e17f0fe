"""The checks a write makes before it touches a workspace: its text, writer, tags, sources, related
titles and any frontmatter the text carries; pure functions, no workspace."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from box_memory.errors import InvalidInput
from box_memory.format import frontmatter
from box_memory.format.ids import normalize_tag, validate_title
from box_memory.format.model import parse_time
from box_memory.format.safeio import LIMITS, human

MAX_CONTENT_BYTES = 1024 * 1024
MAX_TAG = 100  # characters in one tag
MAX_AGENT = 200  # characters in --agent
_BINARY_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_DECISION_RE = re.compile(r"\b(we|i|team)\s+(decided|will use|chose|choose|agreed|are going with)\b", re.I)
_TASK_RE = re.compile(r"(\bTODO\b|\bneed to\b|\bneeds to\b|^\s*[-*] \[ \])", re.I | re.M)
_SOURCE_RE = re.compile(r"^([a-z][a-z0-9_-]{0,31}):(.+)$")
_NAME_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _too_large() -> InvalidInput:
    return InvalidInput(f"content is larger than {MAX_CONTENT_BYTES // 1024} KiB")


def decode_text(raw: bytes) -> str:
    """Bytes read from stdin or a file as text: within the size limit and UTF-8, else refused."""
    if len(raw) > MAX_CONTENT_BYTES:
        raise _too_large()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("content is binary (not UTF-8 text); describe binaries with `companion`") from None


def check_content(content: str | bytes) -> str:
    """A memory's text, checked once: size, UTF-8, no binary or control characters, not empty."""
    if isinstance(content, bytes):
        content = decode_text(content)
    if len(content.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
        raise _too_large()
    if _BINARY_RE.search(content):
        raise InvalidInput("content contains binary/control characters; describe binaries with `companion`")
    if not content.strip():
        raise InvalidInput("content is empty")
    return content


def check_readable(data: bytes, path: str) -> None:
    """Nothing is committed that cannot be read back: the rendered file must be within the read
    caps (safeio.LIMITS) and its frontmatter must parse. Called before anything is written."""
    from box_memory.errors import InvalidFile

    if len(data) > LIMITS["memory"]:
        raise InvalidInput(
            f"{path} would be {len(data)} bytes, over the {human(LIMITS['memory'])} limit for "
            "memory files; nothing was written"
        )
    try:
        frontmatter.parse(data.decode("utf-8"), path)
    except InvalidFile as e:
        raise InvalidInput(f"{e}; nothing was written") from None


def render_body(title: str, content: str) -> str:
    content = content.strip("\n")
    if content.lstrip().startswith("# "):
        return content + "\n"
    return f"# {title}\n\n{content}\n"


def infer_kind(content: str) -> str:
    """decision / task from clear phrasing, otherwise note (never guess fact/observation/reference)."""
    if _DECISION_RE.search(content):
        return "decision"
    if _TASK_RE.search(content):
        return "task"
    return "note"


def check_agent(agent: str | None) -> str | None:
    """The writer's name: short, one line, no control or bidi characters (it is shown to people)."""
    if agent is None:
        return None
    if len(agent) > MAX_AGENT:
        raise InvalidInput(f"agent name is longer than {MAX_AGENT} characters")
    if _NAME_CONTROL_RE.search(agent):
        raise InvalidInput(f"agent name {agent[:40]!r} contains control or bidi characters")
    if not agent.strip():
        raise InvalidInput("agent name is empty")
    return agent


def check_tag(tag: str) -> str:
    norm = normalize_tag(tag)
    if len(norm) > MAX_TAG:
        raise InvalidInput(f"tag {norm[:40]}... is longer than {MAX_TAG} characters")
    return norm


def parse_source(text: str) -> dict[str, str]:
    m = _SOURCE_RE.match(text.strip())
    if not m or not m.group(2).strip():
        raise InvalidInput(f"invalid --source {text!r}: use TYPE:REF (e.g. url:https://..., box_file:123)")
    return {"type": m.group(1), "ref": m.group(2).strip()}


def parse_related(text: str) -> str:
    t = text.strip()
    inner = t[2:-2] if t.startswith("[[") and t.endswith("]]") else t
    validate_title(inner)
    return f"[[{inner}]]"


def memory_filename(kind: str, slug: str) -> str:
    return f"{kind}__{slug}.md"


INPUT_META_KEYS = (
    "title",
    "kind",
    "status",
    "tags",
    "related",
    "confidence",
    "agent",
    "sources",
    "links",
    "expires_at",
)


def split_input(content: str) -> tuple[dict[str, Any], str]:
    """Content may carry its own frontmatter (an agent piping a whole memory file).

    Its YAML goes through the same safe, bounded loader as files on disk; bookkeeping keys
    (id, slug, created_at, ...) are ignored because a write always makes a new memory.
    """
    if not content.startswith("---"):
        return {}, content
    from box_memory.errors import InvalidFile

    try:
        meta, body = frontmatter.parse(content, "content frontmatter")
    except InvalidFile as e:
        raise InvalidInput(str(e)) from None
    return {k: meta[k] for k in INPUT_META_KEYS if meta.get(k) is not None}, body


def as_list(v: Any, key: str) -> list[Any]:
    """A frontmatter value that must be a list (one string or mapping counts as a list of one)."""
    if isinstance(v, list):
        return v
    if isinstance(v, (str, dict)):
        return [v]
    raise InvalidInput(f"content frontmatter: '{key}' must be a list")


def as_str(v: Any, key: str) -> str:
    """A frontmatter value that must be text (a number is taken as its text)."""
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        raise InvalidInput(f"content frontmatter: '{key}' must be text")
    return str(v)


def given_sources(given: dict[str, Any]) -> list[str]:
    """The frontmatter's `sources` as TYPE:REF texts (a mapping with type and ref, or a text)."""
    sources = []
    for s in as_list(given.get("sources", []), "sources"):
        if isinstance(s, dict) and s.get("type") and s.get("ref"):
            sources.append(f"{s['type']}:{s['ref']}")
        else:
            sources.append(as_str(s, "sources"))
    return sources


def given_confidence(given: dict[str, Any]) -> Any:
    conf = given.get("confidence")
    if conf is not None and (isinstance(conf, bool) or not isinstance(conf, (int, float))):
        raise InvalidInput("content frontmatter: 'confidence' must be a number")
    return conf


def given_expiry(given: dict[str, Any]) -> str | None:
    """The frontmatter's `expires_at` as ISO-8601 text (YAML may have parsed it into a date)."""
    value = given.get("expires_at")
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        value = value.isoformat()
    text = as_str(value, "expires_at")
    if parse_time(text) is None:
        raise InvalidInput(f"content frontmatter: 'expires_at' is not an ISO-8601 date ({text[:40]!r})")
    return text
