"""Claude's API memory tool, backed by a box-memory workspace (local folder or Box).

`BoxMemoryTool` subclasses the Anthropic SDK's `BetaAbstractMemoryTool` (`anthropic.lib.tools`,
the `memory_20250818` tool: commands view, create, str_replace, insert, delete, rename over paths
under `/memories`). Each file Claude keeps is a box-memory memory in the workspace's memories
folder (or a team's), tagged `memory-tool`, with the file's path in `sources`
(`{type: memory_tool, ref: /memories/...}`):

- `create` writes a new memory;
- `str_replace` and `insert` write the edited file as a new memory that supersedes the previous
  version, so `box-memory get <id> --history` shows every version;
- `delete` archives: a final version with status `archived` supersedes the file's current one
  (nothing is deleted; the file disappears from `view`);
- `rename` supersedes the file's current memory with one under the new path;
- `view` lists the current files with sizes, or shows one file with line numbers.

Paths outside `/memories` and traversal out of it are refused with the SDK's own error texts
(`Path must start with /memories, got: ...`, `Path ... would escape /memories directory`), raised
as `ToolError` so the tool runner hands them to Claude as an error result. The texts Claude sees
follow `BetaLocalFilesystemMemoryTool` in anthropic's `lib/tools/_beta_builtin_memory_tool.py`.

A memory body is `# <title>`, a blank line, then the file's text. What Claude writes is what it
reads back, byte for byte: a memory body always ends with one newline, so the number of newlines
the file really ends with is kept in its source entry (`trailing_newlines`; a version written
before it was kept reads back as it always did). Two limits differ from the SDK's local tool,
which has none: a file's text is at most 1 MiB (`commit.MAX_CONTENT_BYTES`, the workspace's cap
for one memory), and it may not hold control characters other than tab, newline, carriage return
and form feed (a memory is a text file). A write past either is refused with a `ToolError` that
says so, and nothing is stored.

Install with `pip install 'box-memory[anthropic]'`.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from box_memory.errors import BoxMemoryError
from box_memory.format.model import LIVE, IndexEntry
from box_memory.workspace.resolve import Workspace

ROOT = "/memories"
TAG = "memory-tool"
SOURCE_TYPE = "memory_tool"
LINE_NUMBER_WIDTH = 6  # as the SDK's local tool: len(str(999999))
MAX_LINES = 999_999


@dataclass(frozen=True)
class StoredFile:
    """One version of a file: a memory id, the file's path, its text. Immutable per id."""

    mem_id: str
    path: str
    text: str

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def format_size(n: int) -> str:
    """Sizes as the SDK's local memory tool prints them (`_format_file_size`)."""
    if n == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(units) - 1)
    size = n / (1024**i)
    return f"{int(size)}{units[i]}" if size == int(size) else f"{size:.1f}{units[i]}"


def check_path(path: str) -> str:
    """The normalised `/memories/...` path, or ToolError with the SDK's messages."""
    if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
        raise ToolError(f"Path must start with /memories, got: {path}")
    if any(c in path for c in ("\\", "\x00")) or any(ord(c) < 32 for c in path):
        raise ToolError(f"Path {path} contains characters a memory path cannot hold")
    norm = posixpath.normpath(path)
    if norm != ROOT and not norm.startswith(ROOT + "/"):
        raise ToolError(f"Path {path} would escape /memories directory")
    return norm


def title_for(path: str) -> str:
    """A readable memory title for a file path (the exact path is kept in `sources`)."""
    rel = path[len(ROOT) + 1 :]
    title = " › ".join(p for p in rel.split("/") if p)
    while ".." in title:
        title = title.replace("..", ".")
    return title[:190] or "memory file"


class BoxMemoryTool(BetaAbstractMemoryTool):
    """The `memory` tool for Claude with files kept as append-only box-memory memories."""

    def __init__(
        self,
        workspace: str | Workspace | None = None,
        *,
        team: str | None = None,
        agent: str = "claude",
        cache_control: Any = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self._spec = workspace
        self._ws: Workspace | None = workspace if isinstance(workspace, Workspace) else None
        self.team = team
        self.agent = agent
        self._versions: dict[str, StoredFile] = {}  # memory id -> file version (ids never change)

    # --- the workspace side -------------------------------------------------------------------

    @property
    def workspace(self) -> Workspace:
        if self._ws is None:
            from box_memory.workspace.resolve import open_workspace

            spec = self._spec if isinstance(self._spec, str) else None
            try:
                self._ws = open_workspace(spec)
            except BoxMemoryError as e:
                raise ToolError(f"memory store unavailable: {e}") from None
        return self._ws

    def _read_version(self, entry: dict[str, Any], folder: str) -> StoredFile | None:
        from box_memory.format import frontmatter

        mem_id = str(entry.get("id"))
        if mem_id in self._versions:
            return self._versions[mem_id]
        path = IndexEntry(folder, entry).path
        raw = self.workspace.store.read_bytes(path)
        meta, body = frontmatter.parse(raw.decode("utf-8"), path)
        source = next(
            (s for s in meta.get("sources") or [] if isinstance(s, dict) and s.get("type") == SOURCE_TYPE),
            None,
        )
        if source is None:
            return None
        ending = source.get("trailing_newlines")
        ending = ending if isinstance(ending, int) and not isinstance(ending, bool) and ending >= 0 else None
        text = unwrap(body, str(meta.get("title") or ""), ending)
        version = StoredFile(mem_id, str(source.get("ref")), text)
        self._versions[mem_id] = version
        return version

    def current_files(self) -> dict[str, StoredFile]:
        """Path -> current version of every live file (newest wins if two claim one path)."""
        from box_memory.workspace.index import load_index

        ws = self.workspace
        # A Box store caches listings per command: each tool call sees other writers (and a
        # session ended elsewhere is reopened).
        ws.store.drop_listings()
        try:
            idx = load_index(ws, ws.memories_folder(ws.require_team(self.team)))
            entries = [
                e
                for e in idx.entries
                if TAG in (e.get("tags") or ()) and e.get("status") in LIVE and not e.get("superseded_by")
            ]
            entries.sort(key=lambda e: (str(e.get("updated_at") or ""), str(e.get("id"))))
            files: dict[str, StoredFile] = {}
            for e in entries:
                v = self._read_version(e, idx.folder)
                if v is not None:
                    files[v.path] = v
        except BoxMemoryError as e:
            raise ToolError(f"memory store unavailable: {e}") from None
        return files

    def _write(self, path: str, text: str, *, supersedes: str | None = None, status: str = "active") -> str:
        from box_memory.write.memories import write_memory
        from box_memory.write.prepare import WriteRequest

        title = title_for(path)
        extra: dict[str, Any] = {"status": status} if status != "active" else {}
        # A memory body ends with one newline; the file's own ending is kept in its source entry.
        extra["sources"] = [{"type": SOURCE_TYPE, "ref": path, "trailing_newlines": trailing_newlines(text)}]
        req = WriteRequest(
            content=wrap(title, text),
            title=title,
            kind="note",
            tags=[TAG],
            team=self.team,
            supersedes=supersedes,
            agent=self.agent,
            new_slug=True,
            extra_meta=extra,
        )
        try:
            res = write_memory(self.workspace, req)
        except BoxMemoryError as e:
            raise ToolError(f"Could not save {path}: {e}") from None
        mem_id = str(res.data["id"])
        self._versions[mem_id] = StoredFile(mem_id, path, text)
        return mem_id

    # --- helpers over paths -------------------------------------------------------------------

    @staticmethod
    def _under(files: dict[str, StoredFile], path: str) -> list[StoredFile]:
        prefix = ROOT + "/" if path == ROOT else path + "/"
        return [f for p, f in sorted(files.items()) if p.startswith(prefix)]

    def _existing_file(self, path: str) -> tuple[StoredFile, dict[str, StoredFile]]:
        files = self.current_files()
        if path in files:
            return files[path], files
        if path == ROOT or self._under(files, path):
            raise ToolError(f"The path {path} is not a file.")
        raise ToolError(f"The path {path} does not exist. Please provide a valid path.")

    # --- the six commands ---------------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        path = check_path(command.path)
        files = self.current_files()
        if path in files:
            lines = files[path].text.split("\n")
            if len(lines) > MAX_LINES:
                raise ToolError(f"File {path} exceeds maximum line limit of 999,999 lines.")
            start = 1
            if command.view_range and len(command.view_range) == 2:
                first = max(1, command.view_range[0]) - 1
                last = len(lines) if command.view_range[1] == -1 else command.view_range[1]
                lines, start = lines[first:last], first + 1
            numbered = [f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{line}" for i, line in enumerate(lines)]
            return f"Here's the content of {path} with line numbers:\n" + "\n".join(numbered)
        inside = self._under(files, path)
        if path != ROOT and not inside:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        # Up to two levels below `path`, directories before their files, as the SDK's tool lists.
        base = len(path.rstrip("/").split("/"))
        rows: dict[str, int] = {}
        for f in inside:
            parts = f.path.split("/")[base:]
            for depth in range(1, min(len(parts), 2) + 1):
                key = "/".join(parts[:depth]) + ("/" if depth < len(parts) else "")
                rows[key] = rows.get(key, 0) + f.size
        header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        lines = [f"{format_size(sum(f.size for f in inside))}\t{path}"]
        lines += [
            f"{format_size(size)}\t{path}/{name}"
            for name, size in sorted(rows.items())
            if not any(part.startswith(".") for part in name.split("/"))
        ]
        return header + "\n" + "\n".join(lines)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path = check_path(command.path)
        files = self.current_files()
        if path == ROOT or path in files or self._under(files, path):
            raise ToolError(f"File {path} already exists")
        if any(p in files for p in _parents(path)):
            raise ToolError(f"Cannot create {path}: a parent path is a file")
        self._write(path, command.file_text)
        return f"File created successfully at: {path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        path = check_path(command.path)
        current, _ = self._existing_file(path)
        content = current.text
        count = content.count(command.old_str)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{command.old_str}` "
                f"did not appear verbatim in {path}."
            )
        if count > 1:
            at, pos = [], content.find(command.old_str)
            while pos != -1:
                at.append(content[:pos].count("\n") + 1)
                pos = content.find(command.old_str, pos + 1)
            raise ToolError(
                "No replacement was performed. Multiple occurrences of old_str "
                f"`{command.old_str}` in lines: {', '.join(map(str, at))}. Please ensure it is unique"
            )
        changed = content[: content.find(command.old_str)].count("\n")
        new_content = content.replace(command.old_str, command.new_str)
        self._write(path, new_content, supersedes=current.mem_id)
        new_lines = new_content.split("\n")
        lo, hi = max(0, changed - 2), min(len(new_lines), changed + 3)
        snippet = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}" for n in range(lo + 1, hi + 1)]
        return (
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
            + "\n".join(snippet)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        path = check_path(command.path)
        current, _ = self._existing_file(path)
        lines = current.text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if command.insert_line < 0 or command.insert_line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        new_content = "\n".join(lines)
        if not new_content.endswith("\n"):  # as the SDK's local tool writes it
            new_content += "\n"
        self._write(path, new_content, supersedes=current.mem_id)
        return f"The file {path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = check_path(command.path)
        if path == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        files = self.current_files()
        targets = [files[path]] if path in files else self._under(files, path)
        if not targets:
            raise ToolError(f"The path {path} does not exist")
        for f in targets:
            self._archive(f)
        return f"Successfully deleted {path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old = check_path(command.old_path)
        new = check_path(command.new_path)
        if old == ROOT:
            raise ToolError("Cannot rename the /memories directory itself")
        files = self.current_files()
        if new == ROOT or new in files or self._under(files, new):
            raise ToolError(f"The destination {command.new_path} already exists")
        if old in files:
            moves = [(files[old], new)]
        else:
            moves = [(f, new + f.path[len(old) :]) for f in self._under(files, old)]
        if not moves:
            raise ToolError(f"The path {command.old_path} does not exist")
        if new.startswith(old + "/"):
            raise ToolError(f"Cannot move {command.old_path} into itself")
        for f, dest in moves:
            self._write(dest, f.text, supersedes=f.mem_id)
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    def clear_all_memory(self) -> str:
        """Archives every file (nothing is deleted; the history stays in the workspace)."""
        for f in self.current_files().values():
            self._archive(f)
        return "All memory cleared"

    def close(self) -> None:
        """End the Box session, if the workspace opened one (a local workspace holds nothing)."""
        if self._ws is not None:
            self._ws.store.close()

    def _archive(self, f: StoredFile) -> None:
        """A last version with status archived supersedes the file's current one."""
        self._write(f.path, f.text, supersedes=f.mem_id, status="archived")


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(3, len(parts))]


def normalize(text: str) -> str:
    """How versions written before `trailing_newlines` was kept read back: no blank lines at
    either end, exactly one final newline."""
    text = text.strip("\n")
    return text + "\n" if text else ""


def trailing_newlines(text: str) -> int:
    return len(text) - len(text.rstrip("\n"))


def wrap(title: str, text: str) -> str:
    """The memory body for a file: its heading, a blank line, the text exactly as given."""
    return f"# {title}\n\n{text}"


def unwrap(body: str, title: str, ending: int | None = 1) -> str:
    """The file text back out of a memory body written by `wrap`. `ending`: how many newlines the
    file ended with (None: a version from before that was kept, read as `normalize` left it)."""
    body = body.lstrip("\n")
    head = f"# {title}"
    if body.startswith(head + "\n\n"):
        text = body[len(head) + 2 :]
    elif body.rstrip("\n") == head:
        text = ""
    else:
        text = body
    if ending is None:
        return normalize(text)
    return text.rstrip("\n") + "\n" * ending
