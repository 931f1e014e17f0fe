"""Markdown + YAML frontmatter, parsed safely and within bounds.

Safe means: only plain YAML types (no arbitrary tags), no anchors or aliases at all (so no
expansion bombs), bounded size and nesting, and timestamps kept as the strings they were written as
(the plugin writes `created_at: 2026-05-22T18:32:00Z` unquoted; we never turn it into a datetime).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from box_memory.errors import InvalidFile
from box_memory.format.safeio import LIMITS

MAX_FRONTMATTER_BYTES = LIMITS["frontmatter"]  # the read cap (safeio), checked on write too
MAX_DEPTH = 16

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _without_timestamps(resolvers: dict[str, list[Any]]) -> dict[str, list[Any]]:
    return {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"] for k, v in resolvers.items()
    }


class _Loader(_Base):  # type: ignore[misc]
    yaml_implicit_resolvers = _without_timestamps(yaml.SafeLoader.yaml_implicit_resolvers)


class _Dumper(_BaseDumper):  # type: ignore[misc]
    yaml_implicit_resolvers = _without_timestamps(yaml.SafeDumper.yaml_implicit_resolvers)


def _str_presenter(dumper: Any, data: str) -> Any:
    # Non-ASCII strings are written double-quoted (UTF-8 kept), so both plugin readers accept them.
    if not data.isascii():
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


class FlowList(list):  # type: ignore[type-arg]
    """A list written inline (`tags: [auth, ops]`), as the plugin writes tags."""


def _flow_presenter(dumper: Any, data: FlowList) -> Any:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", list(data), flow_style=True)


_Dumper.add_representer(str, _str_presenter)
_Dumper.add_representer(FlowList, _flow_presenter)


def _check_node(node: Any, where: str) -> None:
    """Reject anchors/aliases (a node reached twice) and excessive nesting, in linear time."""
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(node, 0)]
    while stack:
        n, depth = stack.pop()
        if id(n) in seen:
            raise InvalidFile(f"{where}: YAML anchors/aliases are not allowed in frontmatter")
        seen.add(id(n))
        if depth > MAX_DEPTH:
            raise InvalidFile(f"{where}: frontmatter is nested too deeply")
        if isinstance(n, yaml.SequenceNode):
            stack.extend((c, depth + 1) for c in n.value)
        elif isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))


def load_yaml(text: str, where: str = "frontmatter") -> Any:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FRONTMATTER_BYTES:
        raise InvalidFile(f"{where}: frontmatter is larger than {MAX_FRONTMATTER_BYTES // 1024} KiB")
    fast = fast_mapping(text)
    if fast is not None:
        return fast
    if "&" in text or "*" in text or "!" in text:
        # Only pay for the explicit node walk when an anchor, alias or tag could be present.
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_node(node, where)
            return loader.construct_document(node)
        except yaml.YAMLError as e:
            raise InvalidFile(f"{where}: invalid YAML ({_yaml_reason(e)})") from None
        finally:
            loader.dispose()
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader subclass
    except yaml.YAMLError as e:
        raise InvalidFile(f"{where}: invalid YAML ({_yaml_reason(e)})") from None


# --- fast path -------------------------------------------------------------------------------
# `index-rebuild` parses every memory file; the YAML loader's Python-level constructor dominates
# that. Frontmatter written by box-memory (and by the plugin) has one plain shape: top-level
# `key: scalar`, flow lists of plain words, block lists of scalars or of one-level mappings, and
# one-level nested mappings. `fast_mapping` reads exactly that shape, resolving scalars with the
# loader's own implicit resolvers, and returns None for anything else (quoting escapes, anchors,
# tags, comments, multi-line scalars, odd numbers...), which then goes through the safe loader.
# Tests prove both give identical results on everything the fast path accepts.

_FAIL: Any = object()
_KEY_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.*))?$")
_SIMPLE_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)$")
_SIMPLE_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?$")
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE
_ODD_CHARS = re.compile("[\r\t\x85\u2028\u2029\ufeff]")  # YAML line breaks, tabs, BOM
_RESOLVERS: dict[Any, list[tuple[str, Any]]] = _Loader.yaml_implicit_resolvers
_BY_CHAR = {c: tuple(v + _RESOLVERS.get(None, [])) for c, v in _RESOLVERS.items() if c is not None}
_ANY_CHAR = tuple(_RESOLVERS.get(None, []))
_BAD_START = frozenset("?:,[]{}#&*!|>'\"%@` ")
_VALUE_START = _BAD_START  # quoted and flow values start with one of these too
_FLOW_BAD = re.compile(r"[,\[\]{}:]")
_KEY_CACHE: dict[str, bool] = {}
_BOOLS = {"yes": True, "no": False, "true": True, "false": False, "on": True, "off": False}


def _implicit_tag(value: str) -> str | None:
    for tag, rx in _BY_CHAR.get(value[:1], _ANY_CHAR):
        if rx.match(value):
            return tag
    return None


def _plain_key(key: str) -> bool:
    """A key the loader also reads as that string (not `yes`, `null`, `on`...)."""
    ok = _KEY_CACHE.get(key)
    if ok is None:
        ok = _implicit_tag(key) is None
        if len(_KEY_CACHE) < 1024:
            _KEY_CACHE[key] = ok
    return ok


def _resolve(value: str) -> Any:
    """The value the safe loader would build for a plain scalar, or _FAIL if unsure."""
    tag = _implicit_tag(value)
    if tag is None:
        return value
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return _BOOLS.get(value.lower(), _FAIL)
    if tag == "tag:yaml.org,2002:int" and _SIMPLE_INT.match(value):
        return int(value)
    if tag == "tag:yaml.org,2002:float" and _SIMPLE_FLOAT.match(value):
        return float(value)
    return _FAIL


def _plain(s: str, *, flow: bool = False) -> Any:
    if not s or s[0] in _BAD_START or s[-1] in ": " or " #" in s or ": " in s:
        return _FAIL
    if (s[0] == "-" and (len(s) == 1 or s[1] == " ")) or (flow and _FLOW_BAD.search(s)):
        return _FAIL
    if s[0] not in _BY_CHAR and not _ANY_CHAR:
        return s
    return _resolve(s)


def _scalar(s: str) -> Any:
    if s[:1] == "'":
        inner = s[1:-1]
        if len(s) < 2 or s[-1] != "'" or "'" in inner.replace("''", ""):
            return _FAIL
        return inner.replace("''", "'")
    if s[:1] == '"':
        inner = s[1:-1]
        if len(s) < 2 or s[-1] != '"' or '"' in inner or "\\" in inner:
            return _FAIL
        return inner
    return _plain(s)


def _value(s: str) -> Any:
    if s[:1] == "[":
        if s[-1] != "]" or s.count("[") != 1 or s.count("]") != 1:
            return _FAIL
        inner = s[1:-1]
        if not inner.strip(" "):
            return []
        # Only spaces separate flow items (str.strip would also eat YAML-significant NBSP). A
        # quoted item holding a comma is cut in two here and then fails its closing-quote check.
        items = [
            _scalar(x) if x[:1] in ("'", '"') else _plain(x, flow=True)
            for x in (p.strip(" ") for p in inner.split(","))
        ]
        return _FAIL if any(x is _FAIL for x in items) else items
    return _scalar(s)


def _pairs(lines: list[str], i: int, first: str | None, indent: str) -> tuple[Any, int]:
    """A one-level mapping: `first` (text after `- `, if any), then lines at `indent`."""
    out: dict[str, Any] = {}
    texts = [] if first is None else [first]
    n = len(indent)
    while i < len(lines) and lines[i].startswith(indent) and lines[i][n : n + 1] not in (" ", "-"):
        texts.append(lines[i][n:])
        i += 1
    for text in texts:
        m = _KEY_RE.match(text)
        if not m or m.group(1) in out or not m.group(2) or not _plain_key(m.group(1)):
            return _FAIL, i
        v = _value(m.group(2))
        if v is _FAIL:
            return _FAIL, i
        out[m.group(1)] = v
    return out, i


def _block(lines: list[str], i: int) -> tuple[Any, int]:
    """What follows `key:` on its own line: a block list, a nested mapping, or nothing (null)."""
    if i >= len(lines):
        return None, i
    line = lines[i]
    for ind in ("", "  "):
        if line.startswith(ind + "- "):
            items: list[Any] = []
            while i < len(lines) and lines[i].startswith(ind + "- "):
                text = lines[i][len(ind) + 2 :]
                i += 1
                if _KEY_RE.match(text):
                    item, i = _pairs(lines, i, text, ind + "  ")
                else:
                    item = _scalar(text) if text[:1] != "[" else _FAIL
                if item is _FAIL:
                    return _FAIL, i
                items.append(item)
            return items, i
    if line.startswith("  ") and line[2:3] not in (" ", "-"):
        return _pairs(lines, i, None, "  ")
    if line[:1] in (" ", "-"):
        return _FAIL, i
    return None, i


def fast_mapping(text: str) -> dict[str, Any] | None:
    """Parse box-memory's plain frontmatter shape without the YAML loader, or None to fall back."""
    if _ODD_CHARS.search(text) or _NON_PRINTABLE.search(text):
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: dict[str, Any] = {}
    i, n = 0, len(lines)
    match, keys_ok, by_char = _KEY_RE.match, _KEY_CACHE, _BY_CHAR
    while i < n:
        key, sep, rest = lines[i].partition(": ")
        if not (sep and key.isidentifier() and key.isascii()):
            m = match(lines[i])
            if m is None:
                return None
            key, rest = m.group(1, 2)
        if key in out or not (keys_ok.get(key) or _plain_key(key)):
            return None
        i += 1
        if not rest:
            value, i = _block(lines, i)
        elif (
            rest[0] not in _VALUE_START
            and rest[-1] not in ": "
            and " #" not in rest
            and ": " not in rest
            and not (rest[0] == "-" and (len(rest) == 1 or rest[1] == " "))
        ):
            value = _resolve(rest) if rest[0] in by_char else rest  # the common plain scalar
        else:
            value = _value(rest)
        if value is _FAIL:
            return None
        out[key] = value
    return out or None


def _yaml_reason(e: yaml.YAMLError) -> str:
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    mark = getattr(e, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}" if mark is not None else str(problem)


_FM_RE = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?$\n?", re.S | re.M)


def parse(text: str, where: str = "memory") -> tuple[dict[str, Any], str]:
    """Split a memory file into (frontmatter mapping, body). Raises InvalidFile naming `where`."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---"):
        raise InvalidFile(f"{where}: no YAML frontmatter (the file must start with '---')")
    m = _FM_RE.match(text)
    if not m:
        raise InvalidFile(f"{where}: frontmatter is not closed by a '---' line")
    meta = load_yaml(m.group(1), where)
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise InvalidFile(f"{where}: frontmatter is not a YAML mapping")
    return meta, text[m.end() :]


def dump_yaml(data: dict[str, Any]) -> str:
    if isinstance(data.get("tags"), list):
        data = {**data, "tags": FlowList(data["tags"])}
    out: str = yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000
    )
    return out


def render(meta: dict[str, Any], body: str) -> str:
    if body and not body.startswith("\n"):
        body = "\n" + body
    return f"---\n{dump_yaml(meta)}---\n{body}"


# --- Obsidian aliases ------------------------------------------------------------------------


def with_alias(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` with `aliases: [<title>]` right after the title: Obsidian resolves `[[Title]]` to
    a file through its aliases (files are named `<kind>__<slug>.md`, not after the title). Other
    readers keep the key as they keep any unknown key."""
    title = str(meta.get("title") or "")
    have = meta.get("aliases")
    aliases = [str(a) for a in have] if isinstance(have, list) else ([str(have)] if have else [])
    if title and title.casefold() not in {a.casefold() for a in aliases}:
        aliases.insert(0, title)
    if not aliases:
        return meta
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if k != "aliases":
            out[k] = v
        if k == "title":
            out["aliases"] = aliases
    out.setdefault("aliases", aliases)
    return out


def drop_alias(meta: dict[str, Any], title: str) -> None:
    """The superseded memory gives up the alias its successor now carries, so `[[Title]]` opens
    the current memory of a chain (a successor with another title leaves the old alias alone)."""
    have = meta.get("aliases")
    if have is None:
        return
    aliases = [str(a) for a in have] if isinstance(have, list) else [str(have)]
    kept = [a for a in aliases if a.casefold() != title.casefold()]
    if kept:
        meta["aliases"] = kept
    else:
        del meta["aliases"]
