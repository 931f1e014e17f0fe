"""The `markdown` format: a plain folder of `.md` / `.markdown` / `.txt`, one memory per file.

The title is the file's first heading, else its name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from box_memory.errors import InvalidInput
from box_memory.transfer.sources.common import (
    SourceItem,
    digest_of,
    drop_title_heading,
    mtime_iso,
    read_inside,
    reason,
    title_from_text,
    walk,
    wikilinks,
)


def markdown_item(path: Path, raw: bytes, text: str) -> SourceItem:
    """A plain markdown/text file as one item: title from its heading or its name."""
    title = title_from_text(text, path.stem.replace("_", " ").replace("-", " "))
    return SourceItem(
        str(path),
        title=title,
        content=drop_title_heading(text, title),
        related=wikilinks(text),
        created_at=mtime_iso(path),
        updated_at=mtime_iso(path),
        digest=digest_of(raw),
    )


def read_markdown_folder(root: Path) -> Iterator[SourceItem]:
    for path in walk(root):
        ref = str(path)
        try:
            raw, text = read_inside(path, root)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=reason(e))
            continue
        yield markdown_item(path, raw, text)
