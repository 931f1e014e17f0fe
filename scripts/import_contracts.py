"""An import-linter contract type the built-in ones do not cover: no import cycle between modules.

`acyclic_siblings` treats a sub-package as one node, so `recall -> brain.search` and
`brain.review -> recall` read as a cycle although no module waits on itself; this contract looks
at modules, and counts imports made inside functions too (grimp sees them), which is where cycles
hide. Registered in pyproject.toml under `[tool.importlinter] contract_types`.
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules


class AcyclicModulesContract(Contract):
    """Configuration: `modules`, module expressions (`box_memory.**`) whose imports among
    themselves must form no cycle."""

    type_name = "acyclic_modules"

    modules = fields.SetField(subfield=fields.ModuleExpressionField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        names = {m.name for m in module_expressions_to_modules(graph, self.modules)}  # type: ignore[arg-type]
        edges = {
            m: sorted(d for d in graph.find_modules_directly_imported_by(m) if d in names and d != m)
            for m in names
        }
        cycles = [sorted(c) for c in _strongly_connected(edges) if len(c) > 1]
        details = []
        for comp in sorted(cycles):
            inside = set(comp)
            lines = []
            for m in comp:
                for d in edges[m]:
                    if d in inside:
                        where = graph.get_import_details(importer=m, imported=d)
                        at = ", ".join(f"l.{x['line_number']}" for x in where)
                        lines.append(f"{m} -> {d} ({at})")
            details.append(lines)
        return ContractCheck(kept=not cycles, metadata={"cycles": details})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for lines in check.metadata["cycles"]:
            output.print_error("These modules import each other (a cycle):", bold=True)
            for line in lines:
                output.indent_cursor()
                output.print(f"- {line}")
            output.new_line()


def _strongly_connected(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (a deep package must not hit the recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = edges[node]
            if i < len(succ):
                work.append((node, i + 1))
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                found.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found
