"""The `claude-code` format: CLAUDE.md files, rules, their `@path` imports and auto-memory.

`CLAUDE.md` / `CLAUDE.local.md` / `.claude/CLAUDE.md` / `.claude/rules/**/*.md` files (one memory
per `## ` section, or the whole file when it has none; a rule's `paths:` scope goes to the source
entry), the `CLAUDE.md` / `CLAUDE.local.md` of each folder above a project source (as Claude Code
loads them), the files a CLAUDE.md imports with `@path` (up to five hops), and the auto-memory
folder (`~/.claude/projects/<project>/memory/`, sub-folders included: `MEMORY.md` index plus one
file per memory with frontmatter `name`, `description`, `type: user|feedback|project|reference`),
one memory per file. A file read from outside the source (a parent's CLAUDE.md, an import) must be
a regular markdown file, never a link; the reader lists each one (`ClaudeReader.outside`).
Shape: https://code.claude.com/docs/en/memory
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from box_memory.errors import InvalidInput
from box_memory.transfer.sources.common import (
    H1_RE,
    SKIP_DIRS,
    SourceItem,
    abs_path,
    clean_title,
    digest_of,
    mtime_iso,
    read_inside,
    read_text,
    reason,
    split_frontmatter,
    title_from_text,
    wikilinks,
)

_H2_SPLIT_RE = re.compile(r"^##\s+(.+?)\s*#*\s*$", re.M)
CLAUDE_NAMES = ("CLAUDE.md", "CLAUDE.local.md")
# Claude Code auto-memory `type` -> box-memory kind (user/feedback are notes about how to work).
_CLAUDE_TYPE_KIND = {"reference": "reference", "project": "fact", "user": "note", "feedback": "note"}


def claude_files(root: Path) -> tuple[list[Path], list[Path]]:
    """(CLAUDE.md-style instruction files, auto-memory files) under a Claude Code source."""
    instructions: list[Path] = []
    auto: list[Path] = []
    for path in _walk_all(root):
        if path.name in CLAUDE_NAMES or _is_rule(path):
            instructions.append(path)
        elif _auto_memory_dir(path, root) is not None:
            auto.append(path)
    return instructions, auto


def _auto_memory_dir(path: Path, root: Path) -> Path | None:
    """The auto-memory folder holding `path` (`<claude dir>/projects/<project>/memory/`, at any
    depth below it, or the source itself when it is such a folder), else None."""
    for parent in path.parents:
        if parent.name == "memory" and parent.parent.parent.name == "projects":
            return parent
        if parent == root:
            return root if _is_memory_dir(root) else None
    return None


def _is_rule(path: Path) -> bool:
    """A modular rule: `.claude/rules/**/*.md` (project or user)."""
    for parent in path.parents:
        if parent.name == "rules" and parent.parent.name == ".claude":
            return True
        if parent.name == ".claude":
            return False
    return False


def _is_memory_dir(root: Path) -> bool:
    return (root / "MEMORY.md").is_file()


# Folders under a Claude directory that hold no memory: installed plugins (other projects' own
# CLAUDE.md files), todo lists, shell snapshots, telemetry.
_CLAUDE_SKIP = {"plugins", "todos", "shell-snapshots", "statsig", "ide", "debug", "file-history"}
# `@path` imports in a CLAUDE.md (Claude Code's memory docs: relative to the importing file, `~`
# for the home folder, up to 5 hops deep, never inside code spans or fenced blocks).
_CLAUDE_IMPORT_RE = re.compile(r"(?<!\S)@((?:~|\.{1,2})?/?[^\s`@]+)")  # at a line's start too
_FENCE_RE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE_SPAN_RE = re.compile(r"`[^`\n]*`")
MAX_IMPORT_HOPS = 5
MARKDOWN_SUFFIXES = (".md", ".markdown")


def _walk_all(root: Path) -> Iterator[Path]:
    """Like `walk`, but enters `.claude` (where Claude Code keeps its files)."""
    for dirpath, dirnames, filenames in os.walk(root):
        in_claude = Path(dirpath).name == ".claude"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and (d == ".claude" or d[0] != ".")
            and not (in_claude and d in _CLAUDE_SKIP)
        )
        for name in sorted(filenames):
            if name.endswith(".md"):
                yield Path(dirpath) / name


def project_label(path: Path, root: Path) -> str:
    """A short name for where a CLAUDE.md or rule sits: its project folder, or `user` for the
    user's own Claude directory (`~/.claude`)."""
    parent = path.parent
    if parent.name == "rules" and parent.parent.name == ".claude":
        parent = parent.parent
    if parent.name == ".claude":
        if parent == root:
            return "user"
        parent = parent.parent
    return parent.name or root.name or "project"


def claude_import_targets(text: str, base: Path) -> list[Path]:
    """The files a CLAUDE.md names with `@path` (outside code), in order, as absolute paths."""
    plain = _CODE_SPAN_RE.sub("", _FENCE_RE.sub("", text))
    out: list[Path] = []
    for m in _CLAUDE_IMPORT_RE.finditer(plain):
        ref = m.group(1).rstrip(".,;:!?)]}'\"")
        if not ref or ref in (".", ".."):
            continue
        target = Path(ref).expanduser() if ref.startswith("~") else base / ref
        target = abs_path(target)
        if target not in out:
            out.append(target)
    return out


def regular_markdown(path: Path) -> str | None:
    """None when `path` is a regular markdown file that is not a symbolic link, else why not.
    The rule for files a source names outside its own tree."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return reason(e)
    if stat.S_ISLNK(st.st_mode):
        return "a symbolic link outside the source; not followed"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file; not read"
    if not path.name.lower().endswith(MARKDOWN_SUFFIXES):
        return "not a markdown file; not read"
    return None


@dataclass
class ClaudeReader:
    """Reads a Claude Code source: the files under `root`, plus the files Claude Code itself loads
    from outside it (the parent folders' CLAUDE.md files and `@path` imports), each of those only
    when it is a regular markdown file. `outside` lists every file read from outside the tree."""

    root: Path
    named: Path | None = None  # a file named on the command line: read even when it is a link
    outside: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    _done: set[Path] = field(default_factory=set)

    def within(self, path: Path) -> bool:
        """Is `path` under the source folder by name (where it leads is `read_inside`'s check)?"""
        top = abs_path(self.root)
        return abs_path(path) == top or top in abs_path(path).parents

    def read(self, path: Path) -> tuple[bytes, str]:
        if path == self.named:
            return read_text(path)
        if self.within(path):
            return read_inside(path, self.root, walked=False)  # an @import may pass a linked folder
        why = regular_markdown(path)
        if why is not None:
            raise InvalidInput(why)
        raw, text = read_text(path)
        self.outside.append(str(path))
        return raw, text

    def items(self, paths: list[Path], auto: list[Path], *, parents: bool) -> Iterator[SourceItem]:
        if parents:
            for path in self.parent_files():
                yield from self.instruction(path, label=path.parent.name or "root", hops=0)
        for path in paths:
            yield from self.instruction(path, label=project_label(path, self.root), hops=0)
        for path in auto:
            yield from self.auto_memory(path)

    def parent_files(self) -> list[Path]:
        """CLAUDE.md / CLAUDE.local.md in each folder above the source (outermost first), as
        Claude Code loads them from the working folder up to, not including, `/`."""
        top = abs_path(self.root)
        if ".claude" in top.parts or _is_memory_dir(top):
            return []  # the user's Claude folder (its own CLAUDE.md is user memory, not a parent's)
        found: list[Path] = []
        for folder in top.parents:
            if folder.parent == folder:
                break  # the file system's root itself is not read
            for name in CLAUDE_NAMES:
                if os.path.lexists(folder / name):
                    found.append(folder / name)
        return list(reversed(found))

    def instruction(
        self, path: Path, *, label: str, hops: int, by: str | None = None
    ) -> Iterator[SourceItem]:
        """The memories of one CLAUDE.md or rule (one a `## ` section), then those of the files it
        imports with `@path`, `hops` deep so far; no file is read twice. `by`: the importing file."""
        key = abs_path(path)
        if key in self._done:
            return
        self._done.add(key)
        ref = str(path)
        try:
            _, text = self.read(path)
            meta, body = split_frontmatter(text, ref) if _is_rule(path) else ({}, text)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=reason(e))
            return
        sections = split_sections(body)
        if not sections:
            yield SourceItem(ref, error="file has no text")
        prefix = f"{label} {_instruction_name(path, by)}"
        yield from _section_items(path, sections, prefix, _rule_scope(meta), by)
        if hops < MAX_IMPORT_HOPS:
            yield from self.imports(path, body, label=label, hops=hops)

    def imports(self, path: Path, body: str, *, label: str, hops: int) -> Iterator[SourceItem]:
        """The files `path` imports with `@path`, read as instructions one hop deeper. A name that
        is no file is passed over, as Claude Code does; one that is no markdown is reported."""
        ref = str(path)
        for target in claude_import_targets(body, path.parent):
            if not os.path.lexists(target):
                continue  # Claude Code skips a name that is no file too (an @mention, say)
            if not target.name.lower().endswith(MARKDOWN_SUFFIXES):
                self.skipped.append({"ref": str(target), "reason": f"@import in {ref}: not a markdown file"})
                continue
            yield from self.instruction(target, label=label, hops=hops + 1, by=ref)

    def auto_memory(self, path: Path) -> Iterator[SourceItem]:
        ref = str(path)
        try:
            raw, text = read_inside(path, self.root)
            meta, body = split_frontmatter(text, ref)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=reason(e))
            return
        yield _auto_memory_item(path, self.root, raw, meta, body)


def _instruction_name(path: Path, by: str | None) -> str:
    """What a file is called in its memories' titles: `CLAUDE.md`, `rule <name>`, `import <file>`."""
    if by is not None:
        return f"import {path.name}"
    return path.name if path.name in CLAUDE_NAMES else f"rule {path.stem}"


def _rule_scope(meta: dict[str, Any]) -> dict[str, Any]:
    """A conditional rule's scope (`paths:`, the files it is loaded for) as the source entry keeps
    it; empty for any other file."""
    scope: dict[str, Any] = {}
    if meta.get("paths") is not None:
        paths = meta["paths"]
        scope["paths"] = [str(x) for x in paths] if isinstance(paths, list) else [str(paths)]
    return scope


def _section_items(
    path: Path, sections: list[tuple[str, str]], prefix: str, scope: dict[str, Any], by: str | None
) -> Iterator[SourceItem]:
    """One memory a section of an instruction file, titled `<prefix> - <heading>`; a rule's scope
    counts in the digest, so a change of its `paths:` alone makes the section a changed item."""
    ref = str(path)
    when = mtime_iso(path)
    for heading, section in sections:
        data = section.encode("utf-8")
        if scope:
            data += b"\n" + orjson.dumps(scope, option=orjson.OPT_SORT_KEYS)
        yield SourceItem(
            ref + (f"#{heading}" if heading else ""),
            title=clean_title(f"{prefix} - {heading}" if heading else prefix),
            content=section,
            tags=["claude-code", "claude-md"],
            related=wikilinks(section),
            created_at=when,
            updated_at=when,
            digest=digest_of(data),
            extra_source={
                "path": ref,
                **({"section": heading} if heading else {}),
                **scope,
                **({"imported_by": by} if by else {}),
            },
        )


def _auto_memory_item(path: Path, root: Path, raw: bytes, meta: dict[str, Any], body: str) -> SourceItem:
    """One auto-memory file as a memory: the index (`MEMORY.md`) as a reference, any other file
    titled by its `name`, of the kind its `type` says, its `description` leading the text."""
    mtype = str(meta.get("type") or "").strip().lower()
    project, sub = _auto_memory_place(path, root)
    kind: str | None = "reference"
    if path.name == "MEMORY.md" and not sub:
        title = f"{project} memory index"
    else:
        name = str(meta.get("name") or "")
        title = clean_title(name) or title_from_text(body, path.stem.replace("_", " ").replace("-", " "))
        kind = _CLAUDE_TYPE_KIND.get(mtype)
    content = body
    if meta.get("description"):
        content = f"> {' '.join(str(meta['description']).split())}\n\n{body.lstrip()}"
    when = mtime_iso(path)
    return SourceItem(
        str(path),
        title=title,
        content=content,
        kind=kind,
        tags=["claude-code", "auto-memory", *([mtype] if mtype in _CLAUDE_TYPE_KIND else [])],
        related=wikilinks(body),
        created_at=when,
        updated_at=when,
        digest=digest_of(raw),
        extra_source={"project": project, **({"folder": sub} if sub else {})},
    )


def _auto_memory_place(path: Path, root: Path) -> tuple[str, str]:
    """(project, sub-folder) of an auto-memory file: the project its memory folder is named
    after, and where the file sits below that folder ("" at its top)."""
    folder = _auto_memory_dir(path, root) or path.parent
    project = folder.parent.name if folder.name == "memory" else folder.name
    project = project.strip("-") or "claude"  # Claude Code names it after the path, '/' -> '-'
    sub = path.parent.relative_to(folder).as_posix() if path.parent != folder else ""
    return project, sub


def read_claude_code(root: Path) -> Iterator[SourceItem]:
    instructions, auto = claude_files(root)
    yield from ClaudeReader(root).items(instructions, auto, parents=True)


def split_sections(text: str) -> list[tuple[str, str]]:
    """A CLAUDE.md as (heading, text) per `## ` section; text before the first one is kept with
    the file's `#` title as its heading. A file with no `## ` is one section."""
    text = text.strip()
    if not text:
        return []
    marks = list(_H2_SPLIT_RE.finditer(text))
    if not marks:
        m = H1_RE.search(text)
        return [(m.group(1).strip() if m else "", text)]
    out: list[tuple[str, str]] = []
    head = text[: marks[0].start()].strip()
    if head and H1_RE.sub("", head).strip():
        m = H1_RE.search(head)
        out.append((m.group(1).strip() if m else "", head))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.start() : end].strip()
        if body[m.end() - m.start() :].strip():
            out.append((m.group(1).strip(), body))
    return out
