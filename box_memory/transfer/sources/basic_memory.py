"""The `basic-memory` format: a basic-memory project folder, one memory per note.

Markdown with YAML frontmatter `title`, `type`, `tags` (list or comma-separated), `permalink`;
observations (`- [category] text #tag`) and relations (`- relation_type [[Target]]`) stay in the
body as written, and every `[[Target]]` also goes to `related`. The note's folder in the project
goes to the source entry (`folder`); times follow basic-memory's own rule (frontmatter `created` /
`modified`, else the file's creation and modification times); `status: draft` makes a draft, and
every other key the note carries (`priority`, `due`, ...) is kept in the memory's frontmatter (a
key box-memory itself uses goes to the source entry's `frontmatter` instead). Shape:
basic-memory's NOTE-FORMAT.md, https://docs.basicmemory.com/concepts/knowledge-format, and its
`schema_to_markdown`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from box_memory.errors import InvalidInput
from box_memory.format.model import KINDS
from box_memory.transfer.sources.common import (
    KNOWN_KEYS,
    SourceItem,
    clean_title,
    digest_of,
    drop_title_heading,
    iso_utc,
    mtime_iso,
    read_inside,
    reason,
    split_frontmatter,
    tag_list,
    title_from_text,
    walk,
    wikilinks,
)

# basic-memory's own frontmatter keys (NOTE-FORMAT.md); every other key is the user's and is kept.
_BASIC_MEMORY_KEYS = {"title", "type", "tags", "permalink", "created", "modified"}


def read_basic_memory(root: Path) -> Iterator[SourceItem]:
    for path in walk(root, (".md",)):
        ref = str(path)
        try:
            raw, text = read_inside(path, root)
            meta, body = split_frontmatter(text, ref)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=reason(e))
            continue
        yield _note_item(path, root, raw, meta, body)


def _note_item(path: Path, root: Path, raw: bytes, meta: dict[str, Any], body: str) -> SourceItem:
    """One note as a memory: its kind and tags, place, times, and the keys it carries."""
    kind, tags = _kind_and_tags(meta)
    extra = _note_place(path, root, meta)
    status, own = _own_keys(meta, extra)
    title = clean_title(str(meta.get("title") or "")) or title_from_text(body, path.stem)
    created, updated = _note_times(path, meta)
    return SourceItem(
        str(path),
        title=title,
        content=drop_title_heading(body, title),
        kind=kind,
        tags=tags,
        related=wikilinks(body),
        created_at=created,
        updated_at=updated,
        digest=digest_of(raw),
        extra_source=extra,
        status=status,
        meta=own,
    )


def _kind_and_tags(meta: dict[str, Any]) -> tuple[str, list[str]]:
    """The note's `type` as a kind when box-memory has one of that name, else `note` with the
    type kept as a tag (a basic-memory entity type: person, project...)."""
    note_type = str(meta.get("type") or "note").strip().lower()
    kind = note_type if note_type in KINDS and note_type != "companion" else "note"
    tags = tag_list(meta.get("tags"))
    if note_type and note_type != kind:
        tags.append(note_type)
    return kind, tags


def _note_place(path: Path, root: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The source entry's keys of where the note is: its permalink and its folder in the project."""
    extra: dict[str, Any] = {}
    if meta.get("permalink"):
        extra["permalink"] = str(meta["permalink"])
    folder = path.parent.relative_to(root).as_posix()
    if folder != ".":
        extra["folder"] = folder  # the note's folder in the project, as basic-memory shows it
    return extra


def _own_keys(meta: dict[str, Any], extra: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(status, the note's own keys) from the frontmatter keys basic-memory does not define; one
    of box-memory's own names goes to `extra["frontmatter"]` instead, kept aside."""
    status: str | None = None
    own: dict[str, Any] = {}
    for key, value in meta.items():
        if key in _BASIC_MEMORY_KEYS or value is None:
            continue
        if key == "status" and str(value) in ("active", "draft"):
            status = str(value)
        elif key in KNOWN_KEYS:
            extra.setdefault("frontmatter", {})[key] = value  # a box-memory key: kept aside
        else:
            own[key] = value  # priority, due...: the memory's own frontmatter, as written
    return status, own


def _note_times(path: Path, meta: dict[str, Any]) -> tuple[str | None, str | None]:
    """(created, updated) by basic-memory's own rule (entity_parser.py): frontmatter `created` /
    `modified`, else the file's times. Its creation time is the birth time where the system keeps
    one."""
    updated = iso_utc(meta.get("modified") or meta.get("updated_at")) or mtime_iso(path)
    created = iso_utc(meta.get("created") or meta.get("created_at") or meta.get("date"))
    created = created or _ctime_iso(path, updated)
    return created or updated, updated


def _ctime_iso(path: Path, updated: str | None) -> str | None:
    """A file's creation time: its birth time where the system records one, else its status
    change time (what basic-memory itself reads), never later than its modification time."""
    import datetime as dt

    try:
        st = path.stat()
    except OSError:
        return updated
    born = getattr(st, "st_birthtime", None) or st.st_ctime
    created = iso_utc(dt.datetime.fromtimestamp(born, dt.UTC))
    if created is None or (updated is not None and created > updated):
        return updated
    return created
