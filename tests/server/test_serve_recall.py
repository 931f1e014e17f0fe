"""A long-lived `serve` answers recall exactly as the CLI does, and sees every change at once.

The server keeps the workspace and its recall cache open between calls; these tests drive it over
stdio with the real `mcp` client and compare each answer with a fresh CLI process's `--json` data
(the `cache` figures aside: they describe how the answer was reached, not the answer).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from box_memory.serve.server import in_tool_terms
from box_memory.serve.tools import RecallArgs
from tests.conftest import Cli
from tests.recall.helpers import mem_id, put, reindex
from tests.server.helpers import call, fails, serve_argv, server_env


def stdio_params(ws: Path, cwd: Path) -> StdioServerParameters:
    argv = serve_argv("--transport", "stdio", "-w", str(ws))
    return StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(), cwd=cwd)


def corpus(cli: Cli, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "eng")
    ids = {
        "jwt": put(
            root, "JWT rotation policy", "We rotate signing keys every 90 days with kafka retry.",
            n=1, kind="decision", tags=["auth", "auth/jwt"], updated="2026-01-05T10:00:00.000Z",
        ),
        "old": put(
            root, "Session store", "Sessions lived in memcached.", n=2, kind="decision", tags=["auth"],
            status="superseded", superseded_by=mem_id(6), updated="2026-01-02T10:00:00.000Z",
        ),
        "canary": put(
            root, "Canary rollout steps", "Roll out to one percent, watch the p99, then backoff.",
            n=3, kind="fact", tags=["rollout"], folder="teams/eng/memories",
            updated="2026-01-07T10:00:00.000Z",
        ),
        "body": put(
            root, "Quarterly planning", "The zuzufen migration slipped to next quarter.", n=4,
            kind="note", updated="2026-01-03T10:00:00.000Z",
        ),
        "retry": put(
            root, "Kafka retry and backoff", "Consumers retry with exponential backoff.", n=5,
            kind="decision", tags=["kafka"], folder="teams/eng/memories",
            updated="2026-01-06T10:00:00.000Z",
        ),
    }  # fmt: skip
    # The superseded memory's successor, sharing its slug's topic.
    ids["new"] = put(
        root, "Session store in redis", "Sessions now live in redis.", n=6, kind="decision",
        tags=["auth"], supersedes=[ids["old"]], updated="2026-01-04T10:00:00.000Z",
    )  # fmt: skip
    reindex(root)
    return root, ids


def shapes(ids: dict[str, str]) -> list[dict[str, Any]]:
    """Every query shape recall has, and the options that change what it returns."""
    return [
        {"query": ids["jwt"]},  # memory id
        {"query": ids["old"]},  # a superseded id: leads to its current memory
        {"query": "[[JWT rotation policy]]"},  # wikilink
        {"query": "[[jwt rotation policy]]"},  # case-insensitive wikilink
        {"query": "[[No such memory]]"},  # dangling
        {"query": "jwt-rotation-policy"},  # slug
        {"query": "session-store"},  # an old slug
        {"query": "kind:decision tag:auth"},  # structured
        {"query": "tag:auth", "tags": ["auth/jwt"]},
        {"query": "team:eng"},
        {"query": "status:superseded"},
        {"query": "kind:decision", "since": "2026-01-04", "until": "2026-01-05"},
        {"query": "rotation policy"},  # title words
        {"query": "what did we decide about kafka retry"},  # question
        {"query": "rollout canary retry backoff"},  # several topics
        {"query": "zuzufen"},  # a body-only word
        {"query": "session", "include_superseded": True},
        {"query": "session", "limit": 1},
        {"query": "auth", "kind": "decision", "team": "default"},
        {"query": "canary", "full": True},
        {"query": "nothing matches this"},
    ]


def cli_args(args: dict[str, Any], ws: Path) -> list[str]:
    out = [args["query"], "-w", str(ws)]
    for key, value in args.items():
        if key == "query":
            continue
        if key == "tags":
            for t in value:
                out += ["--tag", t]
        elif value is True:
            out.append("--" + key.replace("_", "-"))
        else:
            out += ["--" + key, str(value)]
    return out


def without_cache(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "cache"}


async def same_as_cli(client: Client, cli: Cli, ws: Path, args: dict[str, Any]) -> dict[str, Any]:
    served = await call(client, "recall", args)
    env = cli.json("recall", *cli_args(args, ws))
    assert without_cache(served["data"]) == without_cache(env["data"]), args
    # The same warnings, naming the tool's parameters where the CLI names its flags.
    assert served["warnings"] == [in_tool_terms(w, RecallArgs) for w in env["warnings"]], args
    return served


@pytest.mark.slow
def test_serve_answers_every_shape_like_the_cli(cli: Cli, tmp_path: Path) -> None:
    ws, ids = corpus(cli, tmp_path)
    cases = shapes(ids)

    async def main() -> None:
        async with Client(stdio_params(ws, tmp_path)) as client:
            counts = [len((await same_as_cli(client, cli, ws, args))["data"]["hits"]) for args in cases]
            # Only the dangling wikilink and the last query find nothing.
            assert [i for i, n in enumerate(counts) if n == 0] == [4, len(cases) - 1], counts
            # The second round is answered from the cache kept open, checked but not re-read.
            for args in cases:
                served = await same_as_cli(client, cli, ws, args)
                cache = served["data"]["cache"]
                assert cache["kept_open"] is True and cache["rebuilt"] is False, cache
                assert cache["reread_folders"] == 0 and cache["reread_files"] == 0, cache
            await fails(client, "recall", {"query": "kind:opinion"}, "invalid_input")

    anyio.run(main)


@pytest.mark.slow
def test_serve_sees_every_change_at_once(cli: Cli, tmp_path: Path) -> None:
    """Writes through the server, writes by another process, a hand edit plus index-rebuild and a
    new team in the config: the next recall through the same server reflects each one."""
    ws, ids = corpus(cli, tmp_path)
    w = ("-w", str(ws))

    async def main() -> None:
        async with Client(stdio_params(ws, tmp_path)) as client:
            await same_as_cli(client, cli, ws, {"query": "kafka"})
            args = {"content": "Use mTLS between services.", "title": "Service mesh mTLS"}
            wrote = (await call(client, "write", args))["data"]
            found = await same_as_cli(client, cli, ws, {"query": "mtls"})
            assert [h["id"] for h in found["data"]["hits"]] == [wrote["id"]]
            assert found["data"]["cache"]["reread_folders"] == 0  # the write updated the cache

            # Another process writes, and supersedes the memory the server just wrote.
            other = cli.json(
                "write", "Use SPIFFE ids for mTLS.", "--title", "Service mesh identity",
                "--supersedes", wrote["id"], *w,
            )["data"]  # fmt: skip
            found = await same_as_cli(client, cli, ws, {"query": "mtls"})
            assert [h["id"] for h in found["data"]["hits"]] == [other["id"]]
            await same_as_cli(client, cli, ws, {"query": wrote["id"]})

            # A file dropped in by hand is found once index-rebuild has indexed it.
            put(ws, "Hand written runbook", "Restart the zanzibar queue.", n=40, kind="reference")
            cli.json("index-rebuild", *w)
            found = await same_as_cli(client, cli, ws, {"query": "zanzibar"})
            assert [h["title"] for h in found["data"]["hits"]] == ["Hand written runbook"]

            # A team created by another process: the server re-reads the changed config.
            await fails(client, "recall", {"query": "team:ops"}, "invalid_input")
            cli.json("team", "create", "ops", *w)
            cli.json(
                "write", "Pager rota lives in the ops wiki.", "--title", "Pager rota", "--team", "ops", *w
            )
            found = await same_as_cli(client, cli, ws, {"query": "team:ops"})
            assert [h["title"] for h in found["data"]["hits"]] == ["Pager rota"]

            # The recall cache deleted under the running server (the CLI then builds a new one):
            # the server's open copy is still checked against the folders on every call.
            caches = list((Path(os.environ["BOX_MEMORY_HOME"]) / "cache" / "recall").glob("*"))
            assert caches
            for f in caches:
                f.unlink()
            cli.json("write", "Deploys freeze on Fridays.", "--title", "Deploy freeze", *w)
            found = await same_as_cli(client, cli, ws, {"query": "deploy freeze"})
            assert [h["title"] for h in found["data"]["hits"]] == ["Deploy freeze"]
            await same_as_cli(client, cli, ws, {"query": ids["jwt"]})

    anyio.run(main)


def test_the_tool_catalogue_is_built_once() -> None:
    """A stateless HTTP client lists the tools before every call: the schemas are not rebuilt."""
    from box_memory.serve.server import MemoryServer
    from box_memory.serve.tools import TOOLS

    server = MemoryServer()

    async def main() -> None:
        first = await server._on_list_tools(None, None)
        again = await server._on_list_tools(None, None)
        assert [t.name for t in first.tools] == [t.name for t in TOOLS]
        assert all(a is b for a, b in zip(first.tools, again.tools, strict=True))

    anyio.run(main)


def test_the_sdk_gets_each_tools_input_schema_without_listing_the_catalogue() -> None:
    """Streamable HTTP checks `Mcp-Param-*` headers against the called tool's input schema before
    every call: the server hands it over directly (else the SDK runs and serializes `tools/list`)."""
    from box_memory.serve.server import MemoryServer
    from box_memory.serve.tools import TOOLS

    server = MemoryServer()
    low = server.build()

    async def main() -> None:
        listed = {t.name: t.input_schema for t in (await server._on_list_tools(None, None)).tools}
        for spec in TOOLS:
            assert low.get_tool_input_schema(spec.name) == listed[spec.name]
        assert low.get_tool_input_schema("no_such_tool") is None

    anyio.run(main)
