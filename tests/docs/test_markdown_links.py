"""Every relative link in the documentation resolves: the file it names exists, and a `#anchor`
names a heading (or an explicit anchor) of that file, as GitHub renders it. Links to other sites
are not fetched."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doc_files(root: Path) -> list[Path]:
    """The pages a reader follows links between."""
    files = [root / "README.md", root / "CONNECTORS.md"]
    files += sorted((root / "docs").rglob("*.md"))
    files += sorted((root / "bench").glob("*.md"))
    files += sorted((root / "skills").glob("*/SKILL.md"))
    return [f for f in files if f.is_file()]


FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HTML_ANCHOR = re.compile(r"<a\s[^>]*(?:id|name)=\"([^\"]+)\"", re.I)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^//")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks; numbers count every line."""
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            mark = m.group(1)
            if fence is None:
                fence = mark[0] * len(mark)
            elif mark.startswith(fence):
                fence = None
            continue
        if fence is None:
            out.append((number, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger): the rendered text, lower-cased, with
    everything but letters, digits, marks, `_`, `-` and spaces dropped, each space a `-`."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link shows its text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    kept = (ch for ch in text if ch.isalnum() or ch in "_- " or unicodedata.category(ch).startswith("M"))
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(HTML_ANCHOR.findall(line))
        m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link and reference definition outside code."""
    out: list[tuple[int, str]] = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        bare = CODE_SPAN.sub("", line)
        out.extend((number, t) for t in INLINE_LINK.findall(bare))
        out.extend((number, t) for t in REF_DEF.findall(bare))
    return out


def broken_links(files: list[Path], root: Path) -> list[str]:
    """One line per relative link that does not resolve."""
    problems: list[str] = []
    cache: dict[Path, set[str]] = {}
    for page in files:
        for number, target in links(page):
            where = f"{page.relative_to(root)}:{number}: {target}"
            if not target or SCHEME.match(target):
                continue
            raw_path, _, anchor = target.partition("#")
            dest = (page.parent / unquote(raw_path)).resolve() if raw_path else page.resolve()
            if not dest.exists():
                problems.append(f"{where} (no such file)")
                continue
            if root.resolve() not in (dest, *dest.parents):
                problems.append(f"{where} (outside the repository)")
                continue
            if not anchor:
                continue
            if dest.suffix != ".md" or dest.is_dir():
                problems.append(f"{where} (an anchor into something that is not a markdown page)")
                continue
            if dest not in cache:
                cache[dest] = anchors(dest)
            if unquote(anchor) not in cache[dest]:
                problems.append(f"{where} (no heading #{anchor} there)")
    return problems


def test_the_documentation_is_there() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in doc_files(ROOT)}
    for page in (
        "README.md",
        "CONNECTORS.md",
        "docs/cli-reference.md",
        "docs/format.md",
        "docs/backends.md",
        "docs/troubleshooting.md",
        "docs/auditing.md",
        "bench/RESULTS.md",
        "bench/HISTORY.md",
    ):
        assert page in names, page


def test_every_relative_link_and_anchor_resolves() -> None:
    files = doc_files(ROOT)
    assert sum(len(links(f)) for f in files) > 50  # the pages do link to each other
    assert broken_links(files, ROOT) == []


def test_every_docs_page_is_reachable_from_the_readme() -> None:
    """Follow relative links from README.md: every page under docs/ is reached."""
    todo, reached = [ROOT / "README.md"], set()
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != ".md" or not page.is_file():
            continue
        reached.add(page)
        for _, target in links(page):
            path = target.partition("#")[0]
            if path and not SCHEME.match(target):
                todo.append((page.parent / unquote(path)).resolve())
    missing = [p for p in (ROOT / "docs").rglob("*.md") if p.resolve() not in reached]
    assert missing == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "Use it from Claude Code / Claude Desktop / any MCP client",
            "use-it-from-claude-code--claude-desktop--any-mcp-client",
        ),
        (
            "Verified against Box's published material, and what is assumed",
            "verified-against-boxs-published-material-and-what-is-assumed",
        ),
        ("5. Per-folder `_index.json`", "5-per-folder-_indexjson"),
        ("`box-memory brain-sync`", "box-memory-brain-sync"),
        ("Timeline: `log` against a structured recall", "timeline-log-against-a-structured-recall"),
        ("Résumé **notes**", "résumé-notes"),
    ],
)
def test_slug_is_githubs(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_check_catches_a_broken_file_and_a_broken_anchor(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# B page\n\n## Second part\n\n## Second part\n", "utf-8")
    (tmp_path / "a.md").write_text(
        "\n".join(
            [
                "# A",
                "[fine](docs/b.md) [fine](docs/b.md#second-part) [fine](docs/b.md#second-part-1)",
                "[fine](#a) [site](https://example.com/x#y) `[in code](missing.md)`",
                "```",
                "[in a fence](missing.md)",
                "```",
                "[gone](docs/c.md)",
                "[bad anchor](docs/b.md#third-part)",
                "[bad here](#nowhere)",
                "[def]: docs/missing.md",
            ]
        ),
        "utf-8",
    )
    problems = broken_links([tmp_path / "a.md", tmp_path / "docs" / "b.md"], tmp_path)
    assert [p.split(": ", 1)[1].split(" (")[0] for p in problems] == [
        "docs/c.md",
        "docs/b.md#third-part",
        "#nowhere",
        "docs/missing.md",
    ]
