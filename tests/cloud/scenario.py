"""One scripted session over every command, and a normaliser that makes two runs comparable.

The same script runs on a local workspace and on a cloud one; after normalising what must differ
(fresh memory ids become M1, M2... in order of appearance, times, Box ids, durations, the root,
the backend name, cache statistics) the two transcripts must be equal: that is the parity proof.
"""

from __future__ import annotations

import re
from typing import Any

from tests.cloud.conftest import Backend

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 64 + b"\n%%EOF\n"
PDF2 = b"%PDF-1.7\n" + bytes(range(255, -1, -1)) * 64 + b"\n%%EOF\n"
EXTERNAL = (
    "---\nid: mem_01HZZZZZZZZZZZZZZZZZZZZZZZ\nslug: external-note\ntitle: External note\nkind: note\n"
    "status: active\ncreated_at: '2025-01-02T03:04:05.000Z'\nupdated_at: '2025-01-02T03:04:05.000Z'\n"
    "tags: [imported]\n---\n# External note\n\nDropped in by another tool.\n"
)

EXTERNAL_MTIME = 1735787045.0  # its updated_at: an old file, dropped in by a sync
MEM_ID = re.compile(r"mem_[0-9A-HJKMNP-TV-Z]{26}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
# Keys whose values differ by backend or run by design.
DROP = {
    "duration_ms",
    "file_id",
    "cache",
    "root",
    "backend",
    "workspace",
    "tier",
    "refresh_ms",
    "folder_id",
    "index_file_id",
    "lock",
    "index_bytes",  # a Box index also records its folder's and its own Box ids
}


class Normaliser:
    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def _mem(self, m: re.Match[str]) -> str:
        return self.ids.setdefault(m.group(0), f"M{len(self.ids) + 1}")

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self(v, k) for k, v in value.items() if k not in DROP}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            if value.isdigit() and len(value) >= 10:
                return "<box-id>"
            return MEM_ID.sub(self._mem, TIME.sub("<time>", value))
        return value


def run_script(b: Backend) -> list[tuple[str, int, Any, list[str]]]:
    """Every command once (and the interesting failures): [(label, exit code, data, warnings)]."""
    out: list[tuple[str, int, Any, list[str]]] = []

    def step(label: str, *args: str, code: int = 0, input: str | bytes | None = None) -> dict[str, Any]:
        env = b.run(*args, code=code, input=input)
        out.append((label, env["exit_code"], {"data": env["data"], "errors": env["errors"]}, env["warnings"]))
        return env

    a = step(
        "write A",
        "write",
        "We decided to use JWT for auth tokens. Sessions last one hour.",
        "--title",
        "Auth tokens",
        "--tag",
        "auth",
        "--tag",
        "security",
    )["data"]["id"]
    step(
        "write B",
        "write",
        "Redis caches the session lookups.",
        "--title",
        "Session cache",
        "--kind",
        "fact",
        "--tag",
        "perf",
        "--tag",
        "auth/cache",
    )
    step(
        "write C",
        "write",
        "TODO: rotate the signing keys every quarter",
        "--title",
        "Rotate keys",
        "--tag",
        "security",
    )
    step("duplicate refused", "write", "again", "--title", "Auth tokens", code=1)
    step("write from stdin", "write", "-", "--title", "Onboarding notes", input="Read the wiki first.\n")
    a2 = step(
        "supersede A",
        "write",
        "We decided to use PASETO instead of JWT.",
        "--title",
        "Auth tokens",
        "--supersedes",
        a,
    )["data"]["id"]
    step(
        "supersede A2",
        "write",
        "We decided to use PASETO v4 local tokens.",
        "--title",
        "Auth tokens",
        "--supersedes",
        a2,
    )
    step("get history", "get", a, "--history")
    step("get wikilink", "get", "[[Auth tokens]]")
    step("get slug", "get", "session-cache")
    step("get missing", "get", "no-such-slug", code=1)
    for label, query, extra in [
        ("recall id", a, []),
        ("recall wikilink", "[[Session cache]]", []),
        ("recall dangling", "[[Nope]]", []),
        ("recall slug", "rotate-keys", []),
        ("recall structured", "kind:decision tag:auth", []),
        ("recall filters", "keys", ["--kind", "task", "--tag", "security"]),
        ("recall free text", "auth", []),
        ("recall body", "quarter", []),
        ("recall superseded", "jwt", ["--include-superseded"]),
        ("recall full", "session cache", ["--full"]),
        ("recall none", "zebra", []),
    ]:
        step(label, "recall", query, *extra)
    step("recall bad", "recall", "x", "--limit", "0", code=2)

    step("team create", "team", "create", "research")
    step(
        "team write",
        "write",
        "Compare three vector stores.",
        "--title",
        "Research plan",
        "--team",
        "research",
        "--tag",
        "plan",
    )
    step("recall team", "recall", "team:research")
    step("team ls", "team", "ls")
    step("team inspect", "team", "inspect", "research")

    b.put("files/report.pdf", PDF)
    step("companion missing", "companion", "files/report.pdf", "--check", code=6)
    step("companion create", "companion", "files/report.pdf", "--tag", "q3")
    step("companion current", "companion", "files/report.pdf", "--check")
    step("companion unchanged", "companion", "files/report.pdf")
    b.put("files/report.pdf", PDF2)
    step("companion stale", "companion", "files/report.pdf", "--check", code=6)
    step("companion stale list", "companion", "--stale", code=6)
    step("companion regenerate", "companion", "files/report.pdf", "--body", "The Q3 report, second draft.")
    step("companion current again", "companion", "files/report.pdf", "--check")
    step("recall companion", "recall", "report.pdf")

    step("rebuild check clean", "index-rebuild", "--check")
    step("status", "status")
    b.put("memories/note__external-note.md", EXTERNAL.encode(), mtime=EXTERNAL_MTIME)
    step("rebuild check drift", "index-rebuild", "--check", code=6)
    step("recall sees drift", "recall", "external")
    step("rebuild", "index-rebuild")
    step("rebuild check after", "index-rebuild", "--check")
    step("recall after rebuild", "recall", "external")
    step("status after", "status", "--check-indexes")
    return out


def run_core(b: Backend) -> list[tuple[str, int, Any, list[str]]]:
    """The core subset every answer shape must get right: write, supersede, get, recall, check."""
    out: list[tuple[str, int, Any, list[str]]] = []

    def step(label: str, *args: str, code: int = 0) -> dict[str, Any]:
        env = b.run(*args, code=code)
        out.append((label, env["exit_code"], {"data": env["data"], "errors": env["errors"]}, env["warnings"]))
        return env

    a = step("write A", "write", "We decided to use JWT.", "--title", "Auth tokens", "--tag", "auth")["data"][
        "id"
    ]
    for n in range(4):  # enough files that a 3-entry page size pages every listing
        step(
            f"write {n}",
            "write",
            f"Fact number {n} about caching.",
            "--title",
            f"Cache fact {n}",
            "--kind",
            "fact",
            "--tag",
            "perf",
        )
    step("duplicate refused", "write", "again", "--title", "Auth tokens", code=1)
    step("supersede", "write", "We decided to use PASETO.", "--title", "Auth tokens", "--supersedes", a)
    step("get history", "get", a, "--history")
    for label, query in [
        ("recall id", a),
        ("recall wikilink", "[[Auth tokens]]"),
        ("recall slug", "cache-fact-2"),
        ("recall structured", "kind:fact tag:perf"),
        ("recall text", "caching"),
    ]:
        step(label, "recall", query)
    step("rebuild check", "index-rebuild", "--check")
    step("status", "status")
    return out


def normalise(transcript: list[tuple[str, int, Any, list[str]]]) -> list[tuple[str, int, Any, list[str]]]:
    n = Normaliser()
    return [(label, code, n(data), [n(w) for w in warnings]) for label, code, data, warnings in transcript]
