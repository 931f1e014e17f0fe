"""Modules use one another through public names only, and every such name exists.

Parses the whole package with `ast` (no import runs): a `from box_memory... import _name`, or a
`module._name` on a box-memory module, reaches into another module's private helpers and fails;
so does importing a box-memory module or name that does not exist - mypy cannot tell (the package
is checked with `ignore_missing_imports`), and an import inside a function only fails when that
function runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "box_memory"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
TREES = {name: ast.parse(path.read_text(encoding="utf-8"), str(path)) for name, path in MODULES.items()}


def _defined(tree: ast.Module) -> set[str]:
    """The names a module binds at its top level (through `if`, `try` and `with` blocks too)."""
    names: set[str] = set()
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.For | ast.With):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [i.optional_vars for i in node.items if i.optional_vars is not None]
                if isinstance(node, ast.With)
                else [node.target]
            )
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        for field in ("body", "orelse", "finalbody", "handlers"):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                todo.extend(getattr(node, field, []))
    return names


DEFINED = {name: _defined(tree) for name, tree in TREES.items()}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _resolve(node: ast.expr, aliases: dict[str, str], shadowed: frozenset[str]) -> str | None:
    """The box-memory module a (dotted) name stands for here, if it is one."""
    if isinstance(node, ast.Name):
        return None if node.id in shadowed else aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, aliases, shadowed)
        if base is not None and f"{base}.{node.attr}" in MODULES:
            return f"{base}.{node.attr}"
    return None


def _problems(module: str) -> list[str]:
    tree = TREES[module]
    out: list[str] = []
    aliases: dict[str, str] = {}  # local name -> box-memory module, wherever it is bound in the file
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("box_memory"):
                    if a.name not in MODULES:
                        out.append(f"{module}:{node.lineno} imports {a.name}, which does not exist")
                    aliases[a.asname or "box_memory"] = a.name if a.asname else "box_memory"
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").startswith("box_memory")
        ):
            source = str(node.module)
            if source not in MODULES:
                out.append(f"{module}:{node.lineno} imports from {source}, which does not exist")
                continue
            for a in node.names:
                if f"{source}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{source}.{a.name}"
                elif _private(a.name):
                    out.append(f"{module}:{node.lineno} imports the private {source}.{a.name}")
                elif a.name not in DEFINED[source]:
                    out.append(f"{module}:{node.lineno} imports {source}.{a.name}, which does not exist")
    for node, shadowed in _scoped(tree):
        if (
            isinstance(node, ast.Attribute)
            and (target := _resolve(node.value, aliases, shadowed)) is not None
        ):
            if f"{target}.{node.attr}" in MODULES or target == module:
                continue
            if _private(node.attr):
                out.append(f"{module}:{node.lineno} uses the private {target}.{node.attr}")
            elif node.attr not in DEFINED[target] and not node.attr.startswith("__"):
                out.append(f"{module}:{node.lineno} uses {target}.{node.attr}, which does not exist")
    return out


def _scoped(tree: ast.AST, shadowed: frozenset[str] = frozenset()) -> list[tuple[ast.AST, frozenset[str]]]:
    """Every node, with the names a function around it binds otherwise than by an import (its
    parameters, its assignments): there such a name is not the module imported under it."""
    out: list[tuple[ast.AST, frozenset[str]]] = []
    for child in ast.iter_child_nodes(tree):
        inner = shadowed
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            a = child.args
            bound = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
            bound |= {
                n.id for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
            inner = shadowed | bound
        out.append((child, shadowed))
        out += _scoped(child, inner)
    return out


def test_the_package_is_parsed() -> None:
    assert {"box_memory.recall.service", "box_memory.serve.server", "box_memory.cli.app"} <= set(MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_uses_only_public_names_of_other_modules_and_they_exist(module: str) -> None:
    assert _problems(module) == []


def test_the_check_finds_what_it_forbids() -> None:
    """The checker itself: each kind of violation, written into a module, is found."""
    rank = "box_memory.recall.rank"
    cases = [
        (f"from {rank} import _phrase", f"imports the private {rank}._phrase"),
        (f"from {rank} import nothing_here", f"{rank}.nothing_here, which does not exist"),
        ("from box_memory.recall.gone import recall", "box_memory.recall.gone, which does not exist"),
        ("from box_memory.recall import rank\nrank._weight(1, 1)", f"uses the private {rank}._weight"),
        (f"import {rank}\n{rank}._cut([], 1)", f"uses the private {rank}._cut"),
        ("def f():\n    from box_memory.recall import query as q\n    q.nope", "query.nope, which does"),
        ("from box_memory import settings\ndef f(x):\n    settings._x", "private box_memory.settings._x"),
    ]
    for source, said in cases:
        TREES["box_memory.probe"] = ast.parse(source)
        try:
            found = _problems("box_memory.probe")
        finally:
            del TREES["box_memory.probe"]
        assert any(said in p for p in found), (source, found)
    fine = (
        "from box_memory.recall.rank import COVER, Ladder\nfrom box_memory import recall, settings\n"
        "def f(settings):\n    return settings._anything"  # a parameter, not the module
    )
    TREES["box_memory.probe"] = ast.parse(fine)
    try:
        assert _problems("box_memory.probe") == []
    finally:
        del TREES["box_memory.probe"]
