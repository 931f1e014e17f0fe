"""Per-folder `_index.json` and the workspace rollup: derived state, always rebuildable from files."""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import os
import re
import signal
import weakref
from dataclasses import dataclass, field
from itertools import chain, repeat
from typing import Any

import orjson

from box_memory import settings
from box_memory.errors import InvalidFile, NotFound, TooLargeForBox, Unreadable
from box_memory.format import frontmatter
from box_memory.format.model import INDEX_MAPS, LIVE, Memory, index_entry, now_iso, parse_time
from box_memory.format.safeio import OutsideWorkspace, ReadFailed, UnreadableFile, read_regular
from box_memory.store.base import Entry, join
from box_memory.workspace.resolve import INDEX_NAME, Workspace

STALE_TOLERANCE_S = 2.0
SKIP_MD = {"README.md"}
DUMP_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
COMPACT_ABOVE = 2000  # entries: past this an index is for machines; indentation adds ~25% bytes


def dump_index(data: dict[str, Any]) -> bytes:
    """Indented like the plugin's files while small enough to read; compact when large."""
    entries = data.get("entries") or ()
    opts = orjson.OPT_NON_STR_KEYS if len(entries) > COMPACT_ABOVE else DUMP_OPTS
    return orjson.dumps(data, option=opts)


Pieces = list[bytes | memoryview]
Layout = tuple[int, dict[str, list[int]], bool, str | None]  # RawEntries: count, spans, plain_slugs, names


def _key_head(n: int, key: str) -> bytes:
    """What precedes the `n`th top-level value of a compact index: a comma after the first, the key."""
    return (b"," if n else b"") + orjson.dumps(key) + b":"


def dump_compact(
    data: dict[str, Any], given: dict[str, Pieces] | None = None
) -> tuple[bytes, dict[str, list[int]]]:
    """`dump_index` of a large index (compact), key by key, with where each top-level value lies:
    (bytes, {key: [start, end]}). `given`: values already serialised, as pieces (the unparsed
    write path), used as they are; the bytes are the ones `orjson.dumps` of the whole index gives
    (tests/integrity/test_index_append.py)."""
    parts: Pieces = [b"{"]
    spans: dict[str, list[int]] = {}
    pos = 1
    for n, (k, v) in enumerate(data.items()):
        if not isinstance(k, str):
            raise TypeError("an index's top-level keys are text")
        head = _key_head(n, k)
        body = given[k] if given and k in given else [orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS)]
        parts.append(head)
        parts += body
        pos += len(head)
        spans[k] = [pos, pos + sum(map(len, body))]
        pos = spans[k][1]
    parts.append(b"}")
    return b"".join(parts), spans


_CRASH_AT = settings.crash_at()


def crash_point(step: str) -> None:
    """Test hook only: `BOX_MEMORY_CRASH_AT=<step>` SIGKILLs this process at that named step.

    Crash-safety tests use it to stop a writer between two durable steps; unset it costs one
    string comparison.
    """
    if _CRASH_AT and step == _CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


def _rank(e: dict[str, Any]) -> tuple[int, str]:
    """Preference for 1:1 maps: live memories first, then the newest."""
    return (1 if e.get("status") in LIVE else 0, str(e.get("updated_at") or ""))


def build_maps(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """All seven maps. 1:1 maps keep the preferred entry (live, then newest) for a shared key."""
    by_kind: dict[str, list[str]] = {}
    by_tag: dict[str, list[str]] = {}
    by_status: dict[str, list[str]] = {}
    by_id: dict[str, int] = {}
    for pos, e in enumerate(entries):
        mid = e["id"]
        by_id[mid] = pos
        by_kind.setdefault(e.get("kind"), []).append(mid)  # type: ignore[arg-type]
        by_status.setdefault(e.get("status"), []).append(mid)  # type: ignore[arg-type]
        for t in e.get("tags") or ():
            by_tag.setdefault(t, []).append(mid)
    # Later assignments win: order by preference so the preferred entry is written last.
    ranked = sorted(entries, key=_rank)
    return {
        "by_id": by_id,
        "by_slug": {e["slug"]: e["id"] for e in ranked if e.get("slug")},
        "by_wikilink": {e["title"]: e["id"] for e in ranked if e.get("title")},
        "by_kind": by_kind,
        "by_tag": by_tag,
        "by_status": by_status,
        "by_companion_for": {str(e["companion_for"]): e["id"] for e in ranked if e.get("companion_for")},
    }


# What stays unparsed: the entries and the three maps with a key per entry (the small maps, one
# key per kind, status or tag, are parsed).
UNPARSED = ("entries", "by_id", "by_slug", "by_wikilink")


def names_digest(names: list[str]) -> str:
    """One digest of a set of file names, given sorted: what a write compares the folder's
    listing with instead of every indexed file name (`RawEntries`)."""
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class RawEntries:
    """The entries and the per-entry maps (`UNPARSED`) of a large index left as the bytes
    box-memory wrote (`spans`: where each top-level value lies; `load_index(raw_ok=True)`), so a
    write that appends an entry does not parse them: at 40,000 entries the parse, and freeing
    what it made, are most of a write's CPU. Only for bytes whose layout this user's box-memory
    recorded as it wrote them (`_LAYOUT`), with `by_id` naming every entry at its position (an id
    is new when `by_id` lacks it) and, when it could tell:
    - `plain_slugs`: every entry has a text slug, all lowercase ASCII (their case-folded forms are
      themselves, so a slug is taken when `"slug":"<it>"` is in the bytes);
    - `names`: the digest (`names_digest`) of the set of indexed file names, for the drift check.
    `added`: keys appended to the unparsed maps; `listed`: the folder's memory files, sorted, once
    the listing was found to match `names`."""

    raw: bytes
    spans: dict[str, list[int]]
    count: int
    plain_slugs: bool = False
    names: str | None = None
    added: dict[str, dict[str, Any]] = field(default_factory=lambda: {k: {} for k in UNPARSED[1:]})
    listed: list[str] | None = None
    on_disk: set[str] = field(default_factory=set)  # `listed`, as a set
    source: list[str] | None = None  # the folder listing last found to match

    def value(self, key: str) -> memoryview:
        start, end = self.spans[key]
        return memoryview(self.raw)[start:end]

    def has(self, key: str, name: str) -> bool:
        """Whether map `key` holds `name` (its bytes, or what was added to it)."""
        if name in self.added[key]:
            return True
        start, end = self.spans[key]
        enc = orjson.dumps(name) + b":"
        # A key follows "{" or ","; inside a string every quote is escaped, so this is a key.
        return self.raw.find(b"{" + enc, start, end) >= 0 or self.raw.find(b"," + enc, start, end) >= 0

    def may_have_slug(self, slug: str) -> bool:
        """False when no entry has this slug (case-folded), else True (perhaps; parse to know)."""
        if not self.plain_slugs or not slug.isascii() or slug != slug.lower():
            return True
        start, end = self.spans["entries"]
        # The closing quote is in the pattern: a longer slug is not matched.
        return self.raw.find(b'"slug":' + orjson.dumps(slug), start, end) >= 0

    def pieces(self, key: str, added: list[bytes]) -> Pieces:
        """The value of `key` with `added` (serialised items) appended before its closing bracket."""
        whole = self.value(key)
        if not added:
            return [whole]
        empty = len(whole) == 2
        return [whole[:-1], b"" if empty else b",", b",".join(added), whole[-1:]]

    def parsed(self, key: str) -> Any:
        value = orjson.loads(self.value(key))
        if key != "entries":
            value.update(self.added[key])
        return value


def _plain_slugs(entries: list[dict[str, Any]]) -> bool:
    """Every entry's slug is text, lowercase ASCII (`RawEntries.plain_slugs`)."""
    slugs = list(map(dict.get, entries, repeat("slug")))
    if set(map(type, slugs)) - {str}:
        return False
    joined = "".join(map(str, slugs))
    return joined.isascii() and joined == joined.lower()


def _indexed_names(entries: list[dict[str, Any]], data: dict[str, Any]) -> list[str] | None:
    """The indexed file names as the drift check sees them, sorted; None with orphans recorded
    (the drift check counts those too: left to a parse)."""
    if data.get("orphans"):
        return None
    return sorted(set(map(str, map(dict.get, entries, repeat("filename")))))


def _with_names(names: list[str], entries: list[dict[str, Any]]) -> list[str]:
    """A copy of the sorted file names `names` with those of `entries` added (a set: each once)."""
    out = list(names)
    for name in map(str, map(dict.get, entries, repeat("filename"))):
        at = bisect.bisect_left(out, name)
        if at == len(out) or out[at] != name:
            out.insert(at, name)
    return out


class EntryFacts:
    """What a save found of an index's entries for their layout (`Layout`): `by_id` was in step
    with them (`_in_step`), and their file names (`_indexed_names`) and whether their slugs are
    plain (`_plain_slugs`). Each is a look at every entry: at 10,000 memories the three were ~3.5
    ms of a 15 ms `serve` write. A server keeps an index parsed between its writes
    (`keep_parsed`), so the next save of the same data, only appended to since, takes them from
    here and looks at the new entries alone. `entries` is the very list they describe and `by_id`
    the very map (identity), `count` the list's length then."""

    __slots__ = ("by_id", "count", "entries", "names", "plain")

    def __init__(self, data: dict[str, Any], names: list[str] | None, plain: bool) -> None:
        self.entries: list[dict[str, Any]] = data["entries"]
        self.by_id: dict[str, int] = data["by_id"]
        self.count, self.names, self.plain = len(self.entries), names, plain


@dataclass
class FolderIndex:
    folder: str  # workspace-relative, no trailing slash
    data: dict[str, Any] = field(default_factory=dict)
    existed: bool = True
    _appended: list[dict[str, Any]] = field(default_factory=list, repr=False)
    _dirty: bool = field(default=False, repr=False)
    _ids: tuple[list[dict[str, Any]], int, set[str]] | None = field(default=None, repr=False)
    _kept_as: str | None = field(default=None, repr=False)  # its data is kept under this key
    _raw: RawEntries | None = field(default=None, repr=False)  # entries not parsed yet
    _layout: Layout | None = field(default=None, repr=False)  # of its last bytes
    _written: list[dict[str, Any]] = field(default_factory=list, repr=False)  # spliced in unparsed
    _facts: EntryFacts | None = field(default=None, repr=False)  # of its entries at its last save
    _grown: int | None = field(default=None, repr=False)  # entries the last finalize appended only

    def raw(self) -> RawEntries | None:
        """The unparsed part, while `data` has no "entries" of its own (a repair sets them)."""
        if self._raw is not None and "entries" in self.data:
            self._raw = None
        return self._raw

    def _parse_raw(self) -> None:
        """Parse what was left unparsed, in place: `data` keeps its identity and key order."""
        raw = self.raw()
        if raw is None:
            return
        self._raw = None
        values = {k: raw.parsed(k) for k in UNPARSED}
        values["entries"].extend(self._appended)
        items = [
            (k, values[k] if k in values else self.data[k])
            for k in raw.spans
            if k in values or k in self.data
        ]
        rest = [(k, v) for k, v in self.data.items() if k not in raw.spans]
        self.data.clear()
        self.data.update(items)
        self.data.update(rest)

    def count(self) -> int:
        raw = self.raw()
        return raw.count + len(self._appended) if raw is not None else len(self.entries)

    def listing_matches(self, names: list[str], on_disk: set[str] | None = None) -> bool:
        """Whether the memory files among a folder's `names` (`on_disk` when the caller has them)
        are the set of file names the unparsed entries index; False when parsed or not known to
        match. The drift check and the slot scan of one write ask it of the same listing."""
        raw = self.raw()
        if raw is None or raw.names is None or self._appended:
            return False
        if raw.source is names:
            return True
        on_disk = memory_names(names) if on_disk is None else on_disk
        if raw.listed is None:
            listed = sorted(on_disk)
            if names_digest(listed) != raw.names:
                return False
            raw.listed, raw.on_disk = listed, on_disk
        raw.source = names if on_disk == raw.on_disk else None
        return raw.source is names

    def may_have_slug(self, slug: str) -> bool:
        """False when no entry has this slug (case-folded) without parsing; else True."""
        raw = self.raw()
        if raw is None or any(str(e.get("slug")).casefold() == slug.casefold() for e in self._appended):
            return True
        return raw.may_have_slug(slug)

    def release(self) -> None:
        """About to change `data` in place: whatever this index's save kept of it in the process
        (`keep_parsed`) is forgotten first, so the kept index is never one that changed after its
        file was written. Every method that changes `data` calls it; code that changes `data`
        directly must call it first."""
        if self._kept_as is not None:
            _forget_kept(self._kept_as, self.data)
            self._kept_as = None

    @property
    def entries(self) -> list[dict[str, Any]]:
        if self._raw is not None:
            self._parse_raw()
        entries: list[dict[str, Any]] = self.data.setdefault("entries", [])
        return entries

    @property
    def dirty(self) -> bool:
        """Entries were replaced or removed (or repaired on load) since the last save: the next
        save rebuilds every map, and the index differs from its file by more than appended entries."""
        return self._dirty

    def mark_dirty(self) -> None:
        """Entries were set wholesale (a repair): the next save rebuilds every map."""
        self.release()
        self._dirty = True

    @property
    def updated_at(self) -> str:
        return str(self.data.get("updated_at") or "")

    def get(self, mem_id: str) -> dict[str, Any] | None:
        raw = self.raw()
        if raw is not None:
            found = next((e for e in chain(self._appended, self._written) if e.get("id") == mem_id), None)
            if found is not None or not raw.has("by_id", mem_id):
                return found  # by_id names every unparsed entry (RawEntries)
        pos = (self.data.get("by_id") or {}).get(mem_id)
        if isinstance(pos, int) and 0 <= pos < len(self.entries) and self.entries[pos].get("id") == mem_id:
            return self.entries[pos]
        for e in self.entries:
            if e.get("id") == mem_id:
                return e
        return None

    def upsert(self, entry: dict[str, Any]) -> None:
        self.release()
        raw = self.raw()
        if raw is not None:
            if not raw.has("by_id", entry["id"]) and all(e.get("id") != entry["id"] for e in self._appended):
                self._appended.append(entry)  # a new memory: the unparsed entries stay so
                return
            self._parse_raw()
        pos_map = (self.data.get("by_id") or {}).get(entry["id"])
        if (
            isinstance(pos_map, int)
            and pos_map < len(self.entries)
            and self.entries[pos_map].get("id") == entry["id"]
        ):
            pos: int | None = pos_map
        elif (pos_map is None and self._as_saved()) or not self._has_id(entry["id"]):
            pos = None
        else:
            pos = next((i for i, e in enumerate(self.entries) if e.get("id") == entry["id"]), None)
        if pos is not None:
            self.entries[pos] = entry
            self._dirty = True
        else:
            self.entries.append(entry)
            self._appended.append(entry)
            if self._ids is not None and self._ids[0] is self.entries:
                self._ids[2].add(entry["id"])
                self._ids = (self.entries, len(self.entries), self._ids[2])

    def _kept_facts(self) -> EntryFacts | None:
        """The facts of this data's last save (`EntryFacts`) while its entries list and `by_id`
        are the very ones they describe."""
        facts = self._facts
        if (
            facts is None
            or facts.entries is not self.data.get("entries")
            or facts.by_id is not self.data.get("by_id")
        ):
            return None
        return facts

    def _as_saved(self) -> bool:
        """The entries and `by_id` are as this data's last save left them, in step: an id `by_id`
        lacks is then no entry's."""
        facts = self._kept_facts()
        return facts is not None and not (self._dirty or self._appended) and facts.count == len(facts.entries)

    def _has_id(self, mem_id: str) -> bool:
        """Whether an entry has this id: a set built once per entries list (a batch of new
        memories then costs no scan of every entry per write)."""
        entries = self.entries
        if self._ids is None or self._ids[0] is not entries or self._ids[1] != len(entries):
            self._ids = (entries, len(entries), set(map(str, map(dict.get, entries, repeat("id")))))
        return mem_id in self._ids[2]

    def remove(self, mem_id: str) -> None:
        self.release()
        self.data["entries"] = [e for e in self.entries if e.get("id") != mem_id]
        self._dirty = True

    def finalize(self, tier: str | None = None) -> None:
        self.release()
        d = self.data
        d.setdefault("version", 1)
        d.setdefault("folder_id", None)
        d["folder_path"] = self.folder.rstrip("/") + "/"
        d["updated_at"] = now_iso()
        if tier is not None:
            d.setdefault("tier", tier)
        d["entry_count"] = self.count()
        appended = self._append_maps()
        self._grown = len(self._appended) if appended else None
        if not appended:
            d.update(build_maps(self.entries))
        if self.raw() is None:
            self._appended = []  # (the unparsed path splices them in `to_bytes`)
        self._dirty = False

    def _append_raw(self, raw: RawEntries) -> bool:
        """`_append_maps` over unparsed maps: an appended entry's keys go at the end of each map;
        False (the caller parses and rebuilds) when a 1:1 map already holds one of them (which
        entry wins depends on the holder) or a small map is not a map."""
        new, d = self._appended, self.data
        if self._dirty or not new:
            return False
        small: dict[str, dict[str, Any]] = {}
        for k in INDEX_MAPS:
            m = d.get(k)
            if k not in UNPARSED and not isinstance(m, dict):
                return False
            small[k] = m if isinstance(m, dict) else {}
        for name, key in (("by_slug", "slug"), ("by_wikilink", "title")):
            vals = [str(e[key]) for e in new if e.get(key)]
            if len(set(vals)) != len(vals) or any(raw.has(name, v) for v in vals):
                return False
        if any(e.get("companion_for") for e in new):
            return False
        for pos, e in enumerate(new, start=raw.count):
            mid = e["id"]
            raw.added["by_id"][mid] = pos
            small["by_kind"].setdefault(e.get("kind"), []).append(mid)  # type: ignore[arg-type]
            small["by_status"].setdefault(e.get("status"), []).append(mid)  # type: ignore[arg-type]
            for t in e.get("tags") or ():
                small["by_tag"].setdefault(t, []).append(mid)
            for name, key in (("by_slug", "slug"), ("by_wikilink", "title")):
                if e.get(key):
                    raw.added[name][str(e[key])] = mid
        return True

    def _append_maps(self) -> bool:
        """Extend the loaded maps for entries only appended (a plain write): no full rebuild.

        Used only when the loaded maps are provably in step with the loaded entries; anything
        else (replaced or removed entries, entries set wholesale) rebuilds every map.
        """
        raw = self.raw()
        if raw is not None:
            return self._append_raw(raw)
        new = self._appended
        d = self.data
        by_id = d.get("by_id")
        n_old = len(self.entries) - len(new)
        if self._dirty or not new or not isinstance(by_id, dict) or len(by_id) != n_old:
            return False
        if any(a is not b for a, b in zip(new, self.entries[n_old:], strict=True)):
            return False
        if n_old and by_id.get(self.entries[n_old - 1].get("id")) != n_old - 1:
            return False
        maps: dict[str, dict[str, Any]] = {}
        for k in INDEX_MAPS:
            m = d.get(k)
            if not isinstance(m, dict):
                return False
            maps[k] = m
        for pos, e in enumerate(new, start=n_old):
            mid = e["id"]
            by_id[mid] = pos
            maps["by_kind"].setdefault(e.get("kind"), []).append(mid)  # type: ignore[arg-type]
            maps["by_status"].setdefault(e.get("status"), []).append(mid)  # type: ignore[arg-type]
            for t in e.get("tags") or ():
                maps["by_tag"].setdefault(t, []).append(mid)
            for name, key in (
                ("by_slug", "slug"),
                ("by_wikilink", "title"),
                ("by_companion_for", "companion_for"),
            ):
                val = e.get(key)
                if not val:
                    continue
                holder = maps[name].get(str(val))
                hpos = by_id.get(holder) if holder else None
                if hpos is None or _rank(e) >= _rank(self.entries[hpos]):
                    maps[name][str(val)] = mid
        return True

    def _entry_facts(self) -> EntryFacts | None:
        """The layout's facts of the entries (None: `by_id` not in step with them), from those of
        this data's last save when the entries were only appended to since (`EntryFacts`)."""
        entries, prev = self.entries, self._kept_facts()
        if prev is not None and self._grown is not None and prev.count + self._grown == len(entries):
            new = entries[prev.count :]  # `_append_maps` put each at its position in `by_id`
            if prev.names is None or self.data.get("orphans"):
                names = _indexed_names(entries, self.data)  # (None with orphans)
            else:
                names = _with_names(prev.names, new)
            return EntryFacts(self.data, names, prev.plain and _plain_slugs(new))
        if not _in_step(self.data.get("by_id"), entries):
            return None
        return EntryFacts(self.data, _indexed_names(entries, self.data), _plain_slugs(entries))

    def to_bytes(self) -> bytes:
        """The index's file bytes (`dump_index`); what was left unparsed is spliced in as it is,
        with what was appended. Records where the values lie (`_layout`) when a later write may
        splice into these bytes again."""
        raw = self.raw()
        self._layout = None
        if raw is None:
            if len(self.entries) <= COMPACT_ABOVE:
                return dump_index(self.data)
            out = dump_index(self.data)
            spans = _spans(self.data, len(out))
            self._facts = facts = self._entry_facts() if spans is not None else None
            if spans is not None and facts is not None:
                digest = names_digest(facts.names) if facts.names is not None else None
                self._layout = (len(self.entries), spans, facts.plain, digest)
            return out
        opts = orjson.OPT_NON_STR_KEYS
        new = self._appended
        added = [orjson.dumps(e, option=opts) for e in new]
        given = {"entries": raw.pieces("entries", added)}
        for k in UNPARSED[1:]:
            given[k] = raw.pieces(
                k, [orjson.dumps(a) + b":" + orjson.dumps(v) for a, v in raw.added[k].items()]
            )
        placed = {k: self.data.get(k) for k in raw.spans if k in UNPARSED or k in self.data}
        placed.update(self.data)
        out, spans = dump_compact(placed, given)
        n = raw.count + len(new)
        listed = None
        if raw.listed is not None and not self.data.get("orphans"):
            listed = _with_names(raw.listed, new)
        plain = raw.plain_slugs and _plain_slugs(new)
        digest = names_digest(listed) if listed is not None else None
        if len(raw.added["by_id"]) == len(new):  # (by_id still names every entry)
            self._layout = (n, spans, plain, digest)
        # From here on this index is the bytes just made (what its save writes).
        self._raw = RawEntries(out, spans, n, plain, digest, listed=listed, on_disk=set(listed or ()))
        self._written += new  # (`get` answers for them without a parse)
        self._appended = []
        return out


def _spans(data: dict[str, Any], size: int) -> dict[str, list[int]] | None:
    """Where each top-level value lies in `dump_index(data)` (compact, `size` bytes): every value
    but the entries dumped again to measure it (the entries take what is left), rather than the
    whole index dumped piece by piece and joined (`dump_compact`: a copy of all its bytes)."""
    if not all(isinstance(k, str) for k in data):
        return None
    heads = [_key_head(n, k) for n, k in enumerate(data)]
    opts = orjson.OPT_NON_STR_KEYS
    sizes = {k: 0 if k == "entries" else len(orjson.dumps(v, option=opts)) for k, v in data.items()}
    sizes["entries"] = size - 2 - sum(map(len, heads)) - sum(sizes.values())
    spans: dict[str, list[int]] = {}
    pos = 1
    for head, k in zip(heads, data, strict=True):
        pos += len(head)
        spans[k] = [pos, pos + sizes[k]]
        pos += sizes[k]
    return spans


def _in_step(by_id: Any, entries: list[dict[str, Any]]) -> bool:
    """`by_id` names every entry, in order, at its position (what a write appending to the
    unparsed entries relies on: an id is new when `by_id` lacks it)."""
    return (
        isinstance(by_id, dict)
        and list(by_id.values()) == list(range(len(entries)))
        and list(by_id) == list(map(dict.get, entries, repeat("id")))
    )


def parse_index(raw: bytes, where: str, *, checked: bool = False) -> dict[str, Any]:
    """The index's data, every entry's field types checked - unless `checked`: these very bytes
    passed those checks before (`_checked_before`)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise InvalidFile(
            f"{where} is not valid JSON ({e.args[0]}); run `box-memory index-rebuild`"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("entries", []), list):
        raise InvalidFile(f"{where} is not a box-memory index; run `box-memory index-rebuild`")
    entries = data.get("entries", [])
    if checked or _entries_well_typed(entries):
        return data
    if any(not isinstance(e, dict) or not isinstance(e.get("id"), str) for e in entries):
        raise InvalidFile(f"{where} has malformed entries; run `box-memory index-rebuild`")
    for ent in entries:
        bad = [k for k in _TEXT_FIELDS if ent.get(k) is not None and not isinstance(ent[k], str)]
        bad += [k for k in ("filename", "local_path") if "\x00" in str(ent.get(k) or "")]
        tags = ent.get("tags")
        # A scalar tag is read tolerantly (other tools write one); anything else is malformed.
        if (
            tags is not None
            and not isinstance(tags, str)
            and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags))
        ):
            bad.append("tags")
        if bad:
            raise InvalidFile(
                f"{where}: entry {ent['id'][:40]} has {', '.join(bad)} of the wrong type; "
                "run `box-memory index-rebuild`"
            )
    return data


_TEXT_FIELDS = ("slug", "title", "kind", "status", "filename", "local_path", "team")
_TEXT_TYPES = {str, type(None)}


def _entries_well_typed(entries: list[Any]) -> bool:
    """The checks of `parse_index`, field by field over every entry at C speed (map, set): an
    index of 40,000 entries is checked in milliseconds instead of a fifth of a second. False
    means "look closer": the entry-by-entry loop then names the bad entry and field."""
    if not entries:
        return True
    if set(map(type, entries)) != {dict}:
        return False
    if set(map(type, map(dict.get, entries, repeat("id")))) != {str}:
        return False
    for k in _TEXT_FIELDS:
        if not set(map(type, map(dict.get, entries, repeat(k)))) <= _TEXT_TYPES:
            return False
    for k in ("filename", "local_path"):
        if "\x00" in "".join(filter(None, map(dict.get, entries, repeat(k)))):
            return False
    tags = list(map(dict.get, entries, repeat("tags")))
    kinds = set(map(type, tags))
    if not kinds <= {str, list, type(None)}:
        return False
    if list in kinds:
        lists = [t for t in tags if type(t) is list]
        if not set(map(type, chain.from_iterable(lists))) <= {str}:
            return False
    return True


# A long-lived process (`serve`) keeps each local folder index it parsed or saved, with the stat
# signature of the file it came from (inode, size, mtime and ctime in ns: an atomic replace always
# gives a new inode), and hands it out while the file still has that signature: a write then
# costs no parse of its folder's whole index (100 ms at 4,000 entries). The signature is taken
# before the read, so a file replaced meanwhile is parsed again next time. A load hands the kept
# index over and forgets it (the next save keeps it again). A parsed index is kept as a copy (the
# loader changes its own); a saved one is kept as the very object the save wrote, not a copy
# (copying 4,000 entries cost ~9 ms per write): the saving `FolderIndex` forgets it before it
# changes it again (`FolderIndex.release`), and while that index is still alive a load gets a copy,
# never the object it may yet change. None: keep nothing (the CLI, whose process makes one write).
_parsed: dict[str, tuple[str, dict[str, Any], Any, EntryFacts | None]] | None = None


def keep_parsed() -> None:
    """From now on, keep the local folder indexes this process parses or saves (`serve`)."""
    global _parsed
    if _parsed is None:
        _parsed = {}


def forget_parsed() -> None:
    global _parsed
    _parsed = None


# A CLI write parses its folder's whole index once per process, and checking every entry's field
# types (`parse_index`) costs another half of that parse at 40,000 entries (0.14 s). An index
# whose file still has the stat signature it had when this user's box-memory saved or checked it
# holds the same bytes (an atomic replace always gives a new inode), so it is not checked again:
# the signatures are kept in the user cache, one small file per local workspace. A hint only: a
# lost, stale or unreadable one means the index is checked as before. Small indexes are checked
# every time (it costs less than the hint).
CHECKED_MIN_BYTES = 1 << 20


def _checked_file(ws: Workspace) -> Any:
    from hashlib import sha1

    from box_memory.paths import user_dirs

    name = sha1(ws.describe().encode(), usedforsecurity=False).hexdigest()[:20]
    return user_dirs().cache / "index-checks" / f"{name}.json"


def _checked_before(ws: Workspace) -> dict[str, Any]:
    try:
        data = orjson.loads(read_regular(_checked_file(ws), "config", follow=False))
    except (OSError, InvalidFile, orjson.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


# Beside each index's signature: where the entries array lies in the bytes it names, when a write
# may splice into them without parsing them (`RawEntries`): [signature, *Layout].
_LAYOUT = "layout\0"


def _mark_checked(ws: Workspace, path: str, sig: str | None, layout: Layout | None = None) -> None:
    if sig is None:
        return
    marks = {**_checked_before(ws), path: sig}
    marks.pop(_LAYOUT + path, None)
    if layout is not None:
        marks[_LAYOUT + path] = [sig, *layout]
    target = _checked_file(ws)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(orjson.dumps(marks))
        os.replace(tmp, target)  # noqa: PTH105 - one call, as the rest of this module
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _kept_key(ws: Workspace, path: str) -> str | None:
    return None if _parsed is None or ws.store.local_root is None else f"{ws.describe()}\0{path}"


def _copied(data: dict[str, Any]) -> dict[str, Any]:
    """A copy a `FolderIndex` may change freely: its entries and maps are replaced, appended to and
    edited in place (an entry's Box file id), never the values inside an entry."""
    out = dict(data)
    out["entries"] = [dict(e) for e in data.get("entries", [])]
    for k in INDEX_MAPS:
        m = data.get(k)
        if isinstance(m, dict):
            out[k] = {a: list(b) if isinstance(b, list) else b for a, b in m.items()}
    return out


def _keep(key: str | None, sig: str | None, data: dict[str, Any]) -> None:
    """Keep a copy of an index just parsed (its loader changes its own data)."""
    if _parsed is not None and key is not None and sig not in (None, "denied"):
        _parsed[key] = (str(sig), _copied(data), None, None)


def _keep_saved(key: str, sig: str, idx: FolderIndex) -> None:
    """Keep the index a save has just written, not a copy: `idx` forgets it before changing it."""
    if _parsed is not None and sig != "denied":
        _parsed[key] = (sig, idx.data, weakref.ref(idx), idx._facts)
        idx._kept_as = key


def _forget_kept(key: str, data: dict[str, Any]) -> None:
    kept = (_parsed or {}).get(key)
    if kept is not None and kept[1] is data:
        (_parsed or {}).pop(key, None)


def _take_kept(key: str, sig: str | None) -> tuple[dict[str, Any], EntryFacts | None] | None:
    """The kept index of `key` when its file still has signature `sig`, handed over (forgotten
    here), with the facts its save found of its entries; a copy, without them, while the index
    that saved it is still alive (it may change it yet)."""
    kept = (_parsed or {}).pop(key, None)
    if kept is None or kept[0] != sig:
        return None
    saver = kept[2]() if kept[2] is not None else None
    if saver is None:
        return kept[1], kept[3]
    saver._kept_as = None
    return _copied(kept[1]), None


def _load_raw(ws: Workspace, folder: str, path: str) -> FolderIndex | None:
    """The index with its entries and per-entry maps left unparsed (`RawEntries`), when its file
    is still the one whose layout this user's box-memory recorded as it wrote it; else None."""
    sig = ws.store.signature(path)
    hint = _checked_before(ws).get(_LAYOUT + path) if sig is not None else None
    if not (isinstance(hint, list) and len(hint) == 5 and hint[0] == sig):
        return None
    _, count, spans, plain, names = hint
    try:
        raw = ws.store.read_bytes(path)
    except (NotFound, UnreadableFile, OutsideWorkspace):
        return None  # the full load says what is wrong
    if ws.store.signature(path) != sig or not _spans_fit(raw, spans) or not isinstance(count, int):
        return None
    data: dict[str, Any] = {}
    try:
        for k, (start, end) in spans.items():
            if k not in UNPARSED:
                data[k] = orjson.loads(memoryview(raw)[start:end])
    except orjson.JSONDecodeError:
        return None
    if not all(isinstance(data.get(k), dict) for k in INDEX_MAPS if k not in UNPARSED):
        return None
    digest = names if isinstance(names, str) else None
    return FolderIndex(folder, data, _raw=RawEntries(raw, spans, count, plain is True, digest))


def _spans_fit(raw: bytes, spans: Any) -> bool:
    """The recorded layout tiles these bytes: each key and value where it was, nothing between."""
    if not isinstance(spans, dict) or not all(k in spans for k in UNPARSED) or raw[:1] != b"{":
        return False
    pos = 1
    for n, (k, span) in enumerate(spans.items()):
        head = _key_head(n, k)
        if not (isinstance(span, list) and len(span) == 2 and raw.startswith(head, pos)):
            return False
        start, end = span
        if start != pos + len(head) or not (isinstance(end, int) and start < end <= len(raw)):
            return False
        pos = end
    opening = {k: raw[spans[k][0] : spans[k][0] + 1] for k in UNPARSED}
    if opening != {"entries": b"[", "by_id": b"{", "by_slug": b"{", "by_wikilink": b"{"}:
        return False
    return pos == len(raw) - 1 and raw[pos:] == b"}"


def load_index(ws: Workspace, folder: str, *, raw_ok: bool = False) -> FolderIndex:
    """The folder's index. `raw_ok` (a single write in a CLI process, on a local folder): its
    entries may be left unparsed (`RawEntries`) until something needs more than to append one."""
    path = join(folder, INDEX_NAME)
    if raw_ok and _parsed is None and ws.store.local_root is not None:
        found = _load_raw(ws, folder, path)
        if found is not None:
            return found
    key = _kept_key(ws, path)
    sig = None
    if key is not None:
        sig = ws.store.signature(path)
        kept = _take_kept(key, sig)
        if kept is not None:
            return FolderIndex(folder, kept[0], _facts=kept[1])
    try:
        data = read_index_data(ws, path, sig)
    except NotFound:
        return FolderIndex(folder, {"version": 1, "folder_path": folder + "/", "entries": []}, existed=False)
    except (UnreadableFile, OutsideWorkspace) as e:
        if isinstance(e, ReadFailed) or (isinstance(e, OutsideWorkspace) and e.link != path):
            raise
        # A folder, FIFO, device or a link (looping, or out of the workspace) where the index
        # should be: say what repairs it.
        raise UnreadableFile(f"{e}; run `box-memory index-rebuild` (it moves it aside)") from None
    _keep(key, sig, data)
    return FolderIndex(folder, data)


def read_index_data(ws: Workspace, path: str, sig: str | None = None) -> dict[str, Any]:
    """An index file's data (`parse_index`), its entries' types not checked again when this user
    saved or checked these very bytes before (`CHECKED_MIN_BYTES`). `sig`: the file's signature
    taken already; raises NotFound and the read's errors."""
    local = ws.store.local_root is not None
    before = (sig or ws.store.signature(path)) if local else None
    raw = ws.store.read_bytes(path)
    same = local and len(raw) >= CHECKED_MIN_BYTES and before is not None
    same = same and ws.store.signature(path) == before  # not replaced while it was read
    checked = same and _checked_before(ws).get(path) == before
    data = parse_index(raw, f"{ws.describe()}/{path}", checked=checked)
    if same and not checked:
        _mark_checked(ws, path, before)
    return data


def save_index(ws: Workspace, idx: FolderIndex) -> None:
    _box_ids(ws, idx)
    idx.finalize(str(ws.config.data.get("tier") or "unknown"))
    path = join(idx.folder, INDEX_NAME)
    raw = idx.to_bytes()
    key = _kept_key(ws, path)
    if key is not None:
        (_parsed or {}).pop(key, None)  # a failed write below must leave nothing kept
    file_id = ws.store.write_bytes(path, raw)
    if file_id and idx.data.get("folder_id") and not idx.data.get("index_file_id"):
        idx.data["index_file_id"] = file_id  # the first upload made it: the next save records it
    sig = _saved(ws, path, len(raw), idx._layout)
    if key is not None and sig is not None:
        _keep_saved(key, sig, idx)


def _saved(ws: Workspace, path: str, size: int, layout: Layout | None = None) -> str | None:
    """The signature of an index file just written (under the writers' lock: no writer that
    follows the format replaces it before this stat), or None when it is not what was written
    (another size) or nothing is to be remembered of it; a large one is marked checked, with
    `layout` (where its entries lie) when the next write may splice into it."""
    if _parsed is None and (ws.store.local_root is None or size < CHECKED_MIN_BYTES):
        return None
    st = ws.store.stat(path)
    if st is None or st.size != size:
        return None
    sig = ws.store.signature(path)
    if size >= CHECKED_MIN_BYTES and ws.store.local_root is not None:
        _mark_checked(ws, path, sig, layout)
    return sig


def _box_ids(ws: Workspace, idx: FolderIndex) -> None:
    """On Box, an index carries its folder's id and its own file id (format spec section 5), taken
    from the listings this command already holds; a local workspace has neither."""
    d = idx.data
    if not d.get("folder_id"):
        fid = ws.store.folder_id(idx.folder)
        if fid is None:
            return  # no Box ids here (a local folder)
        d["folder_id"] = fid
    if not d.get("index_file_id"):
        entry = ws.store.stat(join(idx.folder, INDEX_NAME))
        if entry is not None and entry.file_id:
            d["index_file_id"] = entry.file_id


def load_all(ws: Workspace, skipped: list[str] | None = None) -> list[FolderIndex]:
    """Every folder index this user may read (a team folder it may not read is left out; with
    `skipped`, it is named there: its folder path, or the sentence naming a link out of the
    workspace)."""
    out: list[FolderIndex] = []
    for f in ws.index_folders():
        try:
            out.append(load_index(ws, f))
        except Unreadable as e:
            if skipped is not None:
                skipped.append(str(e) if isinstance(e, OutsideWorkspace) else f + "/")
            continue
    return out


LAZY_ROLLUP_BYTES = 1024 * 1024
# The plugin's own write refreshes the rollup only when it is over an hour old (box-write, step
# 12: "lazy by default"); a large rollup re-serialised on every write would cost more than the
# folder index the write changed.
ROLLUP_MAX_LAG_S = 3600.0


# What one more entry may add to an index with its maps, at most (an entry is ~0.8 KB): a write
# into a folder whose index is this close to the store's upload limit is refused before it writes.
ENTRY_ROOM_BYTES = 64 * 1024


def near_upload_limit(ws: Workspace, size: int) -> int | None:
    """The store's upload limit when an index of `size` bytes, one entry larger, could pass it
    (Box cloud: 50 MB in one upload); None otherwise (no limit: a local folder)."""
    limit = ws.store.upload_limit()
    return limit if limit is not None and size + ENTRY_ROOM_BYTES > limit else None


def rollup_may_lag(ws: Workspace) -> bool:
    """A write may leave a large rollup for a later refresh (format spec: it may lag lazily).

    Only when the rollup is big (re-serialising it would dominate the write) and was refreshed
    less than ROLLUP_MAX_LAG_S ago (always, under the "monthly" memory layout); readers see it is
    older than a child index and fall back to the child indexes, and `index-rebuild` refreshes it.
    """
    import time

    st = ws.store.stat(INDEX_NAME)
    if st is None:
        return False
    if near_upload_limit(ws, st.size) is not None:
        return True  # Box would refuse its upload (one request, 50 MB): readers use the child indexes
    if st.size <= LAZY_ROLLUP_BYTES:
        return False
    # Under the "monthly" layout a write rewrites one month's index and nothing that grows with
    # the workspace: a large rollup is left to `index-rebuild` (readers fall back, as above).
    return ws.config.memory_layout == "monthly" or time.time() - st.modified < ROLLUP_MAX_LAG_S


def _exists(ws: Workspace, path: str) -> bool:
    try:
        return ws.store.exists(path)
    except Unreadable:
        return True  # there, but not for this user


def refresh_rollup(ws: Workspace, updated: dict[str, FolderIndex] | None = None) -> dict[str, Any]:
    """Rewrite `<root>/_index.json` over every child index.

    With `updated` (a write that changed those folder indexes, under the lock), the other
    folders' entries come from the current rollup when it is at least as new as their indexes,
    so a write reads one big JSON file instead of every child index again.
    """
    updated = updated or {}
    old: dict[str, Any] = {}
    # Nothing to reuse when every existing child index is in `updated` (index-rebuild): skip
    # reading the big rollup.
    if updated and any(f not in updated and _exists(ws, join(f, INDEX_NAME)) for f in ws.index_folders()):
        try:
            old = read_index_data(ws, INDEX_NAME)
        except (NotFound, InvalidFile):
            old = {}
    old_children = {c.get("folder_path"): c for c in old.get("child_indexes") or [] if isinstance(c, dict)}
    old_time = parse_time(old.get("updated_at"))
    old_by_folder: dict[str, list[dict[str, Any]]] = {}
    for e in old.get("entries") or []:
        old_by_folder.setdefault(str(e.get("folder_path")), []).append(e)

    def reusable(folder: str) -> bool:
        # The rollup's copy of a child is current when that child's file has not changed since.
        if old_time is None or folder + "/" not in old_children:
            return False
        try:
            st = ws.store.stat(join(folder, INDEX_NAME))
        except Unreadable:
            return False
        return st is not None and st.modified < old_time.timestamp()

    entries: list[dict[str, Any]] = []
    children: list[dict[str, Any]] = []
    for folder in ws.index_folders():
        key = folder + "/"
        if folder in updated:
            idx = updated[folder]
            folder_entries = [{**e, "folder_path": key} for e in idx.entries]
        elif reusable(folder):
            idx = FolderIndex(folder, {k: v for k, v in old_children[key].items() if k != "folder_path"})
            folder_entries = old_by_folder.get(key, [])
        else:
            try:
                idx = load_index(ws, folder)
            except (InvalidFile, Unreadable):
                # A broken child index must not fail a write that is already committed: leave
                # the rollup to lag (readers then fall back to the child indexes); index-rebuild
                # reports and repairs it. One this user may not read (a team boundary) must not
                # be dropped from the rollup either: the rollup lags until someone who can read
                # every team refreshes it.
                return {}
            if not idx.existed:
                continue
            folder_entries = [{**e, "folder_path": key} for e in idx.entries]
        children.append(
            {
                "folder_path": key,
                "folder_id": idx.data.get("folder_id"),
                "index_file_id": idx.data.get("index_file_id"),
                "updated_at": idx.data.get("updated_at"),
            }
        )
        entries.extend(folder_entries)
    roll = {
        "version": 1,
        "folder_id": ws.config.folder_ids.get("root"),
        "folder_path": "",
        "updated_at": now_iso(),
        "tier": ws.config.data.get("tier") or "unknown",
        "entry_count": len(entries),
        "entries": entries,
        **build_maps(entries),
        "child_indexes": children,
    }
    raw = dump_index(roll)
    try:
        ws.store.write_bytes(INDEX_NAME, raw)
    except UnreadableFile:
        return {}  # not a regular file in its place: left to lag; index-rebuild moves it aside
    except TooLargeForBox:
        return {}  # over what Box takes in one upload: left to lag; readers use the child indexes
    _saved(ws, INDEX_NAME, len(raw))
    return roll


# --- scanning memory files ------------------------------------------------------------------


def read_memory(ws: Workspace, path: str) -> Memory:
    raw = ws.store.read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidFile(f"{path}: not UTF-8 text") from None
    meta, body = frontmatter.parse(text, path)
    return Memory.from_meta(meta, body, path)


def is_memory_file(name: str) -> bool:
    return name.endswith(".md") and name not in SKIP_MD and not name.startswith(".")


_MEMORY_NAME = re.compile(r"[^.].*\.md\Z", re.DOTALL)  # is_memory_file but SKIP_MD, for filter()


def memory_names(listed: list[str]) -> set[str]:
    """The memory files among a folder's names (`is_memory_file`), at C speed."""
    return set(filter(_MEMORY_NAME.match, listed)) - SKIP_MD


def drift(
    ws: Workspace,
    idx: FolderIndex,
    *,
    quick: bool = False,
    listing: list[Entry] | None = None,
    names: list[str] | None = None,
) -> list[str]:
    """Why this folder index may be stale (empty when it looks current).

    `quick` compares only the set of file names (no per-file times): what a write needs to pick a
    free slug and keep the index complete, at a fraction of the cost on a large folder.
    `listing` is the folder's listing when the caller has just read it (recall's cache does);
    `names` its names, for a quick check by a caller that listed them (a write).
    """
    reasons: list[str] = []
    index_written = 0.0  # when this copy of the index file was written (a copy resets it)
    if listing is not None:
        listing = [e for e in listing if not e.is_dir and is_memory_file(e.name)]
    elif quick:
        listing = []  # names only: no per-file objects on a write's hot path
    else:
        full = ws.store.list_dir(idx.folder)
        index_written = next((e.modified for e in full if e.name == INDEX_NAME), 0.0)
        listing = [e for e in full if not e.is_dir and is_memory_file(e.name)]
    if quick and not listing:
        listed = ws.store.list_names(idx.folder) if names is None else names
        on_disk = memory_names(listed)
        if idx.listing_matches(listed, on_disk):
            return reasons  # the unparsed index lists these very names (and records no orphans)
    else:
        on_disk = {e.name for e in listing}
    indexed = set(map(str, map(dict.get, idx.entries, repeat("filename"))))
    # Files a rebuild could not index (unparseable, duplicate id) are recorded, not drift.
    indexed |= {str(o.get("filename")) for o in idx.data.get("orphans") or [] if isinstance(o, dict)}
    if on_disk - indexed:
        reasons.append(f"{len(on_disk - indexed)} file(s) in {idx.folder}/ are not in its index")
    if indexed - on_disk:
        reasons.append(f"{len(indexed - on_disk)} indexed file(s) are missing from {idx.folder}/")
    t = parse_time(idx.updated_at)
    if t is not None and not quick:
        # Modification times are only a first filter: a copy without them (cp -r, git clone,
        # unzip, a fresh Box Drive sync) makes every file look newer than its index. A file counts
        # as changed only when its content no longer gives the entry the index holds for it.
        limit = max(t.timestamp(), index_written) + STALE_TOLERANCE_S
        newer = [e for e in listing if e.modified > limit]
        changed = changed_since_indexed(ws, idx, newer) if newer else []
        if changed:
            reasons.append(f"{len(changed)} file(s) in {idx.folder}/ changed after its index")
    return reasons


# Entry fields compared by `index-rebuild --check`; a field missing from the current entry (older
# plugin indexes have no `local_path` or `superseded_by`) is not counted as a change.
COMPARED = (
    "filename",
    "local_path",
    "title",
    "slug",
    "kind",
    "status",
    "team",
    "tags",
    "related",
    "companion_for",
    "sha256",
    "size_bytes",
    "created_at",
    "updated_at",
    "superseded_by",
    "expires_at",
    "file_id",
)


def _norm(v: Any) -> Any:
    return None if v in (None, "", []) else v


def entry_changes(cur: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Fields that differ between an indexed entry and the one a rebuild would write."""
    out = []
    if cur == new:
        return []
    for f in COMPARED:
        if f not in cur:
            continue
        if f == "file_id" and not (cur.get(f) and new.get(f)):
            continue
        if _norm(cur.get(f)) != _norm(new.get(f)):
            out.append(f)
    return out


def changed_since_indexed(ws: Workspace, idx: FolderIndex, files: list[Entry]) -> list[str]:
    """Names of `files` whose content no longer matches their index entry (size first, then the
    entry a rebuild would write from the file). Files the index does not list are left out: the
    caller counts them on their own."""
    from box_memory.errors import BoxMemoryError

    by_name = {str(e.get("filename")): e for e in idx.entries}
    out: list[str] = []
    for f in files:
        cur = by_name.get(f.name)
        if cur is None:
            continue
        size = cur.get("size_bytes")
        if isinstance(size, int) and f.size and f.size != size:
            out.append(f.name)
            continue
        path = join(idx.folder, f.name)
        try:
            raw = ws.store.read_bytes(path)
            meta, body = frontmatter.parse(raw.decode("utf-8"), path)
            mem = Memory.from_meta(meta, body, str(cur.get("local_path") or path))
        except (BoxMemoryError, UnicodeDecodeError):
            out.append(f.name)
            continue
        fresh = index_entry(mem, filename=f.name, file_id=cur.get("file_id"), size_bytes=len(raw))
        if (isinstance(size, int) and len(raw) != size) or entry_changes(cur, fresh):
            out.append(f.name)
    return out


def carry_over(fresh: list[dict[str, Any]], old: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries rebuilt from files keep what only the old index knew: Box `file_id`, unknown keys.

    A Box Drive copy of a cloud workspace has the plugin's Box ids only in `_index.json`; a local
    rebuild must not throw them away.
    """
    known = {str(e.get("id")): e for e in old}
    out = []
    for e in fresh:
        prev = known.get(str(e.get("id")))
        if prev is None:
            out.append(e)
            continue
        merged = {k: v for k, v in prev.items() if k not in e}
        merged.update(e)
        if not merged.get("file_id") and prev.get("file_id"):
            merged["file_id"] = prev["file_id"]
        out.append(merged)
    return out
