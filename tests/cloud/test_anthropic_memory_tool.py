"""Claude's API memory tool backed by box-memory: every command and every refusal, driven through the
SDK's own `execute()` / `call()`, on a local workspace and on a Box workspace behind the emulator
(real MCP over real HTTP on 127.0.0.1; no Anthropic API call is made)."""

# The SDK's own tests below are vendored as written: their long lines and unescaped match= texts.
# ruff: noqa: E501, RUF043

from __future__ import annotations

from collections.abc import Iterator
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
        assert mem["frontmatter"]["sources"] == [
            {"type": "memory_tool", "ref": "/memories/notes/todo.md", "trailing_newlines": 1}
        ]

        # view: a directory listing with sizes, and a file with line numbers
        listing = tool.execute(view("/memories")).splitlines()
        assert listing[1:] == [
            "35B\t/memories",
            "22B\t/memories/notes/",
            "22B\t/memories/notes/todo.md",
            "13B\t/memories/prefs.md",  # "tea, no sugar", as written: no newline added
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


# --- The Anthropic SDK's own tests of its memory tool, run against BoxMemoryTool ----------------
# Vendored from anthropics/anthropic-sdk-python, tests/lib/tools/memory_tools/test_filesystem.py
# (class TestBetaLocalFilesystemMemoryTool, commit 009b0353), unchanged but for three things: the
# fixture is a BoxMemoryTool on each backend, a "directory snapshot" is the tool's current files
# read back from the workspace (path without its leading "/" -> text), and the tests of a local
# folder's own machinery (directory modes, symlinks on disk) are left out: a workspace has no
# such folder. test_view_error_for_files_with_too_many_lines is replaced by
# test_a_file_past_the_memory_cap_is_refused: its 1,000,000 lines do not fit in one memory.


def snapshot_of(tool: BoxMemoryTool) -> dict[str, str]:
    return {path[1:]: f.text for path, f in tool.current_files().items()}


@pytest.fixture
def tool(bk: Backend) -> Iterator[BoxMemoryTool]:
    t = BoxMemoryTool(bk.spec)
    yield t
    t.close()


class TestSdkMemoryToolSuite:
    def test_create(self, tool: BoxMemoryTool) -> None:
        result = tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Hello, World!",
                path="/memories/test_file.txt",
            )
        )
        assert result == "File created successfully at: /memories/test_file.txt"
        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/test_file.txt": "Hello, World!"}

    def test_create_nested_directories(self, tool: BoxMemoryTool) -> None:
        result = tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Nested file",
                path="/memories/deep/nested/file.txt",
            )
        )
        assert result == "File created successfully at: /memories/deep/nested/file.txt"
        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/deep/nested/file.txt": "Nested file"}

    def test_create_error_if_file_already_exists(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Original",
                path="/memories/existing.txt",
            )
        )

        with pytest.raises(ToolError, match="File /memories/existing.txt already exists"):
            tool.create(
                BetaMemoryTool20250818CreateCommand(
                    command="create",
                    file_text="New",
                    path="/memories/existing.txt",
                )
            )

    def test_view_file(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Line 1\nLine 2\nLine 3",
                path="/memories/view_test.txt",
            )
        )

        result = tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/view_test.txt"))
        assert (
            result
            == "Here's the content of /memories/view_test.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLine 3"
        )

    def test_view_directory(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="File 1",
                path="/memories/dir/file1.txt",
            )
        )

        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="File 2",
                path="/memories/dir/file2.txt",
            )
        )

        result = tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/dir"))

        assert "Here're the files and directories up to 2 levels deep in /memories/dir" in result
        assert "/memories/dir" in result
        assert "/memories/dir/file1.txt" in result
        assert "/memories/dir/file2.txt" in result

    def test_view_file_with_range(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Line 1\nLine 2\nLine 3\nLine 4\nLine 5",
                path="/memories/range_test.txt",
            )
        )

        result = tool.view(
            BetaMemoryTool20250818ViewCommand(
                command="view", path="/memories/range_test.txt", view_range=[2, 4]
            )
        )

        assert (
            result
            == "Here's the content of /memories/range_test.txt with line numbers:\n     2\tLine 2\n     3\tLine 3\n     4\tLine 4"
        )

    def test_view_error_for_non_existent_file(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(
            ToolError, match="The path /memories/nonexistent.txt does not exist. Please provide a valid path."
        ):
            tool.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/nonexistent.txt"))

    def test_str_replace(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Line 1\nOld Text\nLine 3",
                path="/memories/replace_test.txt",
            )
        )

        result = tool.str_replace(
            BetaMemoryTool20250818StrReplaceCommand(
                command="str_replace",
                path="/memories/replace_test.txt",
                old_str="Old Text",
                new_str="New Text",
            )
        )

        assert (
            result
            == "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tLine 1\n     2\tNew Text\n     3\tLine 3"
        )

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/replace_test.txt": "Line 1\nNew Text\nLine 3"}

    def test_str_replace_error_when_string_not_found(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Hello, World!",
                path="/memories/replace_test.txt",
            )
        )

        with pytest.raises(
            ToolError,
            match="No replacement was performed, old_str `NotFound` did not appear verbatim in /memories/replace_test.txt.",
        ):
            tool.str_replace(
                BetaMemoryTool20250818StrReplaceCommand(
                    command="str_replace",
                    path="/memories/replace_test.txt",
                    old_str="NotFound",
                    new_str="Python",
                )
            )

    def test_str_replace_error_when_string_appears_multiple_times(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create",
                file_text="Hello\nMiddle\nHello",
                path="/memories/replace_test.txt",
            )
        )

        with pytest.raises(
            ToolError,
            match=r"No replacement was performed\. Multiple occurrences of old_str `Hello` in lines: 1, 3\. Please ensure it is unique",
        ):
            tool.str_replace(
                BetaMemoryTool20250818StrReplaceCommand(
                    command="str_replace",
                    path="/memories/replace_test.txt",
                    old_str="Hello",
                    new_str="Hi",
                )
            )

    def test_str_replace_error_for_non_existent_file(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(
            ToolError, match="The path /memories/nonexistent.txt does not exist. Please provide a valid path."
        ):
            tool.str_replace(
                BetaMemoryTool20250818StrReplaceCommand(
                    command="str_replace",
                    path="/memories/nonexistent.txt",
                    old_str="old",
                    new_str="new",
                )
            )

    def test_insert(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
            )
        )

        result = tool.insert(
            BetaMemoryTool20250818InsertCommand(
                command="insert", path="/memories/insert_test.txt", insert_line=1, insert_text="Inserted Line"
            )
        )
        assert result == "The file /memories/insert_test.txt has been edited."

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/insert_test.txt": "Line 1\nInserted Line\nLine 2\n"}

    def test_insert_at_beginning_of_file(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
            )
        )

        tool.insert(
            BetaMemoryTool20250818InsertCommand(
                command="insert", path="/memories/insert_test.txt", insert_line=0, insert_text="First Line"
            )
        )

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/insert_test.txt": "First Line\nLine 1\nLine 2\n"}

    def test_insert_at_end_of_file(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
            )
        )

        tool.insert(
            BetaMemoryTool20250818InsertCommand(
                command="insert", path="/memories/insert_test.txt", insert_line=2, insert_text="Last Line"
            )
        )

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/insert_test.txt": "Line 1\nLine 2\nLast Line\n"}

    def test_insert_error_for_non_existent_file(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(
            ToolError, match="The path /memories/nonexistent.txt does not exist. Please provide a valid path."
        ):
            tool.insert(
                BetaMemoryTool20250818InsertCommand(
                    command="insert", path="/memories/nonexistent.txt", insert_line=0, insert_text="text"
                )
            )

    def test_insert_error_for_invalid_insert_line(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Line 1\nLine 2", path="/memories/insert_test.txt"
            )
        )

        with pytest.raises(
            ToolError,
            match=r"Invalid `insert_line` parameter: 10. It should be within the range \[0, 2\]",
        ):
            tool.insert(
                BetaMemoryTool20250818InsertCommand(
                    command="insert", path="/memories/insert_test.txt", insert_line=10, insert_text="text"
                )
            )

    def test_delete(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="To be deleted", path="/memories/delete_me.txt"
            )
        )

        result = tool.delete(
            BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/delete_me.txt")
        )
        assert result == "Successfully deleted /memories/delete_me.txt"

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {}

    def test_delete_directory(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Content", path="/memories/subdir/file.txt"
            )
        )

        result = tool.delete(BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/subdir"))
        assert result == "Successfully deleted /memories/subdir"

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {}

    def test_delete_error_when_file_not_found(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(ToolError, match="The path /memories/nonexistent.txt does not exist"):
            tool.delete(
                BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories/nonexistent.txt")
            )

    def test_delete_not_allow_deleting_memories_directory(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(ToolError, match="Cannot delete the /memories directory itself"):
            tool.delete(BetaMemoryTool20250818DeleteCommand(command="delete", path="/memories"))

    def test_rename(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Original content", path="/memories/old_name.txt"
            )
        )

        result = tool.rename(
            BetaMemoryTool20250818RenameCommand(
                command="rename", old_path="/memories/old_name.txt", new_path="/memories/new_name.txt"
            )
        )
        assert result == "Successfully renamed /memories/old_name.txt to /memories/new_name.txt"

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/new_name.txt": "Original content"}

    def test_rename_to_nested_path(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="Content", path="/memories/file.txt"
            )
        )

        result = tool.rename(
            BetaMemoryTool20250818RenameCommand(
                command="rename", old_path="/memories/file.txt", new_path="/memories/nested/dir/file.txt"
            )
        )
        assert result == "Successfully renamed /memories/file.txt to /memories/nested/dir/file.txt"

        dir_snapshot = snapshot_of(tool)
        assert dir_snapshot == {"memories/nested/dir/file.txt": "Content"}

    def test_rename_error_when_source_not_found(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(ToolError, match="The path /memories/nonexistent.txt does not exist"):
            tool.rename(
                BetaMemoryTool20250818RenameCommand(
                    command="rename", old_path="/memories/nonexistent.txt", new_path="/memories/new.txt"
                )
            )

    def test_rename_error_when_destination_exists(self, tool: BoxMemoryTool) -> None:
        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="File 1", path="/memories/file1.txt"
            )
        )

        tool.create(
            BetaMemoryTool20250818CreateCommand(
                command="create", file_text="File 2", path="/memories/file2.txt"
            )
        )

        with pytest.raises(ToolError, match="The destination /memories/file2.txt already exists"):
            tool.rename(
                BetaMemoryTool20250818RenameCommand(
                    command="rename", old_path="/memories/file1.txt", new_path="/memories/file2.txt"
                )
            )

    def test_path_validation_reject_paths_not_starting_with_memories(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(ToolError, match="Path must start with /memories"):
            tool.create(
                BetaMemoryTool20250818CreateCommand(
                    command="create", file_text="Invalid", path="/invalid/path.txt"
                )
            )

    def test_path_validation_reject_paths_trying_to_escape_memories(self, tool: BoxMemoryTool) -> None:
        with pytest.raises(
            ToolError, match="Path /memories/../../../etc/passwd would escape /memories directory"
        ):
            tool.create(
                BetaMemoryTool20250818CreateCommand(
                    command="create", file_text="Escape attempt", path="/memories/../../../etc/passwd"
                )
            )

    def test_a_file_past_the_memory_cap_is_refused(self, tool: BoxMemoryTool) -> None:
        too_big = "\n".join(["line"] * 1000000)  # about 4.8 MiB; a memory holds 1 MiB of text
        with pytest.raises(
            ToolError, match=r"Could not save /memories/huge.txt: content is larger than 1024 KiB"
        ):
            tool.create(
                BetaMemoryTool20250818CreateCommand(
                    command="create", file_text=too_big, path="/memories/huge.txt"
                )
            )
        assert snapshot_of(tool) == {}


def test_what_claude_writes_is_what_it_reads_back(bk: Backend) -> None:
    """Byte for byte: no newline added or dropped at either end, blank edge lines kept, CRLF kept,
    and the same again from a fresh tool that reads the workspace (another process, say)."""
    texts = {
        "/memories/none.md": "no newline at the end",
        "/memories/one.md": "one\n",
        "/memories/two.md": "two blank lines follow\n\n\n",
        "/memories/lead.md": "\n\nstarts after two blank lines",
        "/memories/crlf.md": "windows\r\nline endings\r\n",
        "/memories/empty.md": "",
        "/memories/newlines.md": "\n\n",
        "/memories/spaces.md": "   \n  indented   ",
        "/memories/heading.md": "# A heading of its own\n\ntext",
    }
    tool = BoxMemoryTool(bk.spec)
    try:
        for path, text in texts.items():
            tool.create(BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text))
        assert {p: f.text for p, f in tool.current_files().items()} == texts
    finally:
        tool.close()
    again = BoxMemoryTool(bk.spec)
    try:
        assert {p: f.text for p, f in again.current_files().items()} == texts
        lines = again.view(BetaMemoryTool20250818ViewCommand(command="view", path="/memories/none.md"))
        assert lines.endswith("     1\tno newline at the end")
    finally:
        again.close()
