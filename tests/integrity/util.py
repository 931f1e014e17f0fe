"""Helpers for integrity tests: hand-written memory files and index readers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from box_memory.format.model import TMP_PREFIX

ROOT = Path(__file__).resolve().parents[2]
_counter = [0]


def fake_id(n: int | None = None) -> str:
    """A valid-looking memory id (Crockford base32, 26 chars) that sorts by n."""
    if n is None:
        _counter[0] += 1
        n = _counter[0]
    return "mem_01J" + f"{n:023d}"


def write_md(
    folder: Path,
    *,
    title: str,
    kind: str = "note",
    slug: str | None = None,
    mem_id: str | None = None,
    status: str = "active",
    filename: str | None = None,
    extra: dict[str, Any] | None = None,
    body: str = "Body text.\n",
) -> tuple[str, Path]:
    """A memory file written the way another tool (the plugin, a person) would: no index update."""
    mem_id = mem_id or fake_id()
    slug = slug or title.lower().replace(" ", "-")
    meta: dict[str, Any] = {
        "id": mem_id,
        "slug": slug,
        "title": title,
        "kind": kind,
        "status": status,
        "team": "default",
        "created_at": "2026-05-22T18:32:00Z",
        "updated_at": "2026-05-22T18:32:00Z",
        **(extra or {}),
    }
    text = "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + body
    path = folder / (filename or f"{kind}__{slug}.md")
    path.write_text(text, encoding="utf-8")
    return mem_id, path


def index(root: Path, folder: str = "memories") -> dict[str, Any]:
    return json.loads((root / folder / "_index.json").read_bytes())


def entry_ids(root: Path, folder: str = "memories") -> list[str]:
    return [e["id"] for e in index(root, folder)["entries"]]


def all_json_parse(root: Path) -> list[Path]:
    """Every .json file under root (outside _archive); raises if one does not parse. A writer's
    temp file (`.bm-tmp-<hex>-_index.json`) is not a workspace file: a writer killed between
    creating and filling it leaves it empty, no reader opens it, and the next writer sweeps it."""
    found = []
    for p in root.rglob("*.json"):
        if "_archive" in p.parts or p.name.startswith(TMP_PREFIX):
            continue
        json.loads(p.read_bytes())
        found.append(p)
    return found


def bm(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """A real cold `python -m box_memory` process."""
    return subprocess.run(
        [sys.executable, "-m", "box_memory", *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def bm_json(*args: str, env: dict[str, str] | None = None, code: int | None = 0) -> dict[str, Any]:
    proc = bm(*args, "--json", env=env)
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError as e:  # pragma: no cover - shows the output on failure
        raise AssertionError(f"exit {proc.returncode}: {proc.stdout!r} {proc.stderr!r}") from e
    if code is not None:
        assert proc.returncode == code, (proc.returncode, out)
    return out
