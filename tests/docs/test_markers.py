"""Every pytest marker pyproject.toml declares is carried by some test (a declared marker nothing
uses selects nothing), and the README says how to leave the slow tests out."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def declared_markers() -> list[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [m.split(":", 1)[0].strip() for m in pyproject["tool"]["pytest"]["ini_options"]["markers"]]


def test_every_declared_marker_is_carried_by_a_test() -> None:
    here = Path(__file__).resolve()
    sources = [p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py") if p.resolve() != here]
    assert declared_markers()
    for name in declared_markers():
        use = re.compile(rf"\bpytest\.mark\.{re.escape(name)}\b")
        assert any(use.search(text) for text in sources), f"no test carries the declared marker {name!r}"


def test_the_readme_says_how_to_run_the_fast_set() -> None:
    """Next to the test command CI runs, before the first section."""
    assert "slow" in declared_markers()
    top = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert re.search(r'pytest[^`\n]* -m "not slow"', top), 'README lacks `pytest -m "not slow"`'
