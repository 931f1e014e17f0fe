"""Claude's API memory tool backed by box-memory: every command and every refusal, driven through the
SDK's own `execute()` / `call()`, on a local workspace and on a Box workspace behind the emulator
(real MCP over real HTTP on 127.0.0.1; no Anthropic API call is made)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("anthropic")

from anthropic.lib.tools import ToolError
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from box_memory.integrations.anthropic import BoxMemoryTool
from tests.cloud.conftest import Backend


def view(path: str, view_range: list[int] | None = None) -> Any:
    return BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)


def create(path: str, text: str) -> Any:
    return BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text)


def replace(path: str, old: str, new: str) -> Any:
    return BetaMemoryTool20250818StrReplaceCommand(command="str_replace", path=path, old_str=old, new_str=new)


def insert(path: str, line: int, text: str) -> Any:
    return BetaMemoryTool20250818InsertCommand(
        command="insert", path=path, insert_line=line, insert_text=text
    )


def delete(path: str) -> Any:
    return BetaMemoryTool20250818DeleteCommand(command="delete", path=path)


def rename(old: str, new: str) -> Any:
    return BetaMemoryTool20250818RenameCommand(command="rename", old_path=old, new_path=new)


def refused(tool: BoxMemoryTool, command: Any) -> str:
    with pytest.raises(ToolError) as err:
        tool.execute(command)
    return str(err.value)


def history(bk: Backend, mem_id: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = bk.data("get", mem_id, "--history")["history"]
    return rows


def test_every_command(bk: Backend) -> None:
    tool = BoxMemoryTool(bk.spec)
    try:
        assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
        empty = tool.execute(view("/memories"))
        assert empty.splitlines() == [
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:",
            "0B\t/memories",
        ]

        # create: one memory per file
        todo = "- buy milk\n- call Bob\n"
        assert tool.execute(create("/memories/notes/todo.md", todo)) == (
            "File created successfully at: /memories/notes/todo.md"
        )
        raw = {"command": "create", "path": "/memories/prefs.md", "file_text": "tea, no sugar"}
        assert tool.call(raw) == "File created successfully at: /memories/prefs.md"  # the runner's entry
        first_id = tool.current_files()["/memories/notes/todo.md"].mem_id
        mem = bk.data("get", first_id)
        assert mem["frontmatter"]["tags"] == ["memory-tool"]
        assert mem["frontmatter"]["sources"] == [{"type": "memory_tool", "ref": "/memories/notes/todo.md"}]

        # view: a directory listing with sizes, and a file with line numbers
        listing = tool.execute(view("/memories")).splitlines()
        assert listing[1:] == [
            "36B\t/memories",
            "22B\t/memories/notes/",
            "22B\t/memories/notes/todo.md",
            "14B\t/memories/prefs.md",
        ]
        assert tool.execute(view("/memories/notes/todo.md")) == (
            "Here's the content of /memories/notes/todo.md with line numbers:\n"
            "     1\t- buy milk\n     2\t- call Bob\n     3\t"
        )
        part = tool.execute(view("/memories/notes/todo.md", [2, 2]))
        assert part.splitlines()[1:] == ["     2\t- call Bob"]

        # str_replace supersedes the previous version
        out = tool.execute(replace("/memories/notes/todo.md", "call Bob", "call Bob at 5pm"))
        assert out.startswith("The memory file has been edited.")
        assert "     2\t- call Bob at 5pm" in out
        second_id = tool.current_files()["/memories/notes/todo.md"].mem_id
        assert second_id != first_id
        assert bk.data("get", first_id)["frontmatter"]["status"] == "superseded"

        # insert supersedes too
        assert tool.execute(insert("/memories/notes/todo.md", 0, "# Today")) == (
            "The file /memories/notes/todo.md has been edited."
        )
        assert tool.execute(view("/memories/notes/todo.md")).splitlines()[1:4] == [
            "     1\t# Today",
            "     2\t- buy milk",
            "     3\t- call Bob at 5pm",
        ]

        # rename supersedes with the new name; the old path is gone
        assert tool.execute(rename("/memories/notes/todo.md", "/memories/notes/done.md")) == (
            "Successfully renamed /memories/notes/todo.md to /memories/notes/done.md"
        )
        assert "/memories/notes/todo.md" not in tool.current_files()
        done = tool.current_files()["/memories/notes/done.md"]
        assert done.text == "# Today\n- buy milk\n- call Bob at 5pm\n"
        chain = history(bk, first_id)
        assert [h["id"] for h in chain][:2] == [first_id, second_id] and chain[-1]["id"] == done.mem_id
        assert len(chain) == 4 and [h["status"] for h in chain] == ["superseded"] * 3 + ["active"]

        # delete archives: the file leaves `view`, its whole history stays
        assert tool.execute(delete("/memories/prefs.md")) == "Successfully deleted /memories/prefs.md"
        assert refused(tool, view("/memories/prefs.md")) == (
            "The path /memories/prefs.md does not exist. Please provide a valid path."
        )
        prefs_chain = bk.data("recall", "prefs", "--include-superseded")["hits"]
        assert prefs_chain and {h["status"] for h in prefs_chain} == {"superseded", "archived"}

        # a directory: rename moves every file under it, delete archives them all
        tool.execute(create("/memories/notes/b.md", "second"))
        tool.execute(rename("/memories/notes", "/memories/archive-2026"))
        moved = sorted(tool.current_files())
        assert moved == ["/memories/archive-2026/b.md", "/memories/archive-2026/done.md"]
        assert tool.execute(delete("/memories/archive-2026")) == "Successfully deleted /memories/archive-2026"
        assert tool.current_files() == {}
        assert tool.clear_all_memory() == "All memory cleared"

        # A fresh tool (a new process, say) reads the same state back from the workspace.
        tool.execute(create("/memories/kept.md", "kept\n"))
        again = BoxMemoryTool(bk.spec)
        assert again.execute(view("/memories/kept.md")).splitlines()[1] == "     1\tkept"
        again.close()
        assert bk.run("index-rebuild", "--check")["exit_code"] == 0
    finally:
        tool.close()


BAD_PATHS = [
    ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
    ("memories/x.md", "Path must start with /memories, got: memories/x.md"),
    ("/memoriesX/x.md", "Path must start with /memories, got: /memoriesX/x.md"),
    ("/memories/../etc/passwd", "Path /memories/../etc/passwd would escape /memories directory"),
    ("/memories/a/../../x.md", "Path /memories/a/../../x.md would escape /memories directory"),
]


def test_every_refusal(bk: Backend) -> None:
    tool = BoxMemoryTool(bk.spec)
    try:
        tool.execute(create("/memories/a.md", "alpha\nbeta\nalpha\n"))
        tool.execute(create("/memories/dir/b.md", "bravo"))
        before = tool.current_files()
        for path, message in BAD_PATHS:
            for command in (
                view(path),
                create(path, "x"),
                replace(path, "a", "b"),
                insert(path, 0, "x"),
                delete(path),
                rename(path, "/memories/new.md"),
                rename("/memories/a.md", path),
            ):
                assert refused(tool, command) == message, (path, command.command)
        # Each command's own refusals, with the SDK's texts.
        assert refused(tool, create("/memories/a.md", "again")) == "File /memories/a.md already exists"
        assert refused(tool, create("/memories", "x")) == "File /memories already exists"
        assert refused(tool, view("/memories/nope.md")) == (
            "The path /memories/nope.md does not exist. Please provide a valid path."
        )
        assert refused(tool, replace("/memories/nope.md", "a", "b")) == (
            "The path /memories/nope.md does not exist. Please provide a valid path."
        )
        assert refused(tool, replace("/memories/dir", "a", "b")) == "The path /memories/dir is not a file."
        assert refused(tool, replace("/memories/a.md", "gamma", "x")) == (
            "No replacement was performed, old_str `gamma` did not appear verbatim in /memories/a.md."
        )
        assert refused(tool, replace("/memories/a.md", "alpha", "x")) == (
            "No replacement was performed. Multiple occurrences of old_str `alpha` in lines: 1, 3. "
            "Please ensure it is unique"
        )
        assert refused(tool, insert("/memories/a.md", 9, "x")) == (
            "Invalid `insert_line` parameter: 9. It should be within the range [0, 3]."
        )
        assert refused(tool, insert("/memories/a.md", -1, "x")) == (
            "Invalid `insert_line` parameter: -1. It should be within the range [0, 3]."
        )
        assert refused(tool, insert("/memories/nope.md", 0, "x")) == (
            "The path /memories/nope.md does not exist. Please provide a valid path."
        )
        assert refused(tool, delete("/memories")) == "Cannot delete the /memories directory itself"
        assert refused(tool, delete("/memories/nope.md")) == "The path /memories/nope.md does not exist"
        assert refused(tool, rename("/memories", "/memories/x")) == (
            "Cannot rename the /memories directory itself"
        )
        assert refused(tool, rename("/memories/a.md", "/memories/dir/b.md")) == (
            "The destination /memories/dir/b.md already exists"
        )
        assert refused(tool, rename("/memories/nope.md", "/memories/new.md")) == (
            "The path /memories/nope.md does not exist"
        )
        # Nothing a refusal touched changed.
        assert tool.current_files() == before
    finally:
        tool.close()


def test_a_missing_workspace_is_a_tool_error(tmp_path) -> None:
    tool = BoxMemoryTool(str(tmp_path / "no-workspace-here"))
    message = refused(tool, view("/memories"))
    assert message.startswith("memory store unavailable:")
