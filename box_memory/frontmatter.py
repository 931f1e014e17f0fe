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

MAX_FRONTMATTER_BYTES = 64 * 1024
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
