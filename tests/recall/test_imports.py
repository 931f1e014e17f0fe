"""A local recall, in a cold process, stays off the network stack and the heavy libraries."""

from __future__ import annotations

from pathlib import Path

from box_memory.cli.app import COMMAND_MODULES
from tests.helpers.imports import NETWORK, imported_by, modules_imported_by


def _modules(tmp_path: Path, *args: str) -> set[str]:
    return imported_by(tmp_path, *args)[1]


def test_recall_imports_neither_mcp_nor_httpx(ws: Path, cli, tmp_path: Path) -> None:
    cli.json("write", "We decided to cache tokens.", "--title", "Token cache", "-w", str(ws))
    cold = _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")  # builds the cache
    warm = _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")
    human = _modules(tmp_path, "recall", "tokens", "-w", str(ws))  # not a terminal: no rich
    for mods in (cold, warm, human):
        assert not mods & {*NETWORK, "pydantic", "rich"}, mods
    # A warm call answers from the cache: no YAML parser either.
    assert "yaml" not in warm
    assert "sqlite3" in warm


def test_recall_loads_only_its_own_command_and_what_its_answer_needs(ws: Path, cli, tmp_path: Path) -> None:
    """A warm local recall's start is the cost of every module it imports: none of another
    command's, and none whose only use is elsewhere (`Param` describes the MCP tools' schemas)."""
    cli.json("write", "We decided to cache tokens.", "--title", "Token cache", "-w", str(ws))
    _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")  # builds the cache
    others = {f"box_memory.cli.{m}" for m in COMMAND_MODULES.values()} - {"box_memory.cli.recall_cmd"}
    for args in (("token cache", "--json"), ("tokens",), ("kind:decision", "--json")):
        mods = modules_imported_by(tmp_path, "recall", *args, "-w", str(ws))[1]
        assert "box_memory.cli.recall_cmd" in mods
        assert not mods & others, mods & others
        assert not mods & {"box_memory.params", "rich", "yaml", "ulid"}, mods
        # Moved off the warm path (issue #28): a write's lock, the brain_search tool's request,
        # the unreadable-folder warning, the Box Brain search without a Box Brain store.
        assert not mods & OFF_THE_RECALL_PATH, mods & OFF_THE_RECALL_PATH


OFF_THE_RECALL_PATH = frozenset(
    {
        "box_memory.locks",
        "box_memory.recall.brain_tool",
        "box_memory.recall.unreadable",
        "box_memory.brain",
        "box_memory.brain.search",
        "platformdirs",  # BOX_MEMORY_HOME is set: no platform dirs to look up
        "box_memory.progress",  # nothing is drawn off a terminal or with --json
        "unicodedata",  # ASCII names and queries are their own NFC and NFKD forms
        "box_memory.recall.brain_section",  # without a Box Brain store: no hits to build
    }
)

# At exit: every class of box_memory built with @dataclass or as a NamedTuple, by module.
_BUILT = """
import atexit, json, sys
target = sys.argv[1]
def report():
    built = sorted(
        f"{name}.{k}"
        for name, mod in list(sys.modules.items())
        if name.startswith("box_memory") and mod is not None
        for k, v in vars(mod).items()
        if isinstance(v, type) and v.__module__ == name
        and (hasattr(v, "__dataclass_fields__") or (issubclass(v, tuple) and hasattr(v, "_fields")))
    )
    with open(target, "w") as f:
        json.dump(built, f)
atexit.register(report)
sys.argv = ["box-memory", *sys.argv[2:]]
from box_memory.cli.app import main
main()
"""


def test_a_warm_recall_builds_no_dataclass_of_its_own(ws: Path, cli, tmp_path: Path) -> None:
    """Every dataclass or NamedTuple a module defines is built when it is imported (0.3-1 ms
    each): the modules a warm local recall imports define none (they use `record`'s classes)."""
    import json
    import subprocess
    import sys

    cli.json("write", "We decided to cache tokens.", "--title", "Token cache", "-w", str(ws))
    _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")  # builds the cache
    out = tmp_path / "built.json"
    for args in (("token cache", "--json"), ("kind:decision", "--json"), ("tokens",)):
        res = subprocess.run(
            [sys.executable, "-c", _BUILT, str(out), "recall", *args, "-w", str(ws)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stderr
        assert json.loads(out.read_text()) == [], args


def test_version_loads_no_command(tmp_path: Path) -> None:
    res, mods = modules_imported_by(tmp_path, "--version")
    assert res.stdout.startswith("box-memory ")
    assert {m for m in mods if m.startswith("box_memory")} == {
        "box_memory",
        "box_memory.cli",
        "box_memory.cli.app",
    }
    assert not mods & {"dataclasses", "orjson", "sqlite3", "rich", "yaml"}, mods


def test_write_on_a_local_workspace_stays_off_the_network_stack(ws: Path, tmp_path: Path) -> None:
    mods = _modules(tmp_path, "write", "Tokens expire hourly.", "--title", "Expiry", "-w", str(ws), "--json")
    assert not mods & NETWORK, mods
