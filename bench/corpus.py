"""Deterministic benchmark corpus: N real memory files across folders and teams, with valid indexes.

Usage: python bench/corpus.py --n 10000 --out /tmp/bm-corpus/ws-10k [--seed 7] [--teams 4]

The same (n, seed, teams) always gives byte-identical memory files (ids and timestamps are derived
from the seed, not the clock); only the indexes' own `updated_at` stamps differ between runs.
Files are written directly (no per-file fsync: this is a scratch corpus), then every folder index
is built with `box_memory.workspace.index` functions and saved through the store, then the rollup, so the
result is exactly what `index-rebuild` would produce and no index looks stale.

About 5% of the memories are superseded by a later one (append-only chains), so recall's hiding
of superseded memories is exercised. Bodies follow the format spec's per-kind sections and draw
words from a Zipf-like vocabulary (a few very common words, many rare ones), so body queries have
realistic document frequencies. `manifest.json` at the root lists probe values (an id, a title, a
slug, a tag, a rare body word...) that `recall_bench.py` queries.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from box_memory.format import frontmatter
from box_memory.format.ids import slugify
from box_memory.format.model import Memory, index_entry
from box_memory.maintenance.init import init_workspace
from box_memory.store.local import LocalStore
from box_memory.workspace.index import FolderIndex, refresh_rollup, save_index

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
KIND_WEIGHTS = {"decision": 30, "fact": 20, "task": 15, "observation": 15, "reference": 10, "note": 10}
TEAM_NAMES = ["platform", "payments", "mobile", "data", "security", "growth", "infra", "support"]

# Topic words carry titles and tags; they also appear in bodies.
TOPICS = [
    "auth", "jwt", "sessions", "oauth", "sso", "saml", "login", "token", "refresh", "rotation",
    "keys", "secrets", "vault", "kms", "postgres", "mysql", "redis", "kafka", "rabbitmq", "queue",
    "retry", "backoff", "idempotency", "webhook", "grpc", "rest", "graphql", "cache", "cdn",
    "latency", "throughput", "p99", "slo", "sla", "alerting", "paging", "oncall", "incident",
    "postmortem", "rollback", "rollout", "canary", "feature-flags", "migration", "schema", "index",
    "sharding", "replication", "backup", "restore", "terraform", "kubernetes", "helm", "docker",
    "ci", "cd", "pipeline", "release", "versioning", "semver", "changelog", "billing", "invoices",
    "stripe", "payments", "refunds", "ledger", "reconciliation", "tax", "currency", "pricing",
    "mobile", "ios", "android", "push", "notifications", "offline", "sync", "deeplinks",
    "onboarding", "signup", "churn", "search", "ranking", "embeddings", "analytics", "warehouse",
    "dbt", "airflow", "etl", "dashboards", "metrics", "logging", "tracing", "gdpr", "retention",
    "encryption", "audit", "compliance", "soc2", "pii", "consent", "access-control", "rbac",
    "permissions"
]  # fmt: skip

COMMON = [
    "the", "we", "to", "and", "of", "a", "in", "for", "is", "that", "it", "on", "with", "as",
    "this", "be", "are", "was", "will", "our", "by", "from", "at", "not", "have", "an", "or",
    "which", "when", "should", "can", "if", "but", "they", "all", "more", "new", "team", "use",
    "need", "after", "before", "also"
]  # fmt: skip

FILLER = [
    "service", "client", "server", "request", "response", "error", "timeout", "limit", "config",
    "default", "change", "plan", "week", "month", "quarter", "customer", "user", "data", "system",
    "process", "review", "owner", "risk", "cost", "option", "approach", "problem", "result", "test",
    "staging", "production", "region", "cluster", "node", "worker", "job", "batch", "window",
    "budget", "target", "baseline", "trade-off", "constraint", "dependency", "vendor", "contract",
    "support", "ticket", "release", "deadline", "scope"
]  # fmt: skip

VERBS = [
    "decided", "agreed", "chose", "measured", "found", "noticed", "confirmed", "rejected",
    "proposed", "shipped", "moved"
]  # fmt: skip
KIND_SECTIONS = {
    "decision": ("## Decision", "## Why"),
    "fact": ("## Fact", "## Source"),
    "task": ("## Task",),
    "observation": ("## Observation",),
    "reference": ("## Reference",),
    "note": ("## Notes",),
}


def _rare_words(rng: random.Random, n: int) -> list[str]:
    """Pronounceable made-up words (codenames, component names): the long tail of a real corpus."""
    cons, vows = "bcdfghklmnprstvz", "aeiou"
    out: set[str] = set()
    while len(out) < n:
        k = rng.randint(2, 4)
        out.add("".join(rng.choice(cons) + rng.choice(vows) for _ in range(k)) + rng.choice("nrsxl"))
    return sorted(out)


def _ulid(rng: random.Random, ms: int) -> str:
    value = (ms << 80) | rng.getrandbits(80)
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class Words:
    """Zipf-like sampler over common + topic + filler + rare words."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.rare = _rare_words(rng, 4000)
        vocab = COMMON + TOPICS + FILLER + self.rare
        self.vocab = vocab
        self.cum = list(itertools.accumulate(1.0 / (r + 1) ** 0.9 for r in range(len(vocab))))

    def sentence(self, extra: list[str]) -> str:
        rng = self.rng
        words = rng.choices(self.vocab, cum_weights=self.cum, k=rng.randint(8, 18))
        for w in extra:
            words.insert(rng.randrange(len(words) + 1), w)
        s = " ".join(words)
        return s[0].upper() + s[1:] + "."

    def paragraph(self, topics: list[str], n: int) -> str:
        return " ".join(
            self.sentence([self.rng.choice(topics)] if self.rng.random() < 0.5 else []) for _ in range(n)
        )


def _body(w: Words, kind: str, title: str, topics: list[str]) -> str:
    rng = w.rng
    parts = [f"# {title}", "", f"> {w.sentence(topics[:1])}", "", "## Context", "", w.paragraph(topics, 3)]
    for section in KIND_SECTIONS[kind]:
        parts += ["", section, ""]
        if kind == "task":
            parts += [f"- [{rng.choice(' x')}] {w.sentence([])}" for _ in range(rng.randint(2, 5))]
        else:
            parts.append(f"We {rng.choice(VERBS)} " + w.paragraph(topics, rng.randint(2, 4)))
    parts += ["", "## Related", "", f"- [[{rng.choice(TOPICS).title()} overview]]"]
    parts += ["", "## Open questions", "", f"- {w.sentence(topics[-1:])}", ""]
    return "\n".join(parts)


def generate(n: int, out: Path, *, seed: int = 7, teams: int = 4) -> dict[str, Any]:
    """Write the corpus under `out` (must not exist). Returns the manifest."""
    if out.exists():
        raise SystemExit(f"{out} exists; pick a new folder")
    rng = random.Random(seed)
    w = Words(rng)
    team_names = TEAM_NAMES[:teams]
    out.mkdir(parents=True)
    store = LocalStore(out.resolve())
    ws, _ = init_workspace(store, f"bench-{n}", teams=team_names, layout="sibling")
    kinds = list(KIND_WEIGHTS)
    kind_w = list(KIND_WEIGHTS.values())
    base = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    entries: dict[str, list[dict[str, Any]]] = {}
    taken: dict[str, set[str]] = {}
    live_by_folder: dict[str, list[Memory]] = {}
    mems: dict[str, Memory] = {}
    manifest: dict[str, Any] = {"n": n, "seed": seed, "teams": team_names}
    started = time.perf_counter()
    for i in range(n):
        # 40% in the default scope, the rest spread over the teams.
        scope = None if not team_names or rng.random() < 0.4 else rng.choice(team_names)
        folder = ws.memories_folder(scope)
        kind = rng.choices(kinds, weights=kind_w)[0]
        topics = rng.sample(TOPICS, 3)
        rare = rng.choice(w.rare[::2])  # odd-indexed rare words stay out of titles: body-only probes
        title = f"{topics[0].replace('-', ' ').capitalize()} {rng.choice(FILLER)} {rare} {topics[1]}"
        when = base + dt.timedelta(minutes=7 * i + rng.randint(0, 5), milliseconds=rng.randint(0, 999))
        stamp = _iso(when)
        slug = slugify(title)
        seen = taken.setdefault(folder, set())
        if slug in seen:
            k = 2
            while f"{slug}-{k}" in seen:
                k += 1
            slug = f"{slug}-{k}"
        seen.add(slug)
        tags = sorted({topics[0], topics[2], *rng.sample(TOPICS, rng.randint(0, 2))})
        meta: dict[str, Any] = {
            "id": f"mem_{_ulid(rng, int(when.timestamp() * 1000))}",
            "slug": slug,
            "title": title,
            "kind": kind,
            "status": "active",
            "team": ws.team_of(scope),
            "agent": "bench",
            "created_at": stamp,
            "updated_at": stamp,
            "tags": tags,
        }
        body = _body(w, kind, title, topics)
        mem = Memory(meta, body, f"{folder}/{kind}__{slug}.md")
        live = live_by_folder.setdefault(folder, [])
        if live and rng.random() < 0.05:
            # Supersede an earlier memory of this folder: bookkeeping as `write --supersedes` does.
            old = live.pop(rng.randrange(len(live)))
            old.meta.update(status="superseded", superseded_by=meta["id"], updated_at=stamp)
            meta["supersedes"] = [old.id]
        live.append(mem)
        mems[mem.id] = mem
        entries.setdefault(folder, []).append(meta)
        if i == n // 2:
            manifest.update(
                probe_id=meta["id"],
                probe_title=title,
                probe_slug=slug,
                probe_rare=rare,
                probe_body_word=w.rare[-1],  # never in a title; in ~0.5% of bodies
            )
    # Write every file once, after supersession bookkeeping settled its final frontmatter.
    for folder, metas in entries.items():
        idx_entries = []
        for meta in metas:
            mem = mems[meta["id"]]
            data = frontmatter.render(mem.meta, mem.body).encode("utf-8")
            (out / mem.path).write_bytes(data)
            filename = mem.path.rsplit("/", 1)[1]
            idx_entries.append(index_entry(mem, filename=filename, file_id=None, size_bytes=len(data)))
        idx = FolderIndex(folder, {"version": 1, "folder_id": None, "entries": idx_entries})
        save_index(ws, idx)
    refresh_rollup(ws)
    manifest["seconds"] = round(time.perf_counter() - started, 1)
    manifest["folders"] = {f: len(v) for f, v in entries.items()}
    (out / "manifest.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--teams", type=int, default=4)
    a = ap.parse_args()
    m = generate(a.n, a.out, seed=a.seed, teams=a.teams)
    print(f"{a.n} memories in {m['seconds']} s -> {a.out}  folders: {m['folders']}")


if __name__ == "__main__":
    main()
