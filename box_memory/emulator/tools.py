"""The Box MCP tool catalogue over a BoxFS: names and arguments per spec section 2.

Each handler takes the arguments dict and returns a JSON-able payload, or raises BoxApiError,
which the server relays as the Box error JSON in an isError result. Transport concerns (shape of
the result, numeric ids, faults, auth) live in the server module, not here.

Guesses about the real service, where its behaviour is not documented:
- listings return REST "mini" entries unless `fields` is given (then type, id, etag + those fields);
  the `listing` switch can make them return the standard representation instead;
- get_file_content answers `{"id", "name", "content"}`; a file without a text representation
  (binary bytes, or a type Box would convert with converters the emulator lacks: pdf, docx...) is
  an error 400 `bad_request`, and a source over 50 MB an error 400 `file_size_limit_exceeded`;
- upload_file / upload_file_version / move_file / update_file_properties answer the standard file
  object (not the REST `{"total_count": 1, "entries": [...]}` upload wrapper);
- search is a plain case-insensitive substring match on name and text, all query words required,
  stop words ignored (a query of stop words only, like "the", matches every file);
- set_file_metadata creates or replaces the instance (no 409 when one exists);
- the AI tools are extractive and deterministic, not generative: an answer is made of the
  sentences sharing the most words with the question, in document order.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from box_memory.emulator.boxfs import (
    ENTERPRISE_ID,
    ROOT_ID,
    USER,
    BoxApiError,
    BoxFS,
    Item,
    bad_request,
    decode_marker,
    encode_marker,
    not_found,
    rfc3339,
    sort_key,
)

DEFAULT_PAGE = 100
MAX_PAGE = 1000
MAX_SEARCH_PAGE = 200
MAX_AI_FILES = 25
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "these",
        "this",
        "those",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
    ]
)
AI_AGENT_INFO = {
    "models": [
        {"name": "box-emulator-extractive", "provider": "box-emulator", "supported_purpose": "extractive"}
    ],
    "processor": "extractive",
}


@dataclass
class ToolContext:
    """What a handler may use besides its arguments; the switches are read per call."""

    fs: BoxFS
    paging: str = "marker"
    listing: str = "mini"
    search_lag_s: float = 0.0
    mint_download: Callable[[Item], tuple[str, float]] | None = None
    repeat_marker: bool = False
    total_skew: int = 0
    short_pages: bool = False
    page_cap: int = 0
    ignore_offset: bool = False
    fail_later_pages: bool = False
    content_pending: Callable[[str], bool] | None = None
    content_inexact: bool = False
    user: str = "full"
    upload_text_only: bool = False


Handler = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler
    read_only: bool


# -- argument helpers --------------------------------------------------------------------------


def _required(args: dict[str, Any], key: str) -> Any:
    value = args.get(key)
    if value is None or value == "":
        raise bad_request(f"Input validation error: '{key}' is a required property")
    return value


def _id(value: Any) -> str:
    return str(value).strip()


def _int(args: dict[str, Any], key: str, default: int, lo: int, hi: int | None = None) -> int:
    raw = args.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise bad_request(f"Invalid value for '{key}': {raw!r}", "invalid_parameter") from None
    if value < lo:
        raise bad_request(f"Invalid value for '{key}': {raw!r}", "invalid_parameter")
    return min(value, hi) if hi is not None else value


def _list(value: Any) -> list[Any]:
    """Lists may arrive as JSON arrays, JSON-encoded strings or comma separated strings."""
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return parsed
        return [part.strip() for part in text.split(",") if part.strip()]
    return [value]


def _fields(args: dict[str, Any]) -> list[str] | None:
    return [str(f) for f in _list(args.get("fields"))] or None


def _object(args: dict[str, Any], key: str) -> dict[str, Any]:
    value = _required(args, key)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise bad_request(f"Input validation error: '{key}' must be an object") from None
    if not isinstance(value, dict):
        raise bad_request(f"Input validation error: '{key}' must be an object")
    return value


def _text_arg(args: dict[str, Any], key: str) -> bytes:
    value = args.get(key)
    if value is None:
        raise bad_request(f"Input validation error: '{key}' is a required property")
    if not isinstance(value, str):
        raise bad_request(f"Input validation error: '{key}' must be a string")
    return value.encode("utf-8")


def _scope(raw: Any) -> str:
    """ "enterprise" and "enterprise_<id>" name the same scope; "global" is Box's own."""
    scope = str(raw or "").strip()
    if scope in ("enterprise", f"enterprise_{ENTERPRISE_ID}"):
        return f"enterprise_{ENTERPRISE_ID}"
    if scope == "global":
        return "global"
    raise bad_request(f"Invalid scope: {scope!r}", "invalid_parameter")


def _conflict_object(fs: BoxFS) -> Callable[[Item], BoxApiError]:
    return lambda existing: BoxApiError(
        409,
        "item_name_in_use",
        "Item with the same name already exists",
        context_info={"conflicts": fs.mini(existing)},
    )


def _conflict_array(fs: BoxFS) -> Callable[[Item], BoxApiError]:
    return lambda existing: BoxApiError(
        409,
        "item_name_in_use",
        "Item with the same name already exists",
        context_info={"conflicts": [fs.mini(existing)]},
    )


# -- read tools --------------------------------------------------------------------------------


def who_am_i(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    if ctx.user == "mini":  # the `user=mini` switch: Box's mini user representation, no enterprise
        return dict(USER)
    return {
        **USER,
        "created_at": rfc3339(1700000000),
        "modified_at": rfc3339(1700000000),
        "language": "en",
        "timezone": "America/Los_Angeles",
        "space_amount": 10 * 1024**4,
        "space_used": fs.known_bytes(),
        "max_upload_size": 5 * 1024**3,
        "status": "active",
        "job_title": "",
        "phone": "",
        "address": "",
        "avatar_url": "",
        "enterprise": {"type": "enterprise", "id": ENTERPRISE_ID, "name": "Emulated Enterprise"},
    }


def list_folder_content_by_folder_id(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    folder = fs.get(_id(_required(args, "folder_id")), "folder")
    limit = _int(args, "limit", DEFAULT_PAGE, 1, MAX_PAGE)
    fields = _fields(args)
    items = fs.children(folder)
    if ctx.fail_later_pages and (args.get("marker") or _int(args, "offset", 0, 0)):
        # The `fail_later_pages` switch: the listing breaks after its first page, every time.
        raise BoxApiError(500, "internal_server_error", "Internal Server Error")

    def shape(page: list[Item]) -> list[dict[str, Any]]:
        return [fs.select(i, fields, default=ctx.listing) for i in page]

    def size(start: int) -> int:
        """Entries this page holds: the `page_cap` switch caps it silently, `short_pages` hands
        back one fewer than asked for while more follow (both legal for a paging server)."""
        n = min(limit, ctx.page_cap) if ctx.page_cap else limit
        if ctx.short_pages and n > 1 and start + n < len(items):
            n -= 1
        return n

    if ctx.paging == "marker":
        marker = args.get("marker")
        if marker:
            after = decode_marker(str(marker))
            start = next((n for n, i in enumerate(items) if sort_key(i) > after), len(items))
        else:
            start = _int(args, "offset", 0, 0)
        page = items[start : start + size(start)]
        more = start + len(page) < len(items)
        next_marker = encode_marker(page[-1]) if more and page else None
        if more and marker and ctx.repeat_marker:
            next_marker = str(marker)  # the `repeat_marker` switch: a server stuck on one page
        return {"entries": shape(page), "limit": limit, "next_marker": next_marker}
    offset = 0 if ctx.ignore_offset else _int(args, "offset", 0, 0)  # `ignore_offset`: a broken server
    page = items[offset : offset + size(offset)]
    if ctx.paging == "none":  # the `paging=none` switch: entries only, no paging fields at all
        return {"entries": shape(page)}
    total = max(0, len(items) + ctx.total_skew)  # `total_skew`: a total_count that is wrong
    return {"entries": shape(page), "total_count": total, "offset": offset, "limit": limit}


def get_folder_details(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    folder = fs.get(_id(_required(args, "folder_id")), "folder")
    fields = _fields(args)
    out = fs.select(folder, fields)
    if not fields:
        children = fs.children(folder)
        out["item_collection"] = {
            "total_count": len(children),
            "entries": [fs.mini(c) for c in children[:DEFAULT_PAGE]],
            "offset": 0,
            "limit": DEFAULT_PAGE,
            "order": [{"by": "type", "direction": "ASC"}, {"by": "name", "direction": "ASC"}],
        }
    return out


def get_file_details(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    return fs.select(fs.get(_id(_required(args, "file_id")), "file"), _fields(args))


def get_file_content(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(_id(_required(args, "file_id")), "file")
    text = fs.text_of(item)
    if text is None:
        raise bad_request("No text representation is available for this file type")
    if ctx.content_pending is not None and ctx.content_pending(item.id):
        # The `content_pending` switch: the answer Box's toolkit gives while the representation
        # is generated (box-ai-agents-toolkit box_api_file_representation.py), as a success.
        return {
            "message": "markdown representation is still being generated. Please try again later.",
            "status": "pending",
        }
    if ctx.content_inexact:
        # The `content_inexact` switch: an extracted-text representation, not the bytes
        # (trailing spaces and the final newline gone, line ends normalised).
        text = "\n".join(line.rstrip() for line in text.splitlines())
    return {"id": item.id, "name": item.name, "content": text}


def _terms(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _query_matcher(query: str) -> Callable[[str, Callable[[], str | None]], bool]:
    """All non-stop words must occur (substring, case-insensitive) in the name or the text."""
    phrases = [p.casefold() for p in re.findall(r'"([^"]+)"', query)]
    words = [w for w in _terms(re.sub(r'"[^"]*"', " ", query)) if w not in STOP_WORDS]
    needles = phrases + words

    def match(name: str, text: Callable[[], str | None]) -> bool:
        if not needles:
            return True
        hay = name.casefold()
        if all(n in hay for n in needles):
            return True
        body = text()
        hay = hay + "\n" + (body.casefold() if body else "")
        return all(n in hay for n in needles)

    return match


def _metadata_matches(item: Item, mdfilters: list[Any]) -> bool:
    for flt in mdfilters:
        if not isinstance(flt, dict):
            raise bad_request("Invalid mdfilters entry", "invalid_parameter")
        key = flt.get("templateKey") or flt.get("template_key")
        instance = item.metadata.get(f"{_scope(flt.get('scope'))}.{key}")
        if instance is None:
            return False
        for field_key, cond in (flt.get("filters") or {}).items():
            if not _condition(instance.get(field_key), cond):
                return False
    return True


def _condition(value: Any, cond: Any) -> bool:
    if value is None:
        return False
    values = value if isinstance(value, list) else [value]
    if isinstance(cond, dict):
        lo, hi = cond.get("gt"), cond.get("lt")
        try:
            return all((lo is None or v >= lo) and (hi is None or v <= hi) for v in values)
        except TypeError:
            return False
    if isinstance(cond, list):
        return any(v in cond for v in values)
    return cond in values


def _searchable_text(fs: BoxFS, item: Item) -> str | None:
    """Content is indexed only for files with a text representation under the size limit."""
    if not item.size:
        return ""
    try:
        return fs.text_of(item)
    except BoxApiError:
        return None


def search_files_keyword(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    query = str(_required(args, "query"))
    ancestor = fs.get(_id(args.get("ancestor_folder_id") or ROOT_ID), "folder")
    exts = {str(e).strip().lstrip(".").lower() for e in _list(args.get("file_extensions"))}
    mdfilters = _list(args.get("mdfilters"))
    limit = _int(args, "limit", 30, 1, MAX_SEARCH_PAGE)
    offset = _int(args, "offset", 0, 0)
    fields = _fields(args)
    match = _query_matcher(query)
    cutoff = time.time() - ctx.search_lag_s
    hits: list[Item] = []
    for item in fs.walk(ancestor):
        if item.type != "file" or (ctx.search_lag_s and item.changed_at > cutoff):
            continue
        ext = item.name.rsplit(".", 1)[-1].lower() if "." in item.name else ""
        if exts and ext not in exts:
            continue
        if mdfilters and not _metadata_matches(item, mdfilters):
            continue
        if match(item.name, functools.partial(_searchable_text, fs, item)):
            hits.append(item)
    page = hits[offset : offset + limit]
    return {
        "type": "search_results_items",
        "total_count": len(hits),
        "limit": limit,
        "offset": offset,
        "entries": [fs.select(i, fields) for i in page],
    }


def search_folders_by_name(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    needle = str(_required(args, "folder_name")).casefold()
    ancestor = fs.get(_id(args.get("ancestor_folder_id") or ROOT_ID), "folder")
    limit = _int(args, "limit", 30, 1, MAX_SEARCH_PAGE)
    cutoff = time.time() - ctx.search_lag_s
    hits = [
        item
        for item in fs.walk(ancestor)
        if item.type == "folder"
        and needle in item.name.casefold()
        and not (ctx.search_lag_s and item.changed_at > cutoff)
    ]
    return {
        "type": "search_results_items",
        "total_count": len(hits),
        "limit": limit,
        "offset": 0,
        "entries": [fs.full(i) for i in hits[:limit]],
    }


def get_download_url(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    item = ctx.fs.get(_id(_required(args, "file_id")), "file")
    assert ctx.mint_download is not None
    url, expires = ctx.mint_download(item)
    return {"download_url": url, "expires_at": rfc3339(expires)}


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
    wanted = {w for w in _terms(question) if w not in STOP_WORDS}
    scored: list[tuple[int, int, Item, str]] = []
    position = 0
    for item, text in docs:
        for sentence in _sentences(text):
            score = len(wanted & set(_terms(sentence)))
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
        item = fs.get(_id(raw), "file")
        text = fs.text_of(item)
        if text is None and binaries:  # extraction reads PDFs and office files: here, their bytes
            text = fs.read_bytes(item).decode("utf-8", "replace")
        docs.append((item, text or ""))
    return docs


def ai_qa_single_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    docs = _ai_docs(ctx.fs, [_required(args, "file_id")])
    return _ai_answer(*_extract(str(_required(args, "question")), docs))


def ai_qa_multi_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    docs = _ai_docs(ctx.fs, _list(_required(args, "file_ids")))
    return _ai_answer(*_extract(str(_required(args, "question")), docs))


HUB_INDEXING = "The hub is still being indexed for Box AI. Try again later."


def ai_qa_hub(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Box AI over a hub's files. A hub that is still indexing answers nothing (a 409, its wording
    an assumption: Box documents the warm-up, not the error), which is what the client must fall
    back from."""
    hub = ctx.fs.hub(str(_required(args, "hub_id")))
    question = str(_required(args, "question"))
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
    docs = _ai_docs(ctx.fs, _list(_required(args, "file_ids")), binaries=True)
    text = "\n".join(t for _i, t in docs)
    answer: dict[str, Any] = {}
    for spec in _list(_required(args, "fields")):
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


# -- metadata ----------------------------------------------------------------------------------

GLOBAL_PROPERTIES = {
    "type": "metadata_template",
    "id": "4f4b8dca-0000-4000-8000-000000000000",
    "templateKey": "properties",
    "scope": "global",
    "displayName": "Properties",
    "hidden": False,
    "copyInstanceOnItemCopy": True,
    "fields": [],
}
FIELD_TYPES = ("string", "float", "date", "enum", "multiSelect")


def list_metadata_templates(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    scope = _scope(_required(args, "scope"))
    entries = [GLOBAL_PROPERTIES] if scope == "global" else ctx.fs.templates(scope)
    return {"entries": entries, "limit": DEFAULT_PAGE, "next_marker": None, "prev_marker": None}


def _key_from(display: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", display)
    if not words:
        raise bad_request("Cannot derive a template key", "invalid_parameter")
    return words[0].lower() + "".join(w.capitalize() for w in words[1:])


def create_metadata_template(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    display = str(_required(args, "display_name"))
    scope = _scope(_required(args, "scope"))
    if scope == "global":
        raise BoxApiError(403, "forbidden", "Templates can only be created in the enterprise scope")
    key = str(args.get("template_key") or _key_from(display))
    if ctx.fs.template(scope, key) is not None:
        raise BoxApiError(409, "conflict", f"A template with the key {key} already exists")
    fields = []
    for raw in _list(args.get("fields")):
        if not isinstance(raw, dict):
            raise bad_request("Every template field must be an object", "invalid_parameter")
        kind = raw.get("type", "string")
        if kind not in FIELD_TYPES:
            raise bad_request(f"Invalid field type: {kind!r}", "invalid_parameter")
        field_display = str(raw.get("displayName") or raw.get("display_name") or raw.get("key") or "")
        field_key = str(raw.get("key") or _key_from(field_display))
        out: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "type": kind,
            "key": field_key,
            "displayName": field_display or field_key,
            "hidden": bool(raw.get("hidden")),
        }
        if raw.get("description"):
            out["description"] = str(raw["description"])
        if kind in ("enum", "multiSelect"):
            out["options"] = [
                {"id": str(uuid.uuid4()), "key": str(o.get("key") if isinstance(o, dict) else o)}
                for o in raw.get("options") or []
            ]
        fields.append(out)
    template = {
        "type": "metadata_template",
        "id": str(uuid.uuid4()),
        "templateKey": key,
        "scope": scope,
        "displayName": display,
        "hidden": False,
        "copyInstanceOnItemCopy": False,
        "fields": fields,
    }
    ctx.fs.add_template(scope, key, template)
    return template


def set_file_metadata(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(_id(_required(args, "file_id")), "file")
    scope = _scope(_required(args, "scope"))
    key = str(_required(args, "template_key"))
    values = _object(args, "metadata_fields")
    if scope == "global":
        if key != "properties":
            raise BoxApiError(404, "not_found", "Template not found")
    else:
        template = fs.template(scope, key)
        if template is None:
            raise BoxApiError(404, "not_found", "Template not found")
        known = {f["key"] for f in template["fields"]}
        unknown = sorted(set(values) - known)
        if unknown:
            raise bad_request(f"Unknown metadata field(s): {', '.join(unknown)}", "invalid_parameter")
    previous = item.metadata.get(f"{scope}.{key}") or {}
    instance = {
        "$id": previous.get("$id") or str(uuid.uuid4()),
        "$version": int(previous.get("$version", -1)) + 1,
        "$type": f"{key}-{hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:12]}",
        "$parent": f"file_{item.id}",
        "$typeVersion": 0,
        "$template": key,
        "$scope": scope,
        "$canEdit": True,
        **values,
    }
    fs.set_metadata(item, f"{scope}.{key}", instance)
    return instance


# -- write tools -------------------------------------------------------------------------------


# Text types the hosted upload_file documents (CONNECTORS.md: third-party copy of the catalogue).
UPLOAD_TEXT_TYPES = frozenset(
    ["txt", "md", "boxnote", "html", "svg", "xml", "csv", "json", "js", "ts", "py", "sh"]
)


def upload_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    name = str(_required(args, "file_name"))
    data = _text_arg(args, "file_content")
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ctx.upload_text_only and ext not in UPLOAD_TEXT_TYPES:
        # The `upload_text_only` switch: the documented text-types rule (error wording assumed).
        raise bad_request(
            f"Unsupported file type '.{ext}': upload_file accepts text files only "
            f"({', '.join(sorted(UPLOAD_TEXT_TYPES))})",
            "invalid_file_type",
        )
    folder = fs.get(_id(args.get("parent_folder_id") or ROOT_ID), "folder")
    return fs.full(fs.upload(folder, name, data, _conflict_object(fs)))


def upload_file_version(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(_id(_required(args, "file_id")), "file")
    return fs.full(fs.new_version(item, _text_arg(args, "file_content")))


def create_folder(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    name = str(_required(args, "name"))
    parent = fs.get(_id(args.get("parent_folder_id") or ROOT_ID), "folder")
    return fs.full(fs.create_folder(parent, name, _conflict_array(fs)))


def move_file(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(_id(_required(args, "file_id")), "file")
    parent = fs.get(_id(_required(args, "parent_folder_id")), "folder")
    name = args.get("name") or item.name
    return fs.full(fs.move(item, parent, str(name), _conflict_object(fs)))


def move_folder(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(_id(_required(args, "folder_id")), "folder")
    parent = fs.get(_id(_required(args, "parent_folder_id")), "folder")
    name = args.get("name") or item.name
    return fs.full(fs.move_folder(item, parent, str(name), _conflict_array(fs)))


def update_file_properties(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(_id(_required(args, "file_id")), "file")
    name = args.get("name")
    if name is not None and name != item.name:
        fs.move(item, fs.parent(item), str(name), _conflict_object(fs))
    description = args.get("description")
    tags = args.get("tags")
    if description is not None or tags is not None:
        fs.update_properties(
            item,
            description=None if description is None else str(description),
            tags=None if tags is None else [str(t) for t in _list(tags)],
        )
    return fs.full(item)


# -- catalogue ---------------------------------------------------------------------------------


def _schema(required: list[str], **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required}


_S = {"type": "string"}
_I = {"type": "integer"}
_SL = {"type": "array", "items": {"type": "string"}}
_FIELDS = {"type": "array", "items": {"type": "string"}, "description": "Box fields to return"}


def _d(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "description": text}


TOOLS: list[ToolSpec] = [
    ToolSpec("who_am_i", "Return the authenticated Box user.", _schema([]), who_am_i, True),
    ToolSpec(
        "list_folder_content_by_folder_id",
        "List the items in a Box folder (folders first, then files). Folder '0' is All Files.",
        _schema(
            ["folder_id"],
            folder_id=_d("Box folder id", _S),
            fields=_FIELDS,
            limit=_d("Page size (default 100, max 1000)", _I),
            offset=_I,
            marker=_d("Marker from a previous page", _S),
        ),
        list_folder_content_by_folder_id,
        True,
    ),
    ToolSpec(
        "get_folder_details",
        "Get a Box folder's details.",
        _schema(["folder_id"], folder_id=_S, fields=_FIELDS),
        get_folder_details,
        True,
    ),
    ToolSpec(
        "get_file_details",
        "Get a Box file's details.",
        _schema(["file_id"], file_id=_S, fields=_FIELDS),
        get_file_details,
        True,
    ),
    ToolSpec(
        "get_file_content",
        "Get the text representation of a Box file (source up to 50 MB).",
        _schema(["file_id"], file_id=_S),
        get_file_content,
        True,
    ),
    ToolSpec(
        "search_files_keyword",
        "Search Box files by keyword in name and content, optionally filtered by metadata.",
        _schema(
            ["query"],
            query=_S,
            ancestor_folder_id=_S,
            file_extensions=_SL,
            fields=_FIELDS,
            limit=_I,
            offset=_I,
            mdfilters={"type": "array", "items": {"type": "object"}},
        ),
        search_files_keyword,
        True,
    ),
    ToolSpec(
        "search_folders_by_name",
        "Search Box folders by name.",
        _schema(["folder_name"], folder_name=_S, ancestor_folder_id=_S, limit=_I),
        search_folders_by_name,
        True,
    ),
    ToolSpec(
        "get_download_url",
        "Get a short-lived URL to download a Box file's bytes.",
        _schema(["file_id"], file_id=_S),
        get_download_url,
        True,
    ),
    ToolSpec(
        "ai_qa_single_file",
        "Ask a question about one file. Emulated: the answer is extracted from the file's own "
        "sentences (deterministic), not generated.",
        _schema(["file_id", "question"], file_id=_S, question=_S),
        ai_qa_single_file,
        True,
    ),
    ToolSpec(
        "ai_qa_multi_file",
        "Ask a question about several files. Emulated: extractive and deterministic.",
        _schema(["file_ids", "question"], file_ids=_SL, question=_S),
        ai_qa_multi_file,
        True,
    ),
    ToolSpec(
        "ai_qa_hub",
        "Ask a question about the content of a Box Hub. Emulated: extractive and deterministic; a "
        "hub made with indexing time refuses until it is ready.",
        _schema(["hub_id", "question"], hub_id=_S, question=_S),
        ai_qa_hub,
        True,
    ),
    ToolSpec(
        "ai_extract_structured_from_fields",
        "Extract structured fields from files. Emulated: reads 'key: value' lines and options "
        "named in the text.",
        _schema(["file_ids", "fields"], file_ids=_SL, fields={"type": "array", "items": {"type": "object"}}),
        ai_extract_structured_from_fields,
        True,
    ),
    ToolSpec(
        "list_metadata_templates",
        "List metadata templates in a scope ('enterprise' or 'global').",
        _schema(["scope"], scope=_S),
        list_metadata_templates,
        True,
    ),
    ToolSpec(
        "upload_file",
        "Upload a new text file. Fails if the name is already used in the folder.",
        _schema(
            ["file_name", "file_content"],
            file_name=_S,
            file_content=_S,
            parent_folder_id=_d("Default '0'", _S),
        ),
        upload_file,
        False,
    ),
    ToolSpec(
        "upload_file_version",
        "Upload a new version of an existing file.",
        _schema(["file_id", "file_content"], file_id=_S, file_content=_S),
        upload_file_version,
        False,
    ),
    ToolSpec(
        "create_folder",
        "Create a folder.",
        _schema(["name"], name=_S, parent_folder_id=_d("Default '0'", _S)),
        create_folder,
        False,
    ),
    ToolSpec(
        "move_file",
        "Move a file to another folder, optionally renaming it.",
        _schema(["file_id", "parent_folder_id"], file_id=_S, parent_folder_id=_S, name=_S),
        move_file,
        False,
    ),
    ToolSpec(
        "move_folder",
        "Move a folder (with its content) to another folder, optionally renaming it.",
        _schema(["folder_id", "parent_folder_id"], folder_id=_S, parent_folder_id=_S, name=_S),
        move_folder,
        False,
    ),
    ToolSpec(
        "update_file_properties",
        "Update a file's name, description or tags.",
        _schema(["file_id"], file_id=_S, name=_S, description=_S, tags=_SL),
        update_file_properties,
        False,
    ),
    ToolSpec(
        "set_file_metadata",
        "Set a metadata instance on a file.",
        _schema(
            ["file_id", "scope", "template_key", "metadata_fields"],
            file_id=_S,
            scope=_S,
            template_key=_S,
            metadata_fields={"type": "object"},
        ),
        set_file_metadata,
        False,
    ),
    ToolSpec(
        "create_metadata_template",
        "Create a metadata template.",
        _schema(
            ["display_name", "scope"],
            display_name=_S,
            scope=_S,
            template_key=_S,
            fields={"type": "array", "items": {"type": "object"}},
        ),
        create_metadata_template,
        False,
    ),
]
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def run_tool(spec: ToolSpec, ctx: ToolContext, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a handler; unexpected file system trouble becomes a Box 500 rather than a crash."""
    try:
        return spec.handler(ctx, arguments)
    except BoxApiError:
        raise
    except FileNotFoundError:
        raise not_found() from None
    except OSError as exc:
        message = f"Internal Server Error ({exc.__class__.__name__})"
        raise BoxApiError(500, "internal_server_error", message) from exc
