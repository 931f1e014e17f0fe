"""Fuzz: malformed index, config and frontmatter files never crash a command.

At least 200 generated files (a fixed seed, so a failure reproduces) are each put into a fresh
copy of a small workspace; recall, write, status and `index-rebuild --check` must each finish in
bounded time with exit 0, 1, 2 or 6, and never with an internal error (a traceback).
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SEED = 20261201
CASES_PER_KIND = 70  # x3 kinds = 210 files
CALL_LIMIT_S = 20.0
ALLOWED = {0, 1, 2, 6}

WEIRD: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    "",
    "x" * 5000,
    "../../outside",
    "a/b",
    "\x00\x1b[2J\u202e",
    [],
    [None],
    [[1, 2]],
    ["a", 3, {"b": 1}],
    {},
    {"a": [1, {"b": None}]},
    "2026-13-45T99:99:99Z",
    "not-a-date",
]


def _weird(rng: random.Random) -> Any:
    v = rng.choice(WEIRD)
    if rng.random() < 0.1:  # deep nesting
        for _ in range(rng.randint(5, 60)):
            v = [v] if rng.random() < 0.5 else {"k": v}
    return v


def _raw_mutation(rng: random.Random, raw: bytes) -> bytes:
    choice = rng.randrange(6)
    if choice == 0:
        return raw[: rng.randrange(len(raw))]  # truncated
    if choice == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))  # random bytes
    if choice == 2:
        pos = rng.randrange(len(raw))
        return raw[:pos] + b"\xff\xfe" + raw[pos:]  # not UTF-8
    if choice == 3:
        return b"[" * 5000 + b"]" * 5000  # deep nesting
    if choice == 4:
        return raw.replace(b"1", b"NaN", 1)
    return b""


def mutate_json(rng: random.Random, raw: bytes, keys: list[str]) -> bytes:
    if rng.random() < 0.3:
        return _raw_mutation(rng, raw)
    data = json.loads(raw)
    for _ in range(rng.randint(1, 3)):
        target = data
        if rng.random() < 0.6 and isinstance(data.get("entries"), list) and data["entries"]:
            target = rng.choice(data["entries"])
            if not isinstance(target, dict):
                continue
            key = rng.choice([*target.keys(), "tags", "slug", "title", "kind", "status", "supersedes"])
        else:
            key = rng.choice(keys)
        target[key] = _weird(rng)
    if rng.random() < 0.1:
        data = _weird(rng)
    return json.dumps(data).encode()


FM_KEYS = [
    "id",
    "slug",
    "title",
    "kind",
    "status",
    "team",
    "created_at",
    "updated_at",
    "tags",
    "supersedes",
    "superseded_by",
    "related",
    "confidence",
    "expires_at",
    "companion_for",
]


def mutate_frontmatter(rng: random.Random, raw: bytes) -> bytes:
    if rng.random() < 0.25:
        return _raw_mutation(rng, raw)
    text = raw.decode()
    head, _, body = text[4:].partition("\n---\n")
    lines = head.splitlines()
    choice = rng.randrange(5)
    if choice == 0:
        key = rng.choice(FM_KEYS)
        lines = [ln for ln in lines if not ln.startswith(key + ":")]
        lines.append(f"{key}: {json.dumps(_weird(rng))}")
    elif choice == 1:
        lines.append(
            "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b, *b, *b]"
        )
    elif choice == 2:
        lines.append("\ttabbed: : : [unclosed")
    elif choice == 3:
        return ("---\n" + "\n".join(lines) + "\n" + body).encode()  # unclosed frontmatter
    else:
        lines = [ln for ln in lines if not ln.startswith(rng.choice(["id:", "title:", "kind:"]))]
    return ("---\n" + "\n".join(lines) + "\n---\n" + body).encode()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from typer.testing import CliRunner

    from box_memory.cli.app import app

    root = tmp_path_factory.mktemp("fuzz") / "ws"
    runner = CliRunner()
    assert runner.invoke(app, ["init", "fuzz", "--path", str(root), "--team", "ops"]).exit_code == 0
    for title in ("Alpha plan", "Beta plan"):
        res = runner.invoke(
            app, ["write", f"{title} body.", "--title", title, "--tag", "plan", "-w", str(root)]
        )
        assert res.exit_code == 0, res.output
    return root


def cases() -> list[tuple[str, int]]:
    return [(kind, n) for kind in ("index", "config", "frontmatter") for n in range(CASES_PER_KIND)]


def _apply(kind: str, n: int, ws: Path) -> str:
    rng = random.Random(f"{SEED}-{kind}-{n}")
    if kind == "index":
        target = rng.choice([ws / "memories" / "_index.json", ws / "_index.json"])
        target.write_bytes(
            mutate_json(
                rng,
                target.read_bytes(),
                ["entries", "version", "by_slug", "by_title", "child_indexes", "folder_path", "entry_count"],
            )
        )
    elif kind == "config":
        target = ws / "_box-memory.json"
        target.write_bytes(
            mutate_json(
                rng,
                target.read_bytes(),
                ["teams", "settings", "capabilities", "folder_ids", "workspace_name", "backend"],
            )
        )
    else:
        target = rng.choice(sorted((ws / "memories").glob("*.md")))
        target.write_bytes(mutate_frontmatter(rng, target.read_bytes()))
    return str(target.relative_to(ws))


COMMANDS: list[Callable[[str], list[str]]] = [
    lambda w: ["recall", "plan", "-w", w],
    lambda w: ["write", "Fuzz body.", "--title", "Fuzz note", "-w", w],
    lambda w: ["status", "-w", w],
    lambda w: ["index-rebuild", "--check", "-w", w],
]


@pytest.mark.slow
def test_malformed_files_never_crash_a_command(template: Path, tmp_path: Path, cli) -> None:
    all_cases = cases()
    assert len(all_cases) >= 200
    failures: list[str] = []
    for kind, n in all_cases:
        ws = tmp_path / f"{kind}-{n}"
        shutil.copytree(template, ws)
        changed = _apply(kind, n, ws)
        for make in COMMANDS:
            args = make(str(ws))
            t0 = time.monotonic()
            res = cli(*args, "--json")
            took = time.monotonic() - t0
            try:
                env = json.loads(res.stdout)
            except json.JSONDecodeError:
                failures.append(f"{kind}#{n} {changed} {args[0]}: not JSON: {res.stdout[:200]!r}")
                continue
            codes = [e.get("code") for e in env.get("errors", [])]
            if res.exit_code not in ALLOWED or "internal_error" in codes or took > CALL_LIMIT_S:
                failures.append(
                    f"{kind}#{n} {changed} {args[0]}: exit {res.exit_code} in {took:.1f}s {env.get('errors')}"
                )
        shutil.rmtree(ws)
    assert failures == [], "\n".join(failures[:20])
