"""Tolerant reading of Box MCP tool results (docs/spec/box-mcp.md section 4).

Box's MCP server is closed source and its result shapes are unconfirmed, so everything here
accepts several plausible shapes and turns anything it cannot read into a `BoxToolError` naming
the tool, never a `KeyError`. Pure code: no network imports, so the local backend can use it cheaply.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from box_memory.errors import BoxMemoryError, BoxToolError, ToolDisabled, ToolMissing

__all__ = [
    "CRAWL_FIELDS",
    "DISABLED_TEXT",
    "LIST_FIELDS",
    "Page",
    "Pager",
    "box_error",
    "conflicts",
    "listing",
    "normalise_ids",
    "representation_pending",
    "text_blocks",
    "text_content",
    "tool_error",
    "unwrap",
    "unwrap_text",
]

# The Box item fields asked for when listing a folder (`fields` of list_folder_content_by_folder_id):
# what the cloud store needs to know a file and tell when it changed ...
LIST_FIELDS = ["type", "id", "name", "etag", "sha1", "size", "modified_at", "file_version"]
# ... and, for brain-sync's crawl, where an item sits and whether it is shared.
CRAWL_FIELDS = [*LIST_FIELDS, "sequence_id", "path_collection", "parent", "shared_link"]

DISABLED_TEXT = "Tool has been disabled by the enterprise admin"
"""The start of Box's answer for a tool the enterprise admin switched off."""

WRAPPER_KEYS = ("data", "result", "response", "payload")
ENTRY_KEYS = ("entries", "items", "files", "results")
MARKER_KEYS = ("next_marker", "nextMarker", "next_page_marker", "nextPageMarker")
TOTAL_KEYS = ("total_count", "totalCount", "total")
# Keys that say "this dict is itself a Box object or listing", so a wrapper key inside it is data.
_OBJECT_KEYS = frozenset({"type", "id", *ENTRY_KEYS})
_MAX_DEPTH = 6
_MISSING_PATTERNS = (
    re.compile(r"\bunknown tool\b", re.IGNORECASE),
    re.compile(r"\btool\b[^.\n]{0,80}\bnot found\b", re.IGNORECASE),
    re.compile(r"\bno such tool\b", re.IGNORECASE),
)
_STATUS_RE = re.compile(
    r"(?:\bstatus(?:[ _]code)?\b\W{0,3}|\bHTTP(?:/\d(?:\.\d)?)?\s+|\berror\s+)([1-5]\d\d)\b", re.I
)


@dataclass(frozen=True)
class Page:
    """One page of a folder listing, whatever paging style the server used."""

    entries: list[dict[str, Any]]
    next_marker: str | None = None
    total_count: int | None = None
    offset: int | None = None
    limit: int | None = None
    marker_end: bool = False  # a marker-paged page that said "no next page" (next_marker null/empty)

    @property
    def has_more(self) -> bool:
        """True when another page is known to follow (marker, or offset paging short of the total)."""
        if self.next_marker:
            return True
        if self.total_count is not None and self.offset is not None:
            return self.offset + len(self.entries) < self.total_count
        return False


class Pager:
    """Pages of one folder listing, never ended silently short.

    Box's hosted listing tool pages by `offset`/`limit` and may not offer `marker` at all (its
    catalogue, and box-community/mcp-server-box `box_list_folder_content_by_folder_id`); whether it
    echoes `total_count` is not documented. So:
    - `next_marker` -> follow it (a repeated marker or endless empty pages -> incomplete);
    - offset paging -> the next offset is what was read so far; the listing ends at an empty page,
      or at `total_count` (when a page was full there, one more page is read to prove it);
    - no paging fields at all -> a full page is not the end: keep paging by offset until a short
      page (a page whose size is a round number is also followed, in case the server capped the
      page size below what was asked without saying so);
    - a page of ids already seen (the server ignored `offset`), or a total that disagrees with what
      was read, marks the listing incomplete.
    `incomplete` is then a reason: callers must not treat absence from the listing as deletion.
    """

    MAX_EMPTY = 3
    ROUND = 25

    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self.marker: str | None = None
        self.offset = 0
        self.read = 0
        self.pages = 0
        self.incomplete: str | None = None
        self._markers: set[str] = set()
        self._ids: set[str] = set()
        self._empty = 0
        self._total: int | None = None
        self._probing = False
        self._total_wrong = False

    def args(self) -> dict[str, Any]:
        """Paging arguments of the next request."""
        out: dict[str, Any] = {"limit": self.limit}
        if self.marker:
            out["marker"] = self.marker
        elif self.offset:
            out["offset"] = self.offset
        return out

    def fail(self, reason: str) -> None:
        self.incomplete = self.incomplete or reason

    def advance(self, page: Page) -> bool:
        """Account for `page`; True when another page must be read."""
        self.pages += 1
        n = len(page.entries)
        ids = [str(e.get("id")) for e in page.entries if e.get("id") is not None]
        fresh = [i for i in ids if i not in self._ids]
        if ids and not fresh and not page.next_marker:
            self.fail("the server answered the same page again (it ignored the offset)")
            return False
        self._ids.update(fresh)
        self.read += len(fresh) if ids else n
        if page.total_count is not None:
            self._total = page.total_count
        self._empty = self._empty + 1 if n == 0 else 0
        if page.next_marker:
            if page.next_marker in self._markers or page.next_marker == self.marker:
                self.fail("the server repeated a page marker")
                return False
            if self._empty >= self.MAX_EMPTY:
                self.fail("the server kept answering empty pages")
                return False
            self._markers.add(page.next_marker)
            self.marker = page.next_marker
            return True
        if self.marker is not None or page.marker_end:  # marker paging ended, and said so
            return self._check_total()
        start = page.offset if page.offset is not None else self.offset
        self.offset = start + n
        if n == 0:
            return self._check_total()
        page_size = min(self.limit, page.limit) if page.limit else self.limit
        full = n >= page_size
        if self._total is not None and not self._total_wrong:
            if self.offset < self._total:
                return True
            if self._probing:  # the page read past the total: the total is wrong, read on
                self._total_wrong = True
                self.fail(f"the listing held more than its total ({self._total})")
            elif full:
                self._probing = True  # a full page exactly at the total: prove nothing follows
                return True
            else:
                return self._check_total()
        has_fields = page.limit is not None or page.offset is not None
        return full or (not has_fields and n % self.ROUND == 0)

    def _check_total(self) -> bool:
        if self._total is not None and not self._total_wrong and self.read != self._total:
            if self.read < self._total:
                self.fail(f"the listing stopped short of its total ({self.read} of {self._total} items)")
            else:
                self.fail(f"the listing held more than its total ({self.read}, total {self._total})")
        return False


# ---------------------------------------------------------------------------------------------
# Small accessors that work on SDK objects and on plain dicts alike.


def _get(obj: Any, *names: str) -> Any:
    """First attribute or key present among `names` (SDK objects are snake_case, raw JSON camelCase)."""
    for name in names:
        if isinstance(obj, Mapping):
            if name in obj:
                return obj[name]
        elif hasattr(obj, name):
            return getattr(obj, name)
    return None


def _block_text(block: Any) -> str | None:
    """Text of one content block: a text block, or an embedded resource's text (or utf-8 blob)."""
    if isinstance(block, str):
        return block
    text = _get(block, "text")
    if isinstance(text, str):
        return text
    resource = _get(block, "resource")
    if resource is None:
        return None
    text = _get(resource, "text")
    if isinstance(text, str):
        return text
    blob = _get(resource, "blob")
    if isinstance(blob, str):
        try:
            return base64.b64decode(blob, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return None
    return None


def text_blocks(result: Any) -> list[str]:
    """All text carried by a result's content blocks, in order."""
    content = _get(result, "content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, Iterable) or isinstance(content, Mapping):
        return []
    texts = []
    for block in content:
        text = _block_text(block)
        if text is not None:
            texts.append(text)
    return texts


def _parse_json(text: str) -> tuple[bool, Any]:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return False, None
    try:
        return True, orjson.loads(stripped)  # a file's text inside: megabytes for a big index
    except orjson.JSONDecodeError:
        pass
    try:
        return True, json.loads(stripped)  # what orjson refuses (NaN, Infinity)
    except ValueError:
        return False, None


def _embedded_json(text: str) -> tuple[bool, Any]:
    """JSON object found inside prose such as `Error: {...}` (Box errors are often relayed that way)."""
    ok, value = _parse_json(text)
    if ok:
        return ok, value
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        return _parse_json(text[start : end + 1])
    return False, None


# ---------------------------------------------------------------------------------------------
# Id normalisation


def _is_id_key(key: object) -> bool:
    return isinstance(key, str) and (key == "id" or key.endswith("_id"))


def normalise_ids(value: Any) -> Any:
    """Copy of `value` with every numeric `id`/`*_id` turned into a string (Box ids are digit strings)."""
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if _is_id_key(key) and isinstance(item, int | float) and not isinstance(item, bool):
                out[key] = str(int(item)) if float(item).is_integer() else str(item)
            else:
                out[key] = normalise_ids(item)
        return out
    if isinstance(value, list):
        return [normalise_ids(item) for item in value]
    return value


# ---------------------------------------------------------------------------------------------
# Errors


def box_error(text: str) -> tuple[int | None, str | None, Any]:
    """Parse a Box API error relayed as text -> (status, code, body).

    `body` is the parsed JSON object when there is one (nested `{"error": {...}}` is opened), else
    the text. Accepts bare JSON, JSON inside prose, and prose with an HTTP status.
    """
    ok, parsed = _embedded_json(text) if isinstance(text, str) else (True, text)
    body: Any = text
    status: int | None = None
    code: str | None = None
    if ok and isinstance(parsed, Mapping):
        body = dict(parsed)
        inner = body.get("error")
        if isinstance(inner, Mapping) and not _has_status(body):
            merged = dict(inner)
            for key in ("request_id", "status", "code"):
                if key in body and key not in merged:
                    merged[key] = body[key]
            body = merged
        status = _as_int(_get(body, "status", "status_code", "statusCode"))
        raw_code = _get(body, "code", "error_code", "errorCode")
        if not isinstance(raw_code, str) and isinstance(body.get("error"), str):
            raw_code = body["error"]
        code = raw_code if isinstance(raw_code, str) and raw_code else None
    if status is None and isinstance(text, str):
        match = _STATUS_RE.search(text)
        if match:
            status = int(match.group(1))
    if code is None and isinstance(text, str):
        match = re.search(r"\b([a-z]+(?:_[a-z]+)+)\b", text)
        if match and status is not None:
            code = match.group(1)
    return status, code, body


def _has_status(body: Mapping[str, Any]) -> bool:
    return _as_int(_get(body, "status", "status_code", "statusCode")) is not None


def conflicts(body: Any) -> list[dict[str, Any]]:
    """The conflicting items of a 409 `item_name_in_use` (Box sends an object or an array)."""
    if not isinstance(body, Mapping):
        return []
    info = body.get("context_info")
    if not isinstance(info, Mapping):
        return []
    found = info.get("conflicts")
    if isinstance(found, Mapping):
        return [normalise_ids(dict(found))]
    if isinstance(found, list):
        return [normalise_ids(dict(item)) for item in found if isinstance(item, Mapping)]
    return []


def _error_message(tool: str, status: int | None, code: str | None, body: Any) -> str:
    detail = ""
    if isinstance(body, Mapping):
        for key in ("message", "error_description", "description", "detail"):
            if isinstance(body.get(key), str) and body[key]:
                detail = body[key]
                break
        else:
            if isinstance(body.get("error"), str):
                detail = body["error"]
    elif isinstance(body, str):
        detail = body
    parts = [f"Box tool {tool} failed"]
    if status is not None:
        parts.append(f"({status}{' ' + code if code else ''})")
    elif code:
        parts.append(f"({code})")
    text = " ".join(parts)
    detail = " ".join(detail.split())
    if detail:
        text += f": {detail[:300]}"
    return text


def tool_error(tool: str, text: str) -> BoxMemoryError:
    """The typed error for a tool answer marked as an error (or carrying an `error` object)."""
    flat = " ".join((text or "").split())
    if DISABLED_TEXT.lower() in flat.lower():
        return ToolDisabled(
            f"Box tool {tool} has been disabled by the enterprise admin - ask them to enable it"
        )
    if any(p.search(flat) for p in _MISSING_PATTERNS) and tool in flat:
        return ToolMissing(f"Box MCP server has no tool {tool}")
    status, code, body = box_error(text)
    return BoxToolError(_error_message(tool, status, code, body), status=status, box_code=code, body=body)


def _error_object(value: Any) -> bool:
    """True for `{"error": ...}` / Box `{"type": "error", ...}` answers delivered as a success."""
    if not isinstance(value, Mapping):
        return False
    if value.get("type") == "error":
        return True
    if "error" not in value or value["error"] in (None, False, "", {}):
        return False
    return not any(key in value for key in ("entries", "items", "files", "id"))


def _raise_error_object(tool: str, value: Mapping[str, Any]) -> None:
    raise tool_error(tool, json.dumps(value, default=str))


# ---------------------------------------------------------------------------------------------
# Unwrapping


def _open_wrappers(value: Any, depth: int = 0) -> Any:
    """Strip `data|result|response|payload` envelopes and decode JSON strings found inside them."""
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        ok, parsed = _parse_json(value)
        return _open_wrappers(parsed, depth + 1) if ok else value
    if not isinstance(value, Mapping) or _OBJECT_KEYS & value.keys():
        return value
    present = [key for key in WRAPPER_KEYS if key in value]
    if len(present) != 1:
        return value
    inner = value[present[0]]
    if isinstance(inner, str) and len(value) == 1 and not _parse_json(inner)[0]:
        return inner  # {"result": "plain text"}: how SDK servers wrap a text return
    # Siblings are envelope chatter (success, message, count...): only unwrap real containers.
    if isinstance(inner, Mapping | list) or (isinstance(inner, str) and _parse_json(inner)[0]):
        opened = _open_wrappers(inner, depth + 1)
        if isinstance(opened, Mapping) and not _OBJECT_KEYS & opened.keys():
            # Keep paging fields that sat next to the wrapper ({"data": {...}, "next_marker": ...}).
            extra = {k: v for k, v in value.items() if k not in WRAPPER_KEYS and k not in opened}
            if extra and any(k in extra for k in (*MARKER_KEYS, *TOTAL_KEYS, "offset", "limit")):
                return {**opened, **extra}
        if isinstance(opened, list) and any(k in value for k in (*MARKER_KEYS, *TOTAL_KEYS)):
            return {"entries": opened, **{k: v for k, v in value.items() if k != present[0]}}
        return opened
    return value


def _merge_blocks(tool: str, values: list[Any]) -> Any:
    """Combine several JSON text blocks: one per item -> a list; pieces of one object -> merged."""
    if len(values) == 1:
        return values[0]
    if all(isinstance(v, Mapping) for v in values):
        if all(_OBJECT_KEYS & v.keys() and not set(ENTRY_KEYS) & v.keys() for v in values):
            return list(values)
        merged: dict[str, Any] = {}
        for v in values:
            for key, item in v.items():
                if isinstance(item, list) and isinstance(merged.get(key), list):
                    merged[key] = [*merged[key], *item]
                else:
                    merged.setdefault(key, item)
        return merged
    if all(isinstance(v, list) for v in values):
        return [item for v in values for item in v]
    items: list[Any] = []
    for v in values:
        items.extend(v if isinstance(v, list) else [v])
    return items


def _raw_payload(tool: str, result: Any) -> Any:
    if isinstance(result, Mapping) and not (
        isinstance(result.get("content"), list)
        or any(k in result for k in ("structured_content", "structuredContent", "isError", "is_error"))
    ):
        return result  # already a payload, not a CallToolResult
    if isinstance(result, list | str):
        return result
    structured = _get(result, "structured_content", "structuredContent")
    if structured not in (None, {}, []):
        return structured
    texts = text_blocks(result)
    if not texts:
        if structured is not None:
            return structured
        raise BoxToolError(f"Box tool {tool} returned no content")
    ok_joined, joined = _parse_json("".join(texts))
    if ok_joined:
        return joined
    parsed = [value for ok, value in map(_parse_json, texts) if ok]
    if parsed:
        return _merge_blocks(tool, parsed)
    return "\n".join(texts)  # plain text (e.g. a file's text representation)


def unwrap(tool: str, result: Any) -> Any:
    """The payload of a tool result as dict/list (JSON) or str (plain text), ids as strings.

    Raises the typed error when the result is an error (`is_error`, an `{"error": ...}` object, a
    Box error object) and `BoxToolError` naming the tool for a shape that cannot be read.
    """
    try:
        if _get(result, "is_error", "isError") is True:
            texts = text_blocks(result)
            structured = _get(result, "structured_content", "structuredContent")
            if not texts and structured is not None:
                texts = [json.dumps(structured, default=str)]
            raise tool_error(tool, "\n".join(texts) or "unspecified error")
        raw = _raw_payload(tool, result)
        if _error_object(raw):
            _raise_error_object(tool, raw)
        value = _open_wrappers(raw)
        if _error_object(value):
            _raise_error_object(tool, value)
        return normalise_ids(value)
    except BoxMemoryError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        raise BoxToolError(f"Box tool {tool} returned a result box-memory cannot read ({exc!r})") from exc


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _find_listing(value: Any, depth: int = 0) -> tuple[list[Any], Mapping[str, Any]] | None:
    """(entries, the dict that held them) searching the known keys, then wrapper keys."""
    if isinstance(value, list):
        return value, {}
    if not isinstance(value, Mapping) or depth > _MAX_DEPTH:
        return None
    if isinstance(value.get("folders"), list) and isinstance(value.get("files"), list):
        return [*value["folders"], *value["files"]], value
    for key in ENTRY_KEYS:
        if isinstance(value.get(key), list):
            return value[key], value
    for key in WRAPPER_KEYS:
        inner = value.get(key)
        if isinstance(inner, str):
            ok, inner = _parse_json(inner)
            if not ok:
                continue
        found = _find_listing(inner, depth + 1)
        if found is not None:
            entries, holder = found
            # Paging fields may sit on the outer envelope.
            return entries, {**value, **holder} if holder else value
    for key in ENTRY_KEYS:  # {"entries": {"entries": [...]}} and similar
        inner = value.get(key)
        if isinstance(inner, Mapping):
            found = _find_listing(inner, depth + 1)
            if found is not None:
                return found
    return None


def listing(payload: Any, *, tool: str = "list_folder_content_by_folder_id") -> Page:
    """A folder listing page from any accepted shape (marker or offset paging)."""
    try:
        if isinstance(payload, str):
            ok, parsed = _parse_json(payload)
            if ok:
                payload = parsed
        found = _find_listing(payload)
        if found is None:
            keys = ", ".join(sorted(map(str, payload.keys()))[:12]) if isinstance(payload, Mapping) else ""
            shape = f"an object with keys {keys}" if keys else type(payload).__name__
            raise BoxToolError(f"Box tool {tool} returned a listing box-memory cannot read ({shape})")
        raw_entries, holder = found
        entries = []
        for entry in raw_entries:
            if not isinstance(entry, Mapping):
                raise BoxToolError(
                    f"Box tool {tool} returned a listing entry that is not an object ({type(entry).__name__})"
                )
            entries.append(normalise_ids(dict(entry)))
        marker = _get(holder, *MARKER_KEYS)
        if marker is not None and not isinstance(marker, str):
            marker = str(marker)
        return Page(
            entries=entries,
            next_marker=marker or None,
            total_count=_as_int(_get(holder, *TOTAL_KEYS)),
            offset=_as_int(_get(holder, "offset")),
            limit=_as_int(_get(holder, "limit")),
            marker_end=not marker and any(k in holder for k in MARKER_KEYS),
        )
    except BoxMemoryError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        raise BoxToolError(f"Box tool {tool} returned a listing box-memory cannot read ({exc!r})") from exc


_TEXT_KEYS = ("content", "text", "file_content", "extracted_text", "text_content", "body", "answer")
# Keys that may sit next to the text in a text envelope; anything else means the JSON IS the document.
_ENVELOPE_META = frozenset(
    {
        "type", "id", "file_id", "name", "file_name", "filename", "mime_type", "mimeType", "content_type",
        "size", "length", "encoding", "truncated", "representation", "extension", "sha1", "etag",
        "success", "status", "message", "_meta", "meta", "metadata",
    }
)  # fmt: skip
_ERROR_KEYS = frozenset(
    {"type", "error", "status", "code", "message", "request_id", "context_info", "help_url",
     "error_description", "success"}
)  # fmt: skip


def _text_from_envelope(value: Any, *, strict: bool, depth: int = 0) -> str | None:
    """The text inside `{"content": "..."}`-like envelopes (also under wrapper keys), never parsing it.

    `strict` (used on JSON that arrived as text) only accepts envelopes whose other keys are known
    metadata, because a JSON document's own text (an `_index.json`) must come back verbatim.
    """
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping) or depth > _MAX_DEPTH:
        return None
    keys = set(value)
    for key in WRAPPER_KEYS:
        if key in value and (not strict or keys - {key} <= _ENVELOPE_META):
            found = _text_from_envelope(value[key], strict=strict, depth=depth + 1)
            if found is not None:
                return found
    for key in _TEXT_KEYS:
        if isinstance(value.get(key), str) and (not strict or keys - {key} <= _ENVELOPE_META):
            return value[key]
    if not strict:
        for key in _TEXT_KEYS:
            found = _text_from_envelope(value.get(key), strict=strict, depth=depth + 1)
            if found is not None:
                return found
    return None


def unwrap_text(tool: str, result: Any) -> str:
    """The document text of a `get_file_content`-like result, verbatim.

    Unlike `unwrap`, JSON text is NOT decoded: a JSON file (an `_index.json`) is returned as its
    own text so it can be hashed and parsed by its owner. Only a recognisable text envelope
    (`{"content": "...", "name": ...}`) or structured content is opened.
    """
    try:
        if _get(result, "is_error", "isError") is True:
            return unwrap(tool, result)  # raises the typed error
        structured = _get(result, "structured_content", "structuredContent")
        if structured is not None:
            if _error_object(structured) and set(structured) <= _ERROR_KEYS:
                _raise_error_object(tool, structured)
            found = _text_from_envelope(structured, strict=False)
            if found is not None:
                return found
        texts = text_blocks(result)
        if not texts:
            if isinstance(result, str):
                return result
            raise BoxToolError(f"Box tool {tool} returned no text content")
        text = "".join(texts)
        ok, parsed = _parse_json(text)
        if ok and isinstance(parsed, Mapping):
            if _error_object(parsed) and set(parsed) <= _ERROR_KEYS:
                _raise_error_object(tool, parsed)
            found = _text_from_envelope(parsed, strict=True)
            if found is not None:
                return found
        return text
    except BoxMemoryError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as exc:
        raise BoxToolError(f"Box tool {tool} returned a result box-memory cannot read ({exc!r})") from exc


def text_content(tool: str, payload: Any) -> str:
    """Text out of an already unwrapped payload (an AI answer, a content envelope), or a clear error."""
    found = _text_from_envelope(payload, strict=False)
    if found is not None:
        return found
    if isinstance(payload, list) and payload and all(isinstance(p, str) for p in payload):
        return "\n".join(payload)
    shape = type(payload).__name__
    if isinstance(payload, Mapping):
        shape = "an object with keys " + ", ".join(sorted(map(str, payload.keys()))[:12])
    raise BoxToolError(f"Box tool {tool} returned no readable text ({shape})")


_PENDING_STATES = frozenset({"pending", "none"})


def representation_pending(text: str) -> bool:
    """True when a `get_file_content` answer is Box's "still being generated" note, not the text.

    Box's own toolkit (box-community/box-ai-agents-toolkit `box_api_file_representation.py`) turns
    a representation in state `none`/`pending` into a successful `{"message": "... still being
    generated ...", "status": "pending"}` rather than an error, so it arrives as a normal result.
    """
    ok, parsed = _parse_json(text)
    if not ok or not isinstance(parsed, Mapping):
        return False
    status = parsed.get("status")
    return (
        isinstance(status, str)
        and status.lower() in _PENDING_STATES
        and not (set(parsed) & {"content", "text", "entries"})
    )
