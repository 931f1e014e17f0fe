"""Which format a source is in (`detect_format`), and the reader of each format (`READERS`)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from box_memory.errors import InvalidInput, NotFound
from box_memory.format.safeio import UnreadableFile, guarded, injected_hang, open_regular
from box_memory.transfer.sources.basic_memory import read_basic_memory
from box_memory.transfer.sources.box_export import read_box_memory
from box_memory.transfer.sources.claude_code import CLAUDE_NAMES, claude_files, read_claude_code
from box_memory.transfer.sources.common import TEXT_SUFFIXES, SourceItem, walk
from box_memory.transfer.sources.exports import EXPORT_MEMBER
from box_memory.transfer.sources.markdown import read_markdown_folder
from box_memory.transfer.sources.mem0 import read_mem0

FORMATS = ("basic-memory", "claude-code", "mem0", "markdown", "box-memory")

READERS: dict[str, Callable[[Path], Iterator[SourceItem]]] = {
    "basic-memory": read_basic_memory,
    "claude-code": read_claude_code,
    "mem0": read_mem0,
    "markdown": read_markdown_folder,
    "box-memory": read_box_memory,
}


def _head(path: Path, n: int) -> bytes:
    """The first n bytes of a regular file (never a FIFO or device)."""
    injected_hang(path)  # test hook BOX_MEMORY_HANG_READ
    fd, _ = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(n)


def detect_format(source: Path) -> tuple[str, str]:
    """(format, why) for a source path."""
    if source.is_file():
        return _file_format(source)
    if not source.is_dir():
        raise NotFound(f"import source {source} not found")
    return _folder_format(source)


def _file_format(source: Path) -> tuple[str, str]:
    """The format of one file, by its name and, for JSON, its first 64 KiB."""
    if source.name in CLAUDE_NAMES:
        return "claude-code", f"{source.name} is a Claude Code memory file"
    suffix = source.suffix.lower()
    if suffix in (".json", ".jsonl", ".ndjson"):
        return _json_format(source)
    if suffix in TEXT_SUFFIXES:
        return "markdown", "a single markdown/text file"
    if suffix == ".zip":
        return "box-memory", "a zip from `box-memory export --format markdown-zip`"
    raise InvalidInput(f"{source}: unknown source format; pass --from ({'|'.join(FORMATS)})")


def _json_format(source: Path) -> tuple[str, str]:
    """A JSON file is a box-memory export (its records carry `box_memory_export`) or mem0's."""
    head = guarded(source, str(source), _head, source, 65536)
    if b'"frontmatter"' in head and b'"box_memory_export"' in head:
        return "box-memory", "JSON Lines records from `box-memory export`"
    if b'"memory"' in head:
        return "mem0", "JSON items with a 'memory' field (mem0 export)"
    raise InvalidInput(f"{source}: JSON, but neither a mem0 nor a box-memory export; pass --from")


def _folder_format(source: Path) -> tuple[str, str]:
    """The format of a folder, first match wins: an unpacked export, an auto-memory folder, a
    basic-memory project (half the notes sampled carry a permalink), Claude Code files, markdown."""
    member = source / EXPORT_MEMBER
    if member.is_file() and not member.is_symlink():
        head = guarded(member, str(member), _head, member, 65536)
        if b'"box_memory_export"' in head:
            return "box-memory", f"an unpacked markdown-zip export ({EXPORT_MEMBER})"
    if (source / "MEMORY.md").is_file() and source.name == "memory":
        return "claude-code", "a Claude Code auto-memory folder (MEMORY.md)"
    sampled, with_permalink = _sample_permalinks(source)
    if with_permalink and with_permalink * 2 >= sampled:
        return (
            "basic-memory",
            f"{with_permalink} of {sampled} notes sampled carry basic-memory frontmatter (permalink)",
        )
    instructions, auto = claude_files(source)
    if instructions or auto:
        return (
            "claude-code",
            f"Claude Code memory files ({len(instructions)} CLAUDE.md/rules, {len(auto)} auto-memory)",
        )
    if sampled or any(True for _ in walk(source)):
        return "markdown", "a folder of markdown/text files"
    raise InvalidInput(f"{source}: no markdown, text or JSON memories found")


def _sample_permalinks(source: Path) -> tuple[int, int]:
    """(notes sampled, those whose frontmatter has a basic-memory `permalink`) of the first 50
    `.md` files, each read only as far as its first 2 KiB (an unreadable one counts, but does not
    end the sample)."""
    sampled = with_permalink = 0
    for path in walk(source, (".md",)):
        sampled += 1
        try:
            head = guarded(path, str(path), _head, path, 2048)  # timed in Box Drive (online-only)
        except (OSError, UnreadableFile):
            continue  # a FIFO, a device or a file Box Drive does not deliver; the read step reports it
        if head.startswith(b"---") and re.search(rb"^permalink:", head, re.M):
            with_permalink += 1
        if sampled >= 50:
            break
    return sampled, with_permalink
