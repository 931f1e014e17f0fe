"""Hand-built workspaces for recall tests: real memory files and real indexes, exact control over
titles, slugs, tags and timestamps (the CLI derives slugs and stamps the clock, which ranking tests
must pin)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from box_memory.format import frontmatter
from box_memory.maintenance.regenerate import rebuild
from box_memory.paths import user_dirs
from box_memory.recall.cache_db import remove_db
from box_memory.workspace.resolve import open_workspace
from tests.helpers.corpus import mem_id

_SEQ = [0]


def put(
    root: Path,
    title: str,
    body: str = "",
    *,
    n: int,
    slug: str | None = None,
    kind: str = "note",
    tags: list[str] | None = None,
    status: str = "active",
    folder: str = "memories",
    team: str | None = None,
    updated: str | None = None,
    **extra: Any,
) -> str:
    """Write one memory file (no index update: call `reindex`). Returns its id."""
    from box_memory.format.ids import slugify

    slug = slug or slugify(title)
    stamp = updated or f"2026-01-{(n % 28) + 1:02d}T10:00:00.000Z"
    meta: dict[str, Any] = {
        "id": mem_id(n),
        "slug": slug,
        "title": title,
        "kind": kind,
        "status": status,
        "team": team or (folder.split("/")[1] if folder.startswith("teams/") else "default"),
        "created_at": stamp,
        "updated_at": stamp,
    }
    if tags:
        meta["tags"] = tags
    meta.update(extra)
    text = body or f"Notes about {title}."
    path = root / folder / f"{kind}__{slug}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(frontmatter.render(meta, f"# {title}\n\n{text}\n"), encoding="utf-8")
    return str(meta["id"])


def reindex(root: Path) -> None:
    """Regenerate every folder index from its files, then the rollup (what index-rebuild does)."""
    rebuild(open_workspace(str(root)))


def set_setting(root: Path, key: str, value: Any) -> None:
    cfg = root / "_box-memory.json"
    data = json.loads(cfg.read_text())
    data.setdefault("settings", {})[key] = value
    cfg.write_text(json.dumps(data, indent=2))


def ids(env: dict[str, Any]) -> list[str]:
    return [h["id"] for h in env["data"]["hits"]]


def cache_files() -> list[Path]:
    """The recall caches of this test's user (one per workspace recalled)."""
    d = user_dirs().recall_cache_dir
    return sorted(d.glob("*.sqlite3")) if d.exists() else []


def drop_caches() -> None:
    """Delete every recall cache of this test's user, its WAL files too: the next recall is cold."""
    for f in cache_files():
        remove_db(str(f))
