"""One write path (docs/format.md, write room): every write - a memory, a companion, an import
batch, from the CLI, the MCP server or the API memory tool - is checked once into a frozen
prepared value and enters one locked commit; no function on that path runs past 60 lines.

Read from the source (ast), the way a reviewer would check it: these fail when a second lock,
a second content check or a long function comes back."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "box_memory"
WRITE = sorted((PKG / "write").glob("*.py"))
# Everything that writes memories: the write room, its callers, and the import run.
CALLERS = [
    PKG / "cli" / "memory_cmds.py",
    PKG / "cli" / "companion_cmd.py",
    PKG / "serve" / "tools.py",
    PKG / "integrations" / "anthropic.py",
    PKG / "brain" / "review_workspace.py",
    PKG / "transfer" / "importer.py",
]
MOST_LINES = 60
# The path itself: the write room, and the import run that plans a batch for it.
ON_THE_PATH = [*WRITE, PKG / "transfer" / "importer.py"]


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _calls(path: Path, name: str) -> list[int]:
    """Lines calling `name(...)` or `x.name(...)`."""
    out = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called == name:
                out.append(node.lineno)
    return out


def _rel(path: Path) -> str:
    return path.relative_to(PKG).as_posix()


@pytest.mark.parametrize("path", ON_THE_PATH, ids=_rel)
def test_no_function_on_the_write_path_is_longer_than_60_lines(path: Path) -> None:
    long = [
        f"{n.name} ({n.end_lineno - n.lineno + 1} lines, line {n.lineno})"
        for n in ast.walk(_tree(path))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and n.end_lineno is not None
        and n.end_lineno - n.lineno + 1 > MOST_LINES
    ]
    assert long == []


def test_only_the_commit_takes_the_workspace_lock() -> None:
    takers = {_rel(p): lines for p in WRITE + CALLERS if (lines := _calls(p, "lock"))}
    assert list(takers) == ["write/commit.py"], takers
    assert len(takers["write/commit.py"]) == 1


def test_a_text_is_checked_once_before_the_lock() -> None:
    """`check_content` is called in the two prepare steps only (a memory's, a companion's), once
    each; the CLI, the commit and the placements never check again."""
    callers = {_rel(p): len(lines) for p in WRITE + CALLERS if (lines := _calls(p, "check_content"))}
    assert callers == {"write/prepare.py": 1, "write/companions.py": 1}
    tree = _tree(PKG / "write" / "companions.py")
    prepare = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "prepare_companion")
    assert any(
        isinstance(n, ast.Call) and getattr(n.func, "id", "") == "check_content" for n in ast.walk(prepare)
    )


def test_every_write_enters_the_one_commit() -> None:
    """Each way in reaches `commit(...)`: a memory write and a companion write through their
    service, the import batch directly; every caller enters through one of those."""
    assert _calls(PKG / "write" / "memories.py", "commit")
    assert _calls(PKG / "write" / "companions.py", "commit")
    assert _calls(PKG / "transfer" / "importer.py", "commit")
    for caller in CALLERS[:5]:
        entered = _calls(caller, "write_memory") + _calls(caller, "write_companion")
        assert entered, _rel(caller)


def test_the_prepared_values_are_frozen() -> None:
    from box_memory.write.companions import PreparedCompanion
    from box_memory.write.prepare import Prepared

    for cls in (Prepared, PreparedCompanion):
        params = getattr(cls, "__dataclass_params__")  # noqa: B009 - dataclasses' own record
        assert params.frozen, cls
    p = Prepared("x", "T", None, "active", (), (), (), None, None, "memories")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.title = "changed"  # type: ignore[misc]
