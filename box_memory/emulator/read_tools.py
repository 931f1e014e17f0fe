"""The emulated Box MCP read tools: the user, folder listings, item details, file content, search.

Guesses about the real service, where its behaviour is not documented:
- listings return REST "mini" entries unless `fields` is given (then type, id, etag + those fields);
  the `listing` switch can make them return the standard representation instead;
- get_file_content answers `{"id", "name", "content"}`; a file without a text representation
  (binary bytes, or a type Box would convert with converters the emulator lacks: pdf, docx...) is
  an error 400 `bad_request`, and a source over 50 MB an error 400 `file_size_limit_exceeded`;
- search takes Box's published query operators (`_query_matcher`), but matches each term as a
  case-insensitive substring of the name and text, stop words ignored (a query of stop words
  only, like "the", matches every file).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from typing import Any

from box_memory.emulator.boxapi import (
    ENTERPRISE_ID,
    ROOT_ID,
    USER,
    BoxApiError,
    Item,
    bad_request,
    decode_marker,
    encode_marker,
    rfc3339,
    sort_key,
)
from box_memory.emulator.boxfs import BoxFS
from box_memory.emulator.tool_args import (
    DEFAULT_PAGE,
    ToolContext,
    box_id,
    fields_arg,
    int_arg,
    list_arg,
    required,
    scope_arg,
)

MAX_PAGE = 1000
MAX_SEARCH_PAGE = 200
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
    folder = fs.get(box_id(required(args, "folder_id")), "folder")
    limit = int_arg(args, "limit", DEFAULT_PAGE, 1, MAX_PAGE)
    fields = fields_arg(args)
    items = fs.children(folder)
    if ctx.fail_later_pages and (args.get("marker") or int_arg(args, "offset", 0, 0)):
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
            start = int_arg(args, "offset", 0, 0)
        page = items[start : start + size(start)]
        more = start + len(page) < len(items)
        next_marker = encode_marker(page[-1]) if more and page else None
        if more and marker and ctx.repeat_marker:
            next_marker = str(marker)  # the `repeat_marker` switch: a server stuck on one page
        return {"entries": shape(page), "limit": limit, "next_marker": next_marker}
    offset = 0 if ctx.ignore_offset else int_arg(args, "offset", 0, 0)  # `ignore_offset`: a broken server
    page = items[offset : offset + size(offset)]
    if ctx.paging == "none":  # the `paging=none` switch: entries only, no paging fields at all
        return {"entries": shape(page)}
    total = max(0, len(items) + ctx.total_skew)  # `total_skew`: a total_count that is wrong
    return {"entries": shape(page), "total_count": total, "offset": offset, "limit": limit}


def get_folder_details(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    folder = fs.get(box_id(required(args, "folder_id")), "folder")
    fields = fields_arg(args)
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
    return fs.select(fs.get(box_id(required(args, "file_id")), "file"), fields_arg(args))


def get_file_content(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    fs = ctx.fs
    item = fs.get(box_id(required(args, "file_id")), "file")
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


def terms(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _query_matcher(query: str) -> Callable[[str, Callable[[], str | None]], bool]:
    """Box's query operators (developer.box.com/guides/search/query-operators): `"..."` an exact
    phrase, `AND` both sides, `OR` either, `NOT` not the next term; operators count only in upper
    case, and words side by side are implicitly ORed. A term matches as a case-insensitive
    substring of the name or the text (a guess: Box matches words); stop words are ignored, and a
    query of stop words only matches every file. NOT binds tightest, then AND, then OR."""
    groups: list[list[tuple[bool, str]]] = [[]]  # OR of ANDs of (negated, needle)
    negate = join = False
    for m in re.finditer(r'"([^"]+)"|(\S+)', query):
        phrase, word = m.group(1), m.group(2)
        if word in ("AND", "OR", "NOT"):
            negate = negate or word == "NOT"
            join = join or word in ("AND", "NOT")
            continue
        needles = [phrase.casefold()] if phrase else [t for t in terms(word or "") if t not in STOP_WORDS]
        for needle in needles:
            if groups[-1] and not join:
                groups.append([])
            groups[-1].append((negate, needle))
            negate = join = False
    groups = [g for g in groups if g]

    def match(name: str, text: Callable[[], str | None]) -> bool:
        if not groups:
            return True
        body: list[str | None] = []

        def hay() -> str:
            if not body:
                got = text()
                body.append(name.casefold() + "\n" + (got.casefold() if got else ""))
            return body[0] or ""

        folded = name.casefold()
        for group in groups:
            # The name alone decides a group of plain terms it holds; anything else reads the text.
            if all(not neg and n in folded for neg, n in group):
                return True
            if all((n in hay()) != neg for neg, n in group):
                return True
        return False

    return match


def _metadata_matches(item: Item, mdfilters: list[Any]) -> bool:
    for flt in mdfilters:
        if not isinstance(flt, dict):
            raise bad_request("Invalid mdfilters entry", "invalid_parameter")
        key = flt.get("templateKey") or flt.get("template_key")
        instance = item.metadata.get(f"{scope_arg(flt.get('scope'))}.{key}")
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
    query = str(required(args, "query"))
    ancestor = fs.get(box_id(args.get("ancestor_folder_id") or ROOT_ID), "folder")
    exts = {str(e).strip().lstrip(".").lower() for e in list_arg(args.get("file_extensions"))}
    mdfilters = list_arg(args.get("mdfilters"))
    limit = int_arg(args, "limit", 30, 1, MAX_SEARCH_PAGE)
    offset = int_arg(args, "offset", 0, 0)
    fields = fields_arg(args)
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
    needle = str(required(args, "folder_name")).casefold()
    ancestor = fs.get(box_id(args.get("ancestor_folder_id") or ROOT_ID), "folder")
    limit = int_arg(args, "limit", 30, 1, MAX_SEARCH_PAGE)
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
    item = ctx.fs.get(box_id(required(args, "file_id")), "file")
    assert ctx.mint_download is not None
    url, expires = ctx.mint_download(item)
    return {"download_url": url, "expires_at": rfc3339(expires)}
