"""A workspace a reviewer would look at: three agents over several weeks, supersede chains, a
stale companion, a Box Brain candidate awaiting review, and a hostile title. Past weeks are memory
files in the plugin's format (dated by their frontmatter), indexed by `index-rebuild`; the rest is
written through the real CLI. `python -m tests.audit.demo DIR` builds one for a look."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

from box_memory.format import frontmatter
from tests.helpers.corpus import mem_id

HOSTILE = "<img src=x onerror=\"alert(1)\"> & <script>alert(2)<script> 'quoted'"
AGENTS = ("claude-code", "codex", "release-bot")
TOPICS = [
    ("decision", "Auth tokens", "We decided to use short-lived JWTs for the mobile clients."),
    ("fact", "Redis version", "Production Redis runs 7.2."),
    ("decision", "Deploy pipeline", "We decided deploys go through the CI pipeline only."),
    ("observation", "Checkout latency", "p99 checkout latency doubled after the cache change."),
    ("task", "Rotate keys", "- [ ] rotate the signing keys"),
    ("reference", "Runbook", "The on-call runbook lives in the wiki."),
]


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def past_memories(ws: Path, now: dt.datetime) -> list[dict[str, Any]]:
    """Memory files over the last eight weeks; every third topic is superseded once, later."""
    made: list[dict[str, Any]] = []
    serial = 1
    for week in range(8, 0, -1):
        for i, (kind, title, body) in enumerate(TOPICS[: 2 + week % 4]):
            at = now - dt.timedelta(weeks=week, hours=i * 5)
            agent = AGENTS[(week + i) % 3]
            t = f"{title} (week {week})"
            made.append(_file(ws, serial, kind, t, body, agent, at))
            serial += 1
    # Chains: a decision rewritten twice, another once.
    for title, times in (("Cache policy", 3), ("Session store", 2)):
        prev: dict[str, Any] | None = None
        for k in range(times):
            at = now - dt.timedelta(weeks=6 - 2 * k, hours=1)
            cur = _file(ws, serial, "decision", title, f"{title}, take {k + 1}.", AGENTS[k % 3], at, k)
            serial += 1
            if prev is not None:
                _link(ws, prev, cur)
            prev = cur
            made.append(cur)
    return made


def _file(
    ws: Path, serial: int, kind: str, title: str, body: str, agent: str, at: dt.datetime, take: int = 0
) -> dict[str, Any]:
    from box_memory.format.ids import slugify

    slug = slugify(title) + (f"-{take + 1}" if take else "")
    meta = {
        "id": mem_id(10**12 + serial),
        "slug": slug,
        "title": title,
        "aliases": [title],
        "kind": kind,
        "status": "active",
        "team": "default",
        "agent": agent,
        "created_at": _iso(at),
        "updated_at": _iso(at),
        "sources": [{"type": "url", "ref": f"https://example.com/notes/{serial}"}],
    }
    rel = f"memories/{kind}__{slug}.md"
    (ws / rel).write_text(frontmatter.render(meta, f"# {title}\n\n> {body}\n"), encoding="utf-8")
    return {"meta": meta, "rel": rel}


def _link(ws: Path, old: dict[str, Any], new: dict[str, Any]) -> None:
    om, nm = old["meta"], new["meta"]
    om.update(status="superseded", superseded_by=nm["id"], updated_at=nm["created_at"])
    frontmatter.drop_alias(om, nm["title"])
    nm["supersedes"] = [om["id"]]
    for item in (old, new):
        body = frontmatter.parse((ws / item["rel"]).read_text())[1]
        (ws / item["rel"]).write_text(frontmatter.render(item["meta"], body), encoding="utf-8")


def build(ws: Path, cli: Any, tmp: Path) -> dict[str, Any]:
    """Initialise `ws` and fill it (the caller's BOX_MEMORY_HOME holds the Box Brain)."""
    from tests.brain.helpers import put, sync

    cli.json("init", "review-demo", "--path", str(ws))
    now = dt.datetime.now(dt.UTC)
    past = past_memories(ws, now)
    cli.json("index-rebuild", "-w", str(ws))
    w = ["-w", str(ws)]
    a = cli.json(
        "write",
        "We decided the API gateway verifies JWTs.",
        "--title",
        "Gateway auth",
        "--agent",
        "claude-code",
        "--source",
        "url:https://example.com/adr/7",
        *w,
    )["data"]
    cli.json(
        "write",
        "We decided sessions stay in Redis.",
        "--supersedes",
        a["id"],
        "--agent",
        "codex",
        "--source",
        "box_file:123456",
        *w,
    )
    cli.json(
        "write",
        "We decided the title is data.",
        "--title",
        HOSTILE,
        "--kind",
        "decision",
        "--agent",
        "release-bot",
        *w,
    )
    cli.json(
        "write",
        "Deploys go through the Jenkins pipeline.",
        "--title",
        "Jenkins deploy pipeline",
        "--kind",
        "decision",
        "--agent",
        "codex",
        *w,
    )
    (ws / "files").mkdir(exist_ok=True)
    (ws / "files" / "plan.pdf").write_bytes(b"%PDF-1.4 plan v1\n")
    cli.json("companion", "files/plan.pdf", "--body", "The Q3 plan.", *w)
    (ws / "files" / "plan.pdf").write_bytes(b"%PDF-1.4 plan v2, changed since the review\n")
    drive = tmp / "Box"
    put(drive, "platform-update.md", "Platform update.\n\nThe Jenkins deploy pipeline is now retired.\n")
    sync(cli, "--path", str(drive), *w)
    return {"past": past, "gateway": a}


if __name__ == "__main__":  # pragma: no cover - a workspace to look at
    import os

    from tests.conftest import Cli

    target = Path(sys.argv[1]).resolve()
    os.environ.setdefault("BOX_MEMORY_HOME", str(target.parent / (target.name + "-home")))
    build(target, Cli(), target.parent)
    print(target)
