"""`box-memory import`: bring memories in from the tools people already use.

Formats (each reader yields `SourceItem`s; nothing here writes to the source):
- `basic-memory`: a basic-memory project folder. Markdown with YAML frontmatter `title`, `type`,
  `tags` (list or comma-separated), `permalink`; observations (`- [category] text #tag`) and
  relations (`- relation_type [[Target]]`) stay in the body as written, and every `[[Target]]`
  also goes to `related`. The note's folder in the project goes to the source entry (`folder`);
  times follow basic-memory's own rule (frontmatter `created` / `modified`, else the file's
  creation and modification times); `status: draft` makes a draft, and every other key the note
  carries (`priority`, `due`, ...) is kept in the memory's frontmatter (a key box-memory itself
  uses goes to the source entry's `frontmatter` instead). Shape: basic-memory's NOTE-FORMAT.md,
  https://docs.basicmemory.com/concepts/knowledge-format, and its `schema_to_markdown`.
- `claude-code`: `CLAUDE.md` / `CLAUDE.local.md` / `.claude/CLAUDE.md` / `.claude/rules/**/*.md`
  files (one memory per `## ` section, or the whole file when it has none; a rule's `paths:`
  scope goes to the source entry), the `CLAUDE.md` / `CLAUDE.local.md` of each folder above a
  project source (as Claude Code loads them), the files a CLAUDE.md imports with `@path` (up to
  five hops), and the auto-memory folder (`~/.claude/projects/<project>/memory/`, sub-folders
  included: `MEMORY.md` index plus one file per memory with frontmatter `name`, `description`,
  `type: user|feedback|project|reference`), one memory per file. A file read from outside the
  source (a parent's CLAUDE.md, an import) must be a regular markdown file, never a link; the
  report lists each one (`read_outside_source`). Shape: https://code.claude.com/docs/en/memory
- `mem0`: a JSON export as mem0's `Memory.get_all()` returns it (`{"results": [...]}`) or a bare
  list, each item `{id, memory, hash, metadata, created_at, updated_at, user_id, agent_id,
  run_id, actor_id, role, categories}` (mem0ai/mem0 `mem0/memory/main.py`, `MemoryItem`); JSON
  Lines too. Only `agent_id` names the memory's agent; the session keys and `metadata` are kept
  in the source entry.
- `markdown`: a plain folder of `.md` / `.markdown` / `.txt`, one memory per file, the title from
  the first heading or the file name.
- `box-memory` (alias `jsonl`): the JSONL that `box-memory export` writes, or a markdown-zip
  export (the zip, or the folder it was unpacked into: its `export.jsonl`); ids, timestamps,
  status, supersede chains and companions are kept, so export -> import reproduces a workspace.
  A record of a team the target lacks stops the import before anything is written. An export
  file (this one or mem0's) may be up to 1 GiB; any other source file up to 8 MiB.

Every imported memory carries a `sources` entry `{type: <format>, ref: <original path or id>,
digest: sha256:<hex of the source item>, imported_at}`. An item whose ref an earlier import wrote
with the same digest (or, for box-memory, whose id is in the workspace) is skipped, so re-running
an import writes nothing new; an item whose ref was imported with another digest supersedes that
memory (or the current end of its chain; one archived since is left alone). No file is read
through a symbolic link that leads out of the source, and a source inside the workspace is
refused. Each item is prepared as `box-memory write` prepares one (`write.prepare`), and the
memories and companions go in as one batch of the one locked commit (`write.commit`): the same
validation, lock and index updates as `box-memory write`.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from box_memory.errors import BoxMemoryError, InvalidFile, InvalidInput, NotFound
from box_memory.format import frontmatter
from box_memory.format.ids import is_memory_id, validate_title
from box_memory.format.model import KINDS, STATUSES, IndexEntry, now_iso, parse_time
from box_memory.format.safeio import UnreadableFile, guarded, injected_hang, open_regular, read_regular
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace

FORMATS = ("basic-memory", "claude-code", "mem0", "markdown", "box-memory")
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
SKIP_DIRS = {".git", ".hg", ".svn", ".obsidian", ".basic-memory", "node_modules", "__pycache__", ".venv"}
_WIKILINK_RE = re.compile(r"\[\[([^\[\]|#\n]{1,200})(?:[|#][^\]\n]*)?\]\]")
_H1_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
_H2_SPLIT_RE = re.compile(r"^##\s+(.+?)\s*#*\s*$", re.M)
_CLAUDE_NAMES = ("CLAUDE.md", "CLAUDE.local.md")
# Claude Code auto-memory `type` -> box-memory kind (user/feedback are notes about how to work).
_CLAUDE_TYPE_KIND = {"reference": "reference", "project": "fact", "user": "note", "feedback": "note"}


@dataclass
class SourceItem:
    """One memory-to-be, read from the source. `error` set: reported, not written."""

    ref: str
    title: str = ""
    content: str = ""
    kind: str | None = None
    tags: list[str] = field(default_factory=list)
    related: list[str] = field(default_factory=list)
    agent: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    digest: str = ""
    extra_source: dict[str, Any] = field(default_factory=dict)
    # box-memory JSONL only: the memory's own id, status, chain and team.
    keep_id: str | None = None
    status: str | None = None
    supersedes: str | None = None
    team: str | None = None
    confidence: float | None = None
    error: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # the source's own frontmatter keys, kept


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def iso_utc(value: object) -> str | None:
    """Any parseable timestamp as ISO-8601 UTC with `Z` (millisecond precision), else None."""
    t = parse_time(value)
    if t is None:
        return None
    import datetime as dt

    t = t.astimezone(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _mtime_iso(path: Path) -> str | None:
    import datetime as dt

    try:
        return iso_utc(dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC))
    except OSError:
        return None


def title_from_text(text: str, fallback: str) -> str:
    """The first `# heading`, else `fallback` (a file stem, or the text's first words)."""
    m = _H1_RE.search(text)
    title = m.group(1).strip() if m else fallback
    return clean_title(title) or clean_title(fallback) or "Imported memory"


def clean_title(title: str) -> str:
    """A source title made acceptable as a memory title: no path separators or `..`, <= 120 chars."""
    t = " ".join(title.replace("/", " - ").replace("\\", " - ").split())
    while ".." in t:
        t = t.replace("..", ".")
    return t[:120].strip(" -")


def first_words(text: str, n: int = 10) -> str:
    return " ".join(text.split()[:n])


def wikilinks(text: str) -> list[str]:
    out: list[str] = []
    for m in _WIKILINK_RE.finditer(text):
        target = m.group(1).strip()
        try:
            validate_title(target)
        except InvalidInput:
            continue
        link = f"[[{target}]]"
        if link not in out:
            out.append(link)
    return out


def _read_text(path: Path, *, follow: bool = True) -> tuple[bytes, str]:
    """(bytes, UTF-8 text) of one source file; a FIFO, device or oversized file is refused, never
    waited on (the same bounded read as every workspace file). `follow=False`: a symbolic link
    is refused too, at the open itself."""
    try:
        raw = read_regular(path, "source", follow=follow)
    except UnreadableFile as e:
        raise InvalidInput(str(e)) from None
    try:
        return raw, raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("not UTF-8 text") from None


def _outside(path: Path, root: Path) -> str | None:
    """Where `path` really leads when that is outside `root` (a symbolic link out of the source
    tree, to a file or through a linked folder), else None. A link that stays inside is fine."""
    real = Path(os.path.realpath(path))
    top = Path(os.path.realpath(root))
    if real == top or top in real.parents:
        return None
    return str(real)


def _abs(path: Path) -> Path:
    """`path` made absolute with `..` folded, links left alone."""
    return Path(os.path.normpath(path.absolute()))


def _read_inside(path: Path, root: Path, *, walked: bool = True) -> tuple[bytes, str]:
    """`_read_text` of a file found under `root`, never through a link that leaves it.

    `walked`: the path came from walking `root` (os.walk enters no linked folder), so only the
    file itself can be a link: a plain file is opened refusing links (no race with a swap), and
    only a link pays for resolving where it leads."""
    if walked and not path.is_symlink():
        return _read_text(path, follow=False)
    target = _outside(path, root)
    if target is not None:
        raise InvalidInput(f"a symbolic link out of the source (to {target}); not followed")
    return _read_text(path)


def _walk(root: Path, suffixes: tuple[str, ...] = TEXT_SUFFIXES) -> Iterator[Path]:
    """Text files under root in a stable order, skipping hidden/tool folders and symlinked dirs."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.lower().endswith(suffixes) and not name.startswith("."):
                yield Path(dirpath) / name


def _split_frontmatter(text: str, where: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    try:
        return frontmatter.parse(text, where)
    except InvalidFile as e:
        raise InvalidInput(f"invalid frontmatter ({e})") from None


def _tag_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [t.strip().lstrip("#") for t in value.split(",") if t.strip().lstrip("#")]
    if isinstance(value, list):
        return [str(t).strip().lstrip("#") for t in value if str(t).strip().lstrip("#")]
    return [str(value)]


# --- readers ----------------------------------------------------------------------------------


def _markdown_item(path: Path, raw: bytes, text: str) -> SourceItem:
    """A plain markdown/text file as one item: title from its heading or its name."""
    title = title_from_text(text, path.stem.replace("_", " ").replace("-", " "))
    return SourceItem(
        str(path),
        title=title,
        content=drop_title_heading(text, title),
        related=wikilinks(text),
        created_at=_mtime_iso(path),
        updated_at=_mtime_iso(path),
        digest=digest_of(raw),
    )


def read_markdown_folder(root: Path) -> Iterator[SourceItem]:
    for path in _walk(root):
        ref = str(path)
        try:
            raw, text = _read_inside(path, root)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=_reason(e))
            continue
        yield _markdown_item(path, raw, text)


# basic-memory's own frontmatter keys (NOTE-FORMAT.md); every other key is the user's and is kept.
_BASIC_MEMORY_KEYS = {"title", "type", "tags", "permalink", "created", "modified"}


def read_basic_memory(root: Path) -> Iterator[SourceItem]:
    for path in _walk(root, (".md",)):
        ref = str(path)
        try:
            raw, text = _read_inside(path, root)
            meta, body = _split_frontmatter(text, ref)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=_reason(e))
            continue
        note_type = str(meta.get("type") or "note").strip().lower()
        kind = note_type if note_type in KINDS and note_type != "companion" else "note"
        tags = _tag_list(meta.get("tags"))
        if note_type and note_type != kind:
            tags.append(note_type)  # a basic-memory entity type (person, project...) kept as a tag
        extra: dict[str, Any] = {}
        if meta.get("permalink"):
            extra["permalink"] = str(meta["permalink"])
        folder = path.parent.relative_to(root).as_posix()
        if folder != ".":
            extra["folder"] = folder  # the note's folder in the project, as basic-memory shows it
        title = clean_title(str(meta.get("title") or "")) or title_from_text(body, path.stem)
        # basic-memory's own rule (entity_parser.py): frontmatter `created` / `modified`, else the
        # file's times. Its creation time is the birth time where the system keeps one.
        updated = iso_utc(meta.get("modified") or meta.get("updated_at")) or _mtime_iso(path)
        created = iso_utc(meta.get("created") or meta.get("created_at") or meta.get("date"))
        created = created or _ctime_iso(path, updated)
        status: str | None = None
        own: dict[str, Any] = {}
        for key, value in meta.items():
            if key in _BASIC_MEMORY_KEYS or value is None:
                continue
            if key == "status" and str(value) in ("active", "draft"):
                status = str(value)
            elif key in _KNOWN_KEYS:
                extra.setdefault("frontmatter", {})[key] = value  # a box-memory key: kept aside
            else:
                own[key] = value  # priority, due...: the memory's own frontmatter, as written
        yield SourceItem(
            ref,
            title=title,
            content=drop_title_heading(body, title),
            kind=kind,
            tags=tags,
            related=wikilinks(body),
            created_at=created or updated,
            updated_at=updated,
            digest=digest_of(raw),
            extra_source=extra,
            status=status,
            meta=own,
        )


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


def drop_title_heading(body: str, title: str) -> str:
    """The body without its `# <title>` line when text comes before it: the memory's own heading
    (written first) takes its place, instead of the title appearing twice."""
    if body.lstrip().startswith("# "):
        return body  # the heading leads already: kept as the memory's heading
    for m in _H1_RE.finditer(body):
        if clean_title(m.group(1)) == title:
            end = m.end() + (1 if body[m.end() : m.end() + 1] == "\n" else 0)
            if body[end : end + 1] == "\n":
                end += 1
            return body[: m.start()] + body[end:]
    return body


def _claude_files(root: Path) -> tuple[list[Path], list[Path]]:
    """(CLAUDE.md-style instruction files, auto-memory files) under a Claude Code source."""
    instructions: list[Path] = []
    auto: list[Path] = []
    for path in _walk_all(root):
        if path.name in _CLAUDE_NAMES or _is_rule(path):
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
    """Like `_walk`, but enters `.claude` (where Claude Code keeps its files)."""
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


def _project_label(path: Path, root: Path) -> str:
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
        target = _abs(target)
        if target not in out:
            out.append(target)
    return out


def regular_markdown(path: Path) -> str | None:
    """None when `path` is a regular markdown file that is not a symbolic link, else why not.
    The rule for files a source names outside its own tree."""
    try:
        st = os.lstat(path)
    except OSError as e:
        return _reason(e)
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
        """Is `path` under the source folder by name (where it leads is `_read_inside`'s check)?"""
        top = _abs(self.root)
        return _abs(path) == top or top in _abs(path).parents

    def read(self, path: Path) -> tuple[bytes, str]:
        if path == self.named:
            return _read_text(path)
        if self.within(path):
            return _read_inside(path, self.root, walked=False)  # an @import may pass a linked folder
        why = regular_markdown(path)
        if why is not None:
            raise InvalidInput(why)
        raw, text = _read_text(path)
        self.outside.append(str(path))
        return raw, text

    def items(self, paths: list[Path], auto: list[Path], *, parents: bool) -> Iterator[SourceItem]:
        if parents:
            for path in self.parent_files():
                yield from self.instruction(path, label=path.parent.name or "root", hops=0)
        for path in paths:
            yield from self.instruction(path, label=_project_label(path, self.root), hops=0)
        for path in auto:
            yield from self.auto_memory(path)

    def parent_files(self) -> list[Path]:
        """CLAUDE.md / CLAUDE.local.md in each folder above the source (outermost first), as
        Claude Code loads them from the working folder up to, not including, `/`."""
        top = _abs(self.root)
        if ".claude" in top.parts or _is_memory_dir(top):
            return []  # the user's Claude folder (its own CLAUDE.md is user memory, not a parent's)
        found: list[Path] = []
        for folder in top.parents:
            if folder.parent == folder:
                break  # the file system's root itself is not read
            for name in _CLAUDE_NAMES:
                if os.path.lexists(folder / name):
                    found.append(folder / name)
        return list(reversed(found))

    def instruction(
        self, path: Path, *, label: str, hops: int, by: str | None = None
    ) -> Iterator[SourceItem]:
        key = _abs(path)
        if key in self._done:
            return
        self._done.add(key)
        ref = str(path)
        try:
            _, text = self.read(path)
            meta, body = _split_frontmatter(text, ref) if _is_rule(path) else ({}, text)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=_reason(e))
            return
        when = _mtime_iso(path)
        sections = split_sections(body)
        if not sections:
            yield SourceItem(ref, error="file has no text")
        if by is not None:
            name = f"import {path.name}"
        else:
            name = path.name if path.name in _CLAUDE_NAMES else f"rule {path.stem}"
        scope: dict[str, Any] = {}
        if meta.get("paths") is not None:  # a conditional rule: loaded only for these files
            paths = meta["paths"]
            scope["paths"] = [str(x) for x in paths] if isinstance(paths, list) else [str(paths)]
        for heading, section in sections:
            title = clean_title(f"{label} {name} - {heading}" if heading else f"{label} {name}")
            data = section.encode("utf-8")
            if scope:
                data += b"\n" + orjson.dumps(scope, option=orjson.OPT_SORT_KEYS)
            yield SourceItem(
                ref + (f"#{heading}" if heading else ""),
                title=title,
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
        if hops >= MAX_IMPORT_HOPS:
            return
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
            raw, text = _read_inside(path, self.root)
            meta, body = _split_frontmatter(text, ref)
        except (OSError, InvalidInput) as e:
            yield SourceItem(ref, error=_reason(e))
            return
        mtype = str(meta.get("type") or "").strip().lower()
        folder = _auto_memory_dir(path, self.root) or path.parent
        project = folder.parent.name if folder.name == "memory" else folder.name
        project = project.strip("-") or "claude"  # Claude Code names it after the path, '/' -> '-'
        sub = path.parent.relative_to(folder).as_posix() if path.parent != folder else ""

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
        tags = ["claude-code", "auto-memory", *([mtype] if mtype in _CLAUDE_TYPE_KIND else [])]
        when = _mtime_iso(path)
        yield SourceItem(
            ref,
            title=title,
            content=content,
            kind=kind,
            tags=tags,
            related=wikilinks(body),
            created_at=when,
            updated_at=when,
            digest=digest_of(raw),
            extra_source={"project": project, **({"folder": sub} if sub else {})},
        )


def read_claude_code(root: Path) -> Iterator[SourceItem]:
    instructions, auto = _claude_files(root)
    yield from ClaudeReader(root).items(instructions, auto, parents=True)


def split_sections(text: str) -> list[tuple[str, str]]:
    """A CLAUDE.md as (heading, text) per `## ` section; text before the first one is kept with
    the file's `#` title as its heading. A file with no `## ` is one section."""
    text = text.strip()
    if not text:
        return []
    marks = list(_H2_SPLIT_RE.finditer(text))
    if not marks:
        m = _H1_RE.search(text)
        return [(m.group(1).strip() if m else "", text)]
    out: list[tuple[str, str]] = []
    head = text[: marks[0].start()].strip()
    if head and _H1_RE.sub("", head).strip():
        m = _H1_RE.search(head)
        out.append((m.group(1).strip() if m else "", head))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.start() : end].strip()
        if body[m.end() - m.start() :].strip():
            out.append((m.group(1).strip(), body))
    return out


EXPORT_MEMBER = "export.jsonl"  # the records inside a `box-memory export --format markdown-zip`
# An export (box-memory's, or mem0's get_all) holds a whole store: far past the 8 MiB one note or
# CLAUDE.md may have.
EXPORT_CAP = 1024 * 1024 * 1024


def _export_text(path: Path) -> str:
    """The JSON Lines of a box-memory export: the file itself, or `export.jsonl` inside a
    markdown-zip export (the zip file, or the folder it was unpacked into)."""
    if path.is_dir():
        member = path / EXPORT_MEMBER
        if _outside(member, path) is not None:
            raise InvalidInput(f"{EXPORT_MEMBER} is a symbolic link out of the source; not followed")
        path = member
    raw = guarded(path, str(path), _read_text_bytes, path, EXPORT_CAP)  # timed in Box Drive
    if path.suffix.lower() != ".zip":
        try:
            return raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidInput("not UTF-8 text") from None
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            info = zf.getinfo(EXPORT_MEMBER)
            if info.file_size > EXPORT_CAP:
                raise InvalidInput(f"{EXPORT_MEMBER} in the zip is larger than the 1 GiB import limit")
            data = zf.read(info)
    except KeyError:
        raise InvalidInput(f"not a box-memory export zip (no {EXPORT_MEMBER} in it)") from None
    except zipfile.BadZipFile as e:
        raise InvalidInput(f"not a readable zip ({e})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{EXPORT_MEMBER} in the zip is not UTF-8 text") from None


def _read_text_bytes(path: Path, cap: int) -> bytes:
    """A regular file of at most `cap` bytes (never a FIFO or device), whole."""
    try:
        fd, size = open_regular(path)
    except UnreadableFile as e:
        raise InvalidInput(str(e)) from None
    with os.fdopen(fd, "rb") as fh:
        if size > cap:
            raise InvalidInput(f"larger than the {cap // (1024 * 1024)} MiB import limit")
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise InvalidInput(f"larger than the {cap // (1024 * 1024)} MiB import limit")
    return data


def _json_items(path: Path, text: str | None = None) -> tuple[list[Any], list[SourceItem]]:
    """Items of a JSON or JSON Lines file; undecodable lines come back as errors."""
    if text is None:
        _, text = _read_text(path)
    stripped = text.lstrip()
    errors: list[SourceItem] = []
    if stripped.startswith(("[", "{")):
        try:
            data = orjson.loads(text)
        except orjson.JSONDecodeError as e:
            if not stripped.startswith("{") or "\n" not in stripped.strip():
                raise InvalidInput(f"invalid JSON ({e.args[0]})") from None
            data = None
        if isinstance(data, list):
            return data, errors
        if isinstance(data, dict):
            for key in ("results", "memories", "data", "items"):
                if isinstance(data.get(key), list):
                    return data[key], errors
            return [data], errors
    items: list[Any] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(orjson.loads(line))
        except orjson.JSONDecodeError as e:
            errors.append(SourceItem(f"{path}:{n}", error=f"invalid JSON on line {n} ({e.args[0]})"))
    if not items and not errors:
        raise InvalidInput("no JSON items found")
    return items, errors


def read_mem0(path: Path) -> Iterator[SourceItem]:
    try:
        items, errors = _json_items(path, _export_text(path))  # a whole store: the export cap
    except (OSError, InvalidInput) as e:
        yield SourceItem(str(path), error=_reason(e))
        return
    yield from errors
    for n, item in enumerate(items, start=1):
        ref = f"{path}#{n}"
        if not isinstance(item, dict):
            yield SourceItem(ref, error="item is not a JSON object")
            continue
        mem_id = str(item.get("id") or "")
        if mem_id:
            ref = f"mem0:{mem_id}"
        text = item.get("memory")
        if text is None:
            text = item.get("text") or item.get("data")
        if not isinstance(text, str) or not text.strip():
            yield SourceItem(ref, error="item has no text ('memory' is missing or empty)")
            continue
        meta: dict[str, Any] = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
        tags = [
            *_tag_list(item.get("categories")),
            *_tag_list(meta.get("tags")),
            *_tag_list(meta.get("category")),
        ]
        # Only mem0's agent_id names an agent; a user's own memory (user_id only) has none.
        agent = item.get("agent_id")
        extra: dict[str, Any] = {}
        for key in ("user_id", "agent_id", "run_id", "actor_id", "role", "hash"):
            if item.get(key):
                extra[key] = str(item[key])
        if meta:
            extra["metadata"] = meta  # the caller's own metadata, kept whole (JSON values)
        created = iso_utc(item.get("created_at"))
        yield SourceItem(
            ref,
            title=clean_title(first_words(text.strip(), 10)) or "mem0 memory",
            content=text.strip(),
            kind=None,
            tags=tags,
            agent=str(agent) if agent else None,
            created_at=created,
            updated_at=iso_utc(item.get("updated_at")) or created,
            digest=digest_of(orjson.dumps(item, option=orjson.OPT_SORT_KEYS)),
            extra_source=extra,
        )


def read_box_memory(path: Path) -> Iterator[SourceItem]:
    try:
        items, errors = _json_items(path, _export_text(path))
    except (OSError, InvalidInput) as e:
        yield SourceItem(str(path), error=_reason(e))
        return
    yield from errors
    for n, rec in enumerate(items, start=1):
        ref = f"{path}#{n}"
        if not isinstance(rec, dict) or not isinstance(rec.get("frontmatter"), dict):
            yield SourceItem(ref, error="not a box-memory export record (no 'frontmatter')")
            continue
        fm = rec["frontmatter"]
        mem_id = str(fm.get("id") or "")
        if not is_memory_id(mem_id):
            yield SourceItem(ref, error=f"invalid memory id {mem_id!r}")
            continue
        body = rec.get("body")
        if not isinstance(body, str) or not body.strip():
            yield SourceItem(mem_id, error="record has no body")
            continue
        if fm.get("kind") == "companion":
            # Written back as a companion (`ImportedCompanion`), next to where its binary belongs.
            yield SourceItem(
                mem_id,
                title=str(fm.get("title") or ""),
                content=body,
                kind="companion",
                digest=digest_of(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)),
                keep_id=mem_id,
                status=str(fm.get("status") or "active"),
                team=_folder_team(str(rec.get("folder") or "")) or _scope_team(fm),
                extra_source={"_frontmatter": fm},
            )
            continue
        status = str(fm.get("status") or "active")
        sup = fm.get("supersedes")
        yield SourceItem(
            mem_id,
            title=str(fm.get("title") or ""),
            content=body,
            kind=str(fm["kind"]) if fm.get("kind") else None,
            tags=[str(t) for t in fm.get("tags") or []],
            related=[str(r) for r in fm.get("related") or []],
            agent=str(fm["agent"]) if fm.get("agent") else None,
            created_at=str(fm.get("created_at") or "") or None,
            updated_at=str(fm.get("updated_at") or "") or None,
            digest=digest_of(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)),
            keep_id=mem_id,
            status=status if status in STATUSES else None,
            supersedes=str(sup[0]) if isinstance(sup, list) and sup else None,
            team=_folder_team(str(rec.get("folder") or "")),
            confidence=fm.get("confidence") if isinstance(fm.get("confidence"), (int, float)) else None,
            extra_source={"_frontmatter": fm},
        )


READERS: dict[str, Callable[[Path], Iterator[SourceItem]]] = {
    "basic-memory": read_basic_memory,
    "claude-code": read_claude_code,
    "mem0": read_mem0,
    "markdown": read_markdown_folder,
    "box-memory": read_box_memory,
}


def _reason(e: BaseException) -> str:
    if isinstance(e, PermissionError):
        return "permission denied (unreadable file)"
    if isinstance(e, OSError):
        return f"unreadable ({e.strerror or e})"
    return str(e)


# --- detection --------------------------------------------------------------------------------


def _head(path: Path, n: int) -> bytes:
    """The first n bytes of a regular file (never a FIFO or device)."""
    injected_hang(path)  # test hook BOX_MEMORY_HANG_READ
    fd, _ = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read(n)


def detect_format(source: Path) -> tuple[str, str]:
    """(format, why) for a source path."""
    if source.is_file():
        if source.name in _CLAUDE_NAMES:
            return "claude-code", f"{source.name} is a Claude Code memory file"
        if source.suffix.lower() in (".json", ".jsonl", ".ndjson"):
            head = guarded(source, str(source), _head, source, 65536)
            if b'"frontmatter"' in head and b'"box_memory_export"' in head:
                return "box-memory", "JSON Lines records from `box-memory export`"
            if b'"memory"' in head:
                return "mem0", "JSON items with a 'memory' field (mem0 export)"
            raise InvalidInput(f"{source}: JSON, but neither a mem0 nor a box-memory export; pass --from")
        if source.suffix.lower() in TEXT_SUFFIXES:
            return "markdown", "a single markdown/text file"
        if source.suffix.lower() == ".zip":
            return "box-memory", "a zip from `box-memory export --format markdown-zip`"
        raise InvalidInput(f"{source}: unknown source format; pass --from ({'|'.join(FORMATS)})")
    if not source.is_dir():
        raise NotFound(f"import source {source} not found")
    member = source / EXPORT_MEMBER
    if member.is_file() and not member.is_symlink():
        head = guarded(member, str(member), _head, member, 65536)
        if b'"box_memory_export"' in head:
            return "box-memory", f"an unpacked markdown-zip export ({EXPORT_MEMBER})"
    if (source / "MEMORY.md").is_file() and source.name == "memory":
        return "claude-code", "a Claude Code auto-memory folder (MEMORY.md)"
    sampled = with_permalink = 0
    for path in _walk(source, (".md",)):
        sampled += 1
        try:
            head = guarded(path, str(path), _head, path, 2048)  # timed in Box Drive (online-only)
        except (OSError, UnreadableFile):
            continue  # a FIFO, a device or a file Box Drive does not deliver; the read step reports it
        if head.startswith(b"---") and re.search(rb"^permalink:", head, re.M):
            with_permalink += 1
        if sampled >= 50:
            break
    if with_permalink and with_permalink * 2 >= sampled:
        return (
            "basic-memory",
            f"{with_permalink} of {sampled} notes sampled carry basic-memory frontmatter (permalink)",
        )
    instructions, auto = _claude_files(source)
    if instructions or auto:
        return (
            "claude-code",
            f"Claude Code memory files ({len(instructions)} CLAUDE.md/rules, {len(auto)} auto-memory)",
        )
    if sampled or any(True for _ in _walk(source)):
        return "markdown", "a folder of markdown/text files"
    raise InvalidInput(f"{source}: no markdown, text or JSON memories found")


# --- plan and run -----------------------------------------------------------------------------


@dataclass
class Planned:
    item: SourceItem
    prepared: Any  # memories.Prepared


@dataclass
class ImportReport:
    source: str
    format: str
    detected: str | None
    dry_run: bool
    items: int = 0
    written: list[dict[str, Any]] = field(default_factory=list)
    would_write: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)  # files read from outside the source tree

    def as_dict(self) -> dict[str, Any]:
        rows = self.would_write if self.dry_run else self.written
        by_kind: dict[str, int] = {}
        for r in rows:
            by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
        return {
            "source": self.source,
            "format": self.format,
            "detected": self.detected,
            "dry_run": self.dry_run,
            "items": self.items,
            "imported": 0 if self.dry_run else len(self.written),
            "updated": sum(1 for r in rows if r.get("supersedes")),
            "would_import": len(self.would_write) if self.dry_run else None,
            "already_imported": len(self.skipped),
            "failed": len(self.errors),
            "by_kind": dict(sorted(by_kind.items())),
            "first_titles": [r["title"] for r in rows[:10]],
            "memories": rows,
            "skipped": self.skipped,
            "errors": self.errors,
            "read_outside_source": self.outside,
        }


@dataclass
class Known:
    """What the workspace already holds of earlier imports."""

    ids: set[str] = field(default_factory=set)  # every memory id in the workspace
    digests: set[str] = field(default_factory=set)  # source digests in the target folders
    # (source type, ref) -> (id of the memory that last imported it, that import's digest)
    by_ref: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> index entry

    def current(self, mem_id: str) -> dict[str, Any] | None:
        """The live end of the supersede chain through `mem_id` (a later edit made in the
        workspace included), or None when the chain ends archived or held."""
        seen: set[str] = set()
        entry = self.entries.get(mem_id)
        while entry is not None and entry.get("superseded_by") and mem_id not in seen:
            seen.add(mem_id)
            mem_id = str(entry["superseded_by"])
            entry = self.entries.get(mem_id)
        if entry is None or entry.get("status") not in ("active", "draft"):
            return None
        return entry


def existing_keys(ws: Workspace, folders: list[str]) -> Known:
    """Ids in the workspace, and the sources of the memories in `folders`, for idempotency and
    for superseding what an earlier import wrote when its source item changed."""
    from box_memory.workspace.index import load_all

    known = Known()
    for idx in load_all(ws):
        for e in idx.entries:
            known.ids.add(str(e.get("id")))
            known.entries[str(e.get("id"))] = e
        if idx.folder not in folders:
            continue
        for e in idx.entries:
            path = IndexEntry(idx.folder, e).path
            try:
                raw = ws.store.read_bytes(path)
            except BoxMemoryError:
                continue
            if b"digest:" not in raw:
                continue
            try:
                meta, _ = frontmatter.parse(raw.decode("utf-8", "replace"), path)
            except BoxMemoryError:
                continue
            mem_id = str(e.get("id"))
            for src in meta.get("sources") or []:
                if not isinstance(src, dict) or not src.get("digest"):
                    continue
                known.digests.add(str(src["digest"]))
                if src.get("type") and src.get("ref"):
                    key = (str(src["type"]), str(src["ref"]))
                    prev = known.by_ref.get(key)
                    if prev is None or mem_id > prev[0]:  # ids are ULIDs: the newest import wins
                        known.by_ref[key] = (mem_id, str(src["digest"]))
    return known


def _request(
    item: SourceItem, fmt: str, team: str | None, imported_at: str, replaced_here: bool = False
) -> Any:
    from box_memory.write.prepare import WriteRequest

    source: dict[str, Any] = {"type": fmt, "ref": item.ref, "digest": item.digest, "imported_at": imported_at}
    extra: dict[str, Any] = {}
    sources: list[Any] = [source]
    if item.keep_id:
        # A box-memory record: it keeps its own id, timestamps, status and sources.
        fm = dict(item.extra_source.get("_frontmatter") or {})
        extra["id"] = item.keep_id
        orig = [s for s in fm.get("sources") or [] if isinstance(s, dict)]
        sources = orig or []
        for key in ("links", "expires_at"):
            if fm.get(key) is not None:
                extra[key] = fm[key]
        for key, val in fm.items():  # unknown keys another writer added are kept
            if key not in _KNOWN_KEYS and val is not None:
                extra[key] = val
        if item.status in ("archived", "held") or (item.status == "superseded" and not replaced_here):
            extra["status"] = item.status  # a superseded one whose successor is not imported stays so
            if fm.get("superseded_by"):
                extra["superseded_by"] = fm["superseded_by"]
    else:
        source.update({k: v for k, v in item.extra_source.items() if not k.startswith("_")})
        extra.update({k: v for k, v in item.meta.items() if k not in _KNOWN_KEYS})
    if item.created_at:
        extra["created_at"] = item.created_at
        extra["updated_at"] = item.updated_at or item.created_at
        if replaced_here:  # its successor's write stamps it again, exactly as the first time
            extra["updated_at"] = item.created_at
    if sources:
        extra["sources"] = sources
    return WriteRequest(
        content=item.content,
        title=item.title,
        kind=item.kind,
        tags=item.tags,
        team=team,
        status=item.status if item.status in ("active", "draft") else "active",
        supersedes=item.supersedes,
        related=item.related,
        confidence=item.confidence,
        agent=item.agent,
        new_slug=True,  # distinct source items may share a title; the digest guards against repeats
        extra_meta=extra,
    )


_KNOWN_KEYS = {
    "id", "slug", "title", "kind", "status", "created_at", "updated_at", "team", "agent", "confidence",
    "tags", "related", "links", "sources", "supersedes", "superseded_by", "expires_at", "companion_for",
}  # fmt: skip


FORMAT_ALIASES = {"jsonl": "box-memory"}  # `export --format jsonl` writes the box-memory format


def check_source(ws: Workspace, source: Path) -> None:
    """Refuse a source that is not a file or folder, or that lies inside the workspace itself."""
    try:
        st = source.stat()
    except FileNotFoundError:
        raise NotFound(f"import source {source} not found") from None
    except OSError as e:
        raise InvalidInput(f"import source {source}: {_reason(e)}") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        from box_memory.format.safeio import describe_mode

        raise InvalidInput(f"import source {source} is {describe_mode(st.st_mode)}, not a file or folder")
    root = _workspace_root(ws)
    if root is not None and _outside(source, root) is None:
        raise InvalidInput(
            f"import source {source} is inside the workspace {root}; "
            "its memories are there already (import reads from another tool's folder)"
        )


def _workspace_root(ws: Workspace) -> Path | None:
    """The workspace's folder on this machine (a local or Box Drive workspace), else None."""
    root = ws.store.local_root
    return Path(root) if root is not None else None


def _read_items(ws: Workspace, source: Path, fmt: str, report: ImportReport) -> list[SourceItem]:
    if source.is_file() and fmt == "markdown":
        items = list(_single_markdown(source))
    elif fmt == "claude-code":
        reader = ClaudeReader(source.parent, source) if source.is_file() else ClaudeReader(source)
        if source.is_file():
            label = _project_label(source, reader.root)
            items = list(reader.instruction(source, label=label, hops=0))
        else:
            instructions, auto = _claude_files(source)
            items = list(reader.items(instructions, auto, parents=True))
        report.outside = reader.outside
        report.warnings += [f"{x['ref']}: {x['reason']}" for x in reader.skipped]
    else:
        items = list(READERS[fmt](source))
    root = _workspace_root(ws)
    if root is None or _outside(root, source) is not None:
        return items
    # The workspace sits inside the source: its own files are not read back as new memories.
    kept = [it for it in items if _outside(Path(it.ref.split("#", 1)[0]), root) is not None]
    if len(kept) < len(items):
        skipped = len(items) - len(kept)
        report.warnings.append(f"{skipped} file(s) of the workspace itself ({root}) not imported")
    return kept


def run_import(
    ws: Workspace,
    source: Path,
    *,
    fmt: str | None = None,
    team: str | None = None,
    dry_run: bool = False,
) -> ImportReport:
    """Read SOURCE, skip what is already imported, validate each item, write the rest in one batch.
    An item whose source ref an earlier import wrote, but whose bytes changed since, supersedes
    that memory (or the current end of its chain)."""
    from box_memory.write.checks import infer_kind
    from box_memory.write.prepare import prepare_write

    source = source.expanduser().absolute()
    fmt = FORMAT_ALIASES.get(fmt, fmt) if fmt is not None else None
    if fmt is not None and fmt not in FORMATS:
        raise InvalidInput(f"unknown import format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    check_source(ws, source)
    detected: str | None = None
    if fmt is None:
        fmt, why = detect_format(source)
        detected = f"{fmt} ({why})"
    if fmt == "box-memory" and source.is_dir() and not (source / EXPORT_MEMBER).is_file():
        raise InvalidInput(f"a box-memory source is an export file or zip, or a folder with {EXPORT_MEMBER}")
    if fmt == "mem0" and not source.is_file():
        raise InvalidInput(f"a {fmt} source is a JSON/JSONL file, not a folder: {source}")
    if fmt == "basic-memory" and not source.is_dir():
        raise InvalidInput(f"a {fmt} source is a folder: {source}")
    if team is not None:
        ws.require_team(team)
    report = ImportReport(str(source), fmt, detected, dry_run)
    items = _read_items(ws, source, fmt, report)
    report.items = len(items)
    if team is None:
        check_teams(ws, items)

    folders = sorted({ws.memories_folder(ws.require_team(team or _team_for(ws, it))) for it in items
                      if it.error is None})  # fmt: skip
    known = existing_keys(ws, folders)
    ids, digests = known.ids, known.digests
    imported_at = now_iso()
    planned: list[Planned] = []
    seen_ids: set[str] = set()
    seen_refs: set[str] = set()
    # ids that a later record of this import supersedes: written live, then superseded in order.
    successors = {it.supersedes for it in items if it.error is None and it.supersedes}
    companions = [it for it in items if it.error is None and it.kind == "companion" and it.keep_id]
    companion_items = {id(it) for it in companions}
    for it in items:
        if id(it) in companion_items:
            continue
        if it.error is not None:
            report.errors.append({"ref": it.ref, "reason": it.error})
            continue
        replaces: str | None = None
        if it.keep_id:
            if it.keep_id in ids:
                report.skipped.append({"ref": it.ref, "reason": "already imported"})
                continue
        else:
            last = known.by_ref.get((fmt, it.ref))
            if (last is not None and last[1] == it.digest) or (last is None and it.digest in digests):
                report.skipped.append({"ref": it.ref, "reason": "already imported"})
                continue
            if last is not None:
                current = known.current(last[0])
                if current is None:
                    report.skipped.append({"ref": it.ref, "reason": f"changed, but {last[0]} was archived "
                                           "in the workspace; not imported again"})  # fmt: skip
                    continue
                replaces = str(current.get("id"))
            if it.ref in seen_refs:
                report.errors.append({"ref": it.ref, "reason": "duplicate item in the source"})
                continue
            seen_refs.add(it.ref)
        if it.keep_id and it.keep_id in seen_ids:
            report.errors.append({"ref": it.ref, "reason": "duplicate id in the source"})
            continue
        if it.supersedes and it.supersedes not in ids and it.supersedes not in seen_ids:
            report.warnings.append(f"{it.ref}: supersedes {it.supersedes}, which is not in the workspace or "
                                   "the import; written without the link")  # fmt: skip
            it.supersedes = None
        if replaces is not None:
            it.supersedes = replaces
        try:
            req = _request(it, fmt, team or _team_for(ws, it), imported_at, it.keep_id in successors)
            p = prepare_write(ws, req)
        except BoxMemoryError as e:
            report.errors.append({"ref": it.ref, "reason": str(e)})
            continue
        planned.append(Planned(it, p))
        digests.add(it.digest)
        if it.keep_id:
            seen_ids.add(it.keep_id)

    placed = _place_companions(ws, companions, known, team, report)
    if dry_run:
        report.would_write = [
            {"ref": c.item.ref, "title": c.item.title, "kind": "companion", "folder": c.folder + "/"}
            for c in placed
        ]
        report.would_write += [
            {"ref": pl.item.ref, "title": pl.prepared.title or pl.item.title,
             "kind": pl.prepared.kind or infer_kind(pl.prepared.content), "folder": pl.prepared.folder + "/",
             **({"supersedes": pl.item.supersedes} if pl.item.supersedes and not pl.item.keep_id else {})}
            for pl in planned
        ]  # fmt: skip
        return report

    _commit_import(ws, planned, placed, report)
    return report


def _commit_import(
    ws: Workspace, planned: list[Planned], placed: list[PlacedCompanion], report: ImportReport
) -> None:
    """The planned memories, then the exported companions, as one batch of the one locked commit
    (`write.commit`): an item's error skips only that item and is reported with its source ref."""
    from box_memory.progress import task
    from box_memory.write.commit import commit
    from box_memory.write.memories import MemoryPlacement

    if not planned and not placed:
        return
    placements: list[Any] = [MemoryPlacement(pl.prepared) for pl in planned]
    placements += [ImportedCompanion(c) for c in placed]
    bar = task("Importing", len(planned), "memories")  # drawn on a terminal only (box_memory.progress)

    def on_item(i: int, res: dict[str, Any] | None, err: BoxMemoryError | None) -> None:
        item = planned[i].item if i < len(planned) else placed[i - len(planned)].item
        if err is not None:
            report.errors.append({"ref": item.ref, "reason": str(err)})
        elif res is not None:
            row = {"ref": item.ref, "id": res["id"], "title": res["title"], "kind": res["kind"],
                   "file": res["file"]}  # fmt: skip
            if item.supersedes and not item.keep_id:
                row["supersedes"] = item.supersedes  # the source item changed since it was imported
            report.written.append(row)
        if i < len(planned):
            t.advance()

    with bar as t:
        report.warnings += commit(
            ws, placements, writer="box-memory import", skill="import", on_item=on_item
        )[1]


@dataclass
class PlacedCompanion:
    item: SourceItem
    binary: str  # workspace path of the binary it describes
    folder: str
    filename: str


def _scope_team(fm: dict[str, Any]) -> str | None:
    cf = fm.get("companion_for")
    path = str(cf.get("local_path") or "") if isinstance(cf, dict) else ""
    return _folder_team(path.rsplit("/", 1)[0] + "/") if "/" in path else None


def _place_companions(
    ws: Workspace, items: list[SourceItem], known: Known, team: str | None, report: ImportReport
) -> list[PlacedCompanion]:
    """Where each exported companion goes: where this workspace keeps the companion of its binary
    (`companions.companion_location`). A superseded one stays behind (history of a binary the
    export does not carry), as does one whose place another companion holds already."""
    from box_memory.write.binaries import Binary, companion_location

    placed: list[PlacedCompanion] = []
    for it in items:
        fm = it.extra_source.get("_frontmatter") or {}
        if it.keep_id in known.ids:
            report.skipped.append({"ref": it.ref, "reason": "already imported"})
            continue
        if it.status != "active":
            report.skipped.append({"ref": it.ref, "reason": f"a {it.status} companion; only current ones "
                                   "are imported"})  # fmt: skip
            continue
        cf = fm.get("companion_for")
        name = str(cf.get("filename") or "") if isinstance(cf, dict) else ""
        scope = team or it.team
        local = str(cf.get("local_path") or "") if isinstance(cf, dict) else ""
        binary = (
            local
            if local and team is None
            else f"{ws.files_folder(scope)}/{local.rsplit('/', 1)[-1] or name}"
        )
        parts = binary.split("/")
        if binary.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == "_archive":
            report.errors.append(
                {"ref": it.ref, "reason": f"companion_for names no usable binary ({binary!r})"}
            )
            continue
        folder, filename = companion_location(ws, Binary(binary, scope))
        try:
            taken = ws.store.exists(f"{folder}/{filename}")
        except BoxMemoryError as e:
            report.errors.append({"ref": it.ref, "reason": str(e)})
            continue
        if taken:
            report.errors.append(
                {"ref": it.ref, "reason": f"{folder}/{filename} exists already; not overwritten"}
            )
            continue
        placed.append(PlacedCompanion(it, binary, folder, filename))
    return placed


@dataclass
class ImportedCompanion:
    """An exported companion placed as it was exported (id, pinned hashes, body), in the batch of
    the import's commit. Its binary is not in an export: until it is copied to the path the
    companion names, `companion --stale` reports it orphaned (never fixed silently)."""

    c: PlacedCompanion

    def place(self, tx: Any) -> dict[str, Any]:
        c, ws = self.c, tx.ws
        meta = dict(c.item.extra_source.get("_frontmatter") or {})
        meta["team"] = ws.team_of(_folder_team(c.folder + "/"))
        cf = meta.get("companion_for")
        if isinstance(cf, dict):
            meta["companion_for"] = {**cf, "local_path": c.binary}
        idx, _ = tx.folder(c.folder)
        if not ws.store.exists(c.folder):
            ws.store.mkdir(c.folder)
        done = tx.file(idx, meta, c.item.content, c.filename)
        if not ws.store.exists(c.binary):
            tx.warnings.append(
                f"{done.path}: its binary is not in the export; copy it to {c.binary} "
                "(until then `box-memory companion --stale` reports it orphaned)"
            )
        return {"id": c.item.keep_id, "title": c.item.title, "kind": "companion", "file": done.path}


def check_teams(ws: Workspace, items: list[SourceItem]) -> None:
    """A box-memory record of a team this workspace lacks is refused before anything is written,
    never put in the default team silently."""
    teams = ws.config.teams
    missing = sorted({it.team for it in items if it.error is None and it.team and it.team not in teams})
    if missing:
        names = ", ".join(missing)
        raise InvalidInput(
            f"the source holds memories of team(s) this workspace lacks: {names}; create them first "
            f"(box-memory team create {missing[0]}) or pass --team to import everything into one team"
        )


def _folder_team(folder: str) -> str | None:
    parts = folder.strip("/").split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "teams" else None


def _team_for(ws: Workspace, item: SourceItem) -> str | None:
    """A box-memory record goes back to its team folder (`check_teams` made sure it exists)."""
    return item.team if item.team and item.team in ws.config.teams else None


def _single_markdown(path: Path) -> Iterator[SourceItem]:
    """One file named on the command line (read even when it is a link: the user named it)."""
    ref = str(path)
    try:
        raw, text = _read_text(path)
    except (OSError, InvalidInput) as e:
        yield SourceItem(ref, error=_reason(e))
        return
    yield _markdown_item(path, raw, text)


def import_memories(
    ws: Workspace,
    source: Path,
    *,
    fmt: str | None = None,
    team: str | None = None,
    dry_run: bool = False,
) -> Result:
    """The `import` service: the report's data; exit 1 when no item could be imported."""
    report = run_import(ws, source, fmt=fmt, team=team, dry_run=dry_run)
    data = report.as_dict()
    warnings = [f"{e['ref']}: {e['reason']}" for e in report.errors] + report.warnings
    written = data["would_import"] if dry_run else data["imported"]
    if written == 0 and data["already_imported"] == 0:
        errors = [{"code": "nothing_imported", "message": "no item of the source could be imported"}]
        return Result(data, warnings=warnings, errors=errors, exit_code=1, status="error")
    return Result(data, warnings=warnings)
