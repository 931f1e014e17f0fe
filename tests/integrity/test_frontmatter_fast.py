"""The frontmatter fast path gives exactly what the safe YAML loader gives, or steps aside."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from box_memory.errors import InvalidFile
from box_memory.format import frontmatter

EXAMPLES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "plugin-examples"
FIXTURES = Path(__file__).parent.parent / "fixtures" / "plugin_workspace" / "memories"

# Scalars chosen to sit on every edge of YAML 1.1 resolution and quoting.
ATOMS = [
    "a", "yes", "No", "on", "OFF", "true", "null", "Null", "~", "123", "-5", "+7", "0", "012",
    "0x1F", "1_000", "12:30", "1.5", "-0.5", ".5", "1.", "1e3", "1.0e+3", ".inf", "-.inf", ".nan",
    "<<", "=", "a b", "a: b", "a:b", "x #y", "C#", "#x", "-x", "- x", "?x", ":x", "[x]", "{x}",
    "a,b", "it's", 'say "hi"', "ünï", "Companion — report.pdf", "back\\slash", "tab\there",
    "  lead", "trail  ", "&anc", "*ali", "!tag", "%p", "@a", "`b", "|", "> f", "'q'", '"q"', "",
    "mem_01HXYZA1B2C3D4E5F6G7H8J9K0", "2026-05-22T18:32:00Z", "2026-05-22", "a/b", "[[Title]]",
    "x]", "[y", "a  b", "y", "n", "NULL", "True", "0o17", "0b101", "-", "--", "a\x85b",
    "\ufeffx", "a\u2028b", "ü: x", "line\nbreak", "nbsp\xa0", "R&D", "50%", "a\\nb",
]  # fmt: skip
KEYS = [
    "id",
    "title",
    "kind",
    "tags",
    "related",
    "sources",
    "companion_for",
    "on",
    "yes",
    "null",
    "x-y",
    "_k",
]


def safe_load(text: str) -> tuple[str, object]:
    try:
        return "ok", yaml.load(text, Loader=frontmatter._Loader)
    except yaml.YAMLError:
        return "error", None


def _value(rng: random.Random, depth: int = 0) -> object:
    r = rng.random()
    if r < 0.5:
        return rng.choice(ATOMS) if rng.random() < 0.8 else rng.choice([1, 0.5, True, None, -3, 2.25])
    if r < 0.7 or depth:
        return [rng.choice(ATOMS) for _ in range(rng.randint(0, 3))]
    if r < 0.85:
        return {rng.choice(KEYS): rng.choice(ATOMS) for _ in range(rng.randint(1, 3))}
    return [{rng.choice(KEYS): rng.choice(ATOMS) for _ in range(rng.randint(1, 3))} for _ in range(2)]


def _texts(rng: random.Random) -> list[str]:
    """What box-memory writes (the dumper), plus hand-written plugin-style variants."""
    out = []
    meta = {rng.choice(KEYS): _value(rng) for _ in range(rng.randint(1, 6))}
    out.append(frontmatter.dump_yaml(meta))
    k, a, b = rng.choice(KEYS), rng.choice(ATOMS), rng.choice(ATOMS)
    out += [
        f"{k}: {a}\nzz:\n  - {b}\n  - {a}\n",
        f"{k}: [{a}, {b}]\n",
        f"{k}:\n  file_id: {a}\n  name: {b}\nq: {b}\n",
        f"{k}:\n- type: {a}\n  ref: {b}\n- {b}\n",
        f"{k}: '{a}'\n",
        f'{k}: "{a}"\n',
        f"{k}: {a} # comment\n",
        f"{k}:\n    deep: {a}\n",
    ]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_fast_path_matches_the_safe_loader_on_everything_it_accepts(seed: int) -> None:
    rng = random.Random(seed)
    accepted = 0
    for _ in range(2500):
        for text in _texts(rng):
            fast = frontmatter.fast_mapping(text)
            if fast is None:
                continue
            accepted += 1
            state, ref = safe_load(text)
            assert state == "ok", text
            assert repr(fast) == repr(ref), text  # repr: types too (True vs 1, 1.0 vs 1)
    assert accepted > 4000  # the fast path really is taken, not skipped


def _frontmatter_blocks() -> list[tuple[str, str]]:
    blocks = []
    for p in [*sorted(EXAMPLES.glob("example-*.md")), *sorted(FIXTURES.glob("*.md"))]:
        m = frontmatter._FM_RE.match(p.read_text(encoding="utf-8"))
        assert m, p
        blocks.append((p.name, m.group(1)))
    return blocks


@pytest.mark.parametrize(("name", "block"), _frontmatter_blocks())
def test_plugin_files_take_the_fast_path_with_identical_results(name: str, block: str) -> None:
    fast = frontmatter.fast_mapping(block)
    assert fast is not None, name
    assert repr(fast) == repr(safe_load(block)[1])


def test_what_box_memory_writes_takes_the_fast_path(cli, ws: Path) -> None:
    env = cli.json(
        "write", "Body.", "--title", "Café: naïve — 'quoted' #1", "--tag", "a/b", "--tag", "yes",
        "--related", "[[Other: thing]]", "--confidence", "0.75", "--source", "url:https://x.example/a?b=c#d",
        "--agent", "on", "-w", str(ws),
    )  # fmt: skip
    text = (ws / env["data"]["file"]).read_text(encoding="utf-8")
    block = frontmatter._FM_RE.match(text).group(1)
    fast = frontmatter.fast_mapping(block)
    assert fast is not None
    assert repr(fast) == repr(safe_load(block)[1])
    assert fast["title"] == "Café: naïve — 'quoted' #1" and fast["tags"] == ["a/b", "yes"]
    assert fast["confidence"] == 0.75 and fast["agent"] == "on"


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",  # anchors/aliases are refused by the safe path, never accepted here
        "a: !!python/object x\n",
        "a: [1, [2]]\n",
        "a: b: c\n",
        "a: 1\na: 2\n",
        "- a\n- b\n",
    ],
)
def test_anything_else_falls_back_to_the_safe_loader(text: str) -> None:
    assert frontmatter.fast_mapping(text) is None
    if "&" in text or "!" in text:
        with pytest.raises(InvalidFile):
            frontmatter.load_yaml(text, "t")
