"""The emulated Box AI tools: questions over files and hubs, structured extraction.

Guess about the real service: the AI tools are extractive and deterministic, not generative: an
answer is made of the sentences sharing the most words with the question, in document order.
"""

from __future__ import annotations

import re
import time
from typing import Any

from box_memory.emulator.boxapi import BoxApiError, Item, bad_request, rfc3339
from box_memory.emulator.boxfs import BoxFS
from box_memory.emulator.read_tools import STOP_WORDS, terms
from box_memory.emulator.tool_args import ToolContext, box_id, list_arg, required

MAX_AI_FILES = 25
AI_AGENT_INFO = {
    "models": [
        {"name": "box-emulator-extractive", "provider": "box-emulator", "supported_purpose": "extractive"}
    ],
    "processor": "extractive",
}


# -- extractive "AI" ---------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    """Sentences of prose: markdown rules, frontmatter fences and bare headings markers dropped."""
    out: list[str] = []
    for raw in text.splitlines():
        line = raw.strip().lstrip("#>*- ").strip()
        if not line or set(line) <= set("-=*_`|"):
            continue
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", line) if s.strip())
    return out


def _extract(
    question: str, docs: list[tuple[Item, str]], *, top: int = 3
) -> tuple[str, list[tuple[Item, str]]]:
    wanted = {w for w in terms(question) if w not in STOP_WORDS}
    scored: list[tuple[int, int, Item, str]] = []
    position = 0
    for item, text in docs:
        for sentence in _sentences(text):
            score = len(wanted & set(terms(sentence)))
            scored.append((score, position, item, sentence))
            position += 1
    best = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))[:top]
    if not best:
        best = scored[:2]
    best.sort(key=lambda s: s[1])
    return " ".join(s[3] for s in best), [(s[2], s[3]) for s in best]


def _ai_answer(answer: str, cited: list[tuple[Item, str]]) -> dict[str, Any]:
    return {
        "answer": answer,
        "created_at": rfc3339(time.time()),
        "completion_reason": "done",
        "citations": [{"type": "file", "id": i.id, "name": i.name, "content": s} for i, s in cited],
        "ai_agent_info": AI_AGENT_INFO,
    }


def _ai_docs(fs: BoxFS, ids: list[Any], *, binaries: bool = False) -> list[tuple[Item, str]]:
    if not ids:
        raise bad_request("Input validation error: 'file_ids' is a required property")
    if len(ids) > MAX_AI_FILES:
        raise bad_request(f"At most {MAX_AI_FILES} files are supported", "invalid_parameter")
    docs = []
    for raw in ids:
        item = fs.get(box_id(raw), "file")
        text = fs.text_of(item)
        if text is None and binaries:  # extraction reads PDFs and office files: here, their bytes
            text = fs.read_bytes(item).decode("utf-8", "replace")
        docs.append((item, text or ""))
    return docs


def ai_qa_single_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    docs = _ai_docs(ctx.fs, [required(args, "file_id")])
    return _ai_answer(*_extract(str(required(args, "question")), docs))


def ai_qa_multi_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    docs = _ai_docs(ctx.fs, list_arg(required(args, "file_ids")))
    return _ai_answer(*_extract(str(required(args, "question")), docs))


HUB_INDEXING = "The hub is still being indexed for Box AI. Try again later."


def ai_qa_hub(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Box AI over a hub's files. A hub that is still indexing answers nothing (a 409, its wording
    an assumption: Box documents the warm-up, not the error), which is what the client must fall
    back from."""
    hub = ctx.fs.hub(str(required(args, "hub_id")))
    question = str(required(args, "question"))
    if time.time() < float(hub["ready_at"]):
        raise BoxApiError(409, "hub_indexing", HUB_INDEXING)
    files: list[Item] = []
    for raw in hub["items"]:
        item = ctx.fs.get(raw)
        files.extend([item] if item.type == "file" else [i for i in ctx.fs.walk(item) if i.type == "file"])
    docs = [(item, ctx.fs.text_of(item) or "") for item in files[:MAX_AI_FILES]]
    return _ai_answer(*_extract(question, docs))


def _field_value(spec: dict[str, Any], text: str) -> Any:
    names = {str(spec.get(k)) for k in ("key", "displayName", "display_name") if spec.get(k)}
    variants = {v for n in names for v in (n, n.replace("_", " "), n.replace("_", "-"))}
    raw: str | None = None
    for name in sorted(variants):
        found = re.search(
            rf"^[\s>*-]*\**{re.escape(name)}\**\s*[:=]\s*(.+?)\s*$", text, re.IGNORECASE | re.MULTILINE
        )
        if found:
            raw = found.group(1).strip().strip("\"'")
            break
    kind = str(spec.get("type") or "string")
    options = [str(o.get("key") if isinstance(o, dict) else o) for o in spec.get("options") or []]
    if kind in ("enum", "multiSelect"):
        hay = (raw if raw is not None else text).casefold()
        picked = [o for o in options if o.casefold() in hay]
        if kind == "enum":
            return picked[0] if picked else None
        return picked
    if raw is None:
        return None
    if kind == "float":
        number = re.search(r"-?\d+(?:\.\d+)?", raw)
        return float(number.group(0)) if number else None
    if kind == "date":
        date = re.search(r"\d{4}-\d{2}-\d{2}", raw)
        return f"{date.group(0)}T00:00:00Z" if date else None
    return raw


def ai_extract_structured_from_fields(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    docs = _ai_docs(ctx.fs, list_arg(required(args, "file_ids")), binaries=True)
    text = "\n".join(t for _i, t in docs)
    answer: dict[str, Any] = {}
    for spec in list_arg(required(args, "fields")):
        field_spec = spec if isinstance(spec, dict) else {"key": str(spec)}
        if not field_spec.get("key"):
            raise bad_request("Every field needs a 'key'", "invalid_parameter")
        answer[str(field_spec["key"])] = _field_value(field_spec, text)
    return {
        "answer": answer,
        "created_at": rfc3339(time.time()),
        "completion_reason": "done",
        "ai_agent_info": AI_AGENT_INFO,
    }
