"""Every skill sends connection problems to CONNECTORS.md, by a link that resolves inside the
plugin, naming sections that exist there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKILLS = sorted((ROOT / "skills").glob("*/SKILL.md"))
HEADINGS = [
    line.lstrip("#").strip()
    for line in (ROOT / "CONNECTORS.md").read_text(encoding="utf-8").splitlines()
    if line.startswith("#")
]


@pytest.mark.parametrize("skill", SKILLS, ids=lambda p: p.parent.name)
def test_skill_points_to_connectors_for_connection_problems(skill: Path) -> None:
    text = skill.read_text(encoding="utf-8")
    links = re.findall(r"\[CONNECTORS\.md\]\(([^)]+)\)", text)
    assert links, f"{skill.parent.name} never mentions CONNECTORS.md"
    for link in links:
        assert (skill.parent / link).resolve() == ROOT / "CONNECTORS.md"
    paragraph = next(p for p in text.split("\n\n") if "[CONNECTORS.md]" in p)
    assert re.search(r"[Cc]onnection problems", paragraph)
    for section in re.findall(r'"([^"]+)"', paragraph):
        assert any(h.startswith(section) or section in h for h in HEADINGS), section
