"""`serve --transport streamable-http` answers only its own origin (and callers that send none)
unless told otherwise, and with a token set, only callers that present it.

A spawned server on 127.0.0.1, real HTTP requests, the real `mcp` client.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import Cli
from tests.helpers.net import INITIALIZE, MCP_HEADERS
from tests.server.helpers import ServedHttp, call, serve_argv, server_env

TOKEN = "serve-token-for-the-test-7Hq2"  # the point of the test


@contextmanager
def serving(
    ws: Path, tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[tuple[str, int]]:
    server = ServedHttp(ws, tmp_path, *args, env=env)
    try:
        with server:
            yield server.url, server.port
    finally:
        assert TOKEN.encode() not in server.err  # never logged


def status_of(url: str, **headers: str) -> int:
    res = httpx2.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}, timeout=10)
    return int(res.status_code)


def test_only_the_servers_own_origin_may_call_it(ws: Path, tmp_path: Path) -> None:
    with serving(ws, tmp_path) as (url, port):
        assert status_of(url) == 200  # no Origin: a program, not a web page
        assert status_of(url, origin=f"http://127.0.0.1:{port}") == 200
        assert status_of(url, origin=f"http://localhost:{port}") == 200
        # A page served by any other local program (another port), or from anywhere else.
        assert status_of(url, origin=f"http://localhost:{port + 1}") == 403
        assert status_of(url, origin=f"http://127.0.0.1:{port - 1}") == 403
        assert status_of(url, origin="http://evil.example") == 403
        assert status_of(url, origin="null") == 403
        # DNS rebinding: a Host that is not this server.
        assert status_of(url, host=f"evil.example:{port}") == 421


def test_allow_origin_adds_the_origins_named(ws: Path, tmp_path: Path) -> None:
    args = ("--allow-origin", "HTTP://LocalHost:3000/", "--allow-origin", "https://app.example:443")
    with serving(ws, tmp_path, *args) as (url, _port):
        assert status_of(url, origin="http://localhost:3000") == 200
        assert status_of(url, origin="https://app.example") == 200
        assert status_of(url, origin="http://localhost:3001") == 403


async def _status_with(url: str, headers: dict[str, str]) -> dict[str, Any]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        return await call(client, "status", {})


@pytest.mark.parametrize("how", ["env", "token-env"])
def test_a_token_is_required_when_one_is_set(ws: Path, tmp_path: Path, how: str) -> None:
    if how == "env":
        args: tuple[str, ...] = ()
        env = {"BOX_MEMORY_SERVE_TOKEN": TOKEN}
    else:
        args, env = ("--token-env", "MY_SERVE_TOKEN"), {"MY_SERVE_TOKEN": TOKEN}
    with serving(ws, tmp_path, *args, env=env) as (url, port):
        assert status_of(url) == 401
        assert status_of(url, authorization="Bearer wrong-token-wrong-token") == 401
        assert status_of(url, authorization=f"Bearer {TOKEN}x") == 401
        assert status_of(url, authorization=f"Basic {TOKEN}") == 401
        assert status_of(url, authorization=f"Bearer {TOKEN}") == 200
        # The token does not open the door to other origins.
        assert status_of(url, authorization=f"Bearer {TOKEN}", origin=f"http://localhost:{port + 1}") == 403
        st = anyio.run(_status_with, url, {"Authorization": f"Bearer {TOKEN}"})
        assert st["status"] == "ok"


def test_no_token_by_default(ws: Path, tmp_path: Path) -> None:
    with serving(ws, tmp_path) as (url, _port):
        st = anyio.run(_status_with, url, {})
        assert st["status"] == "ok"


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (("--token-env", "NOT_SET_ANYWHERE"), {}, "NOT_SET_ANYWHERE is not set"),
        (("--token-env", "bad name"), {}, "is not an environment variable name"),
        ((), {"BOX_MEMORY_SERVE_TOKEN": "short"}, "is 5 characters; use at least 16"),
        ((), {"BOX_MEMORY_SERVE_TOKEN": "has spaces in the token"}, "printable ASCII without spaces"),
        (("--allow-origin", "http://x.example/path"), {}, "is not an origin"),
        (("--allow-origin", "ftp://x.example"), {}, "is not an origin"),
        (("--allow-origin", "http://x.example:70000"), {}, "out of range"),
    ],
)
def test_bad_guard_settings_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], words: str
) -> None:
    # A child process: a server that wrongly starts is a timeout here, not a hung test run.
    res = subprocess.run(
        serve_argv("--transport", "streamable-http", "--port", "0", *args, "--json"),
        cwd=tmp_path,
        env={**server_env(), **env},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert res.returncode == 2, res
    message = json.loads(res.stdout)["errors"][0]["message"]
    assert words in message, message
    for value in env.values():
        assert value not in message  # the token itself is never shown


def test_guard_options_need_the_http_transport(cli: Cli) -> None:
    res = cli.json("serve", "--transport", "stdio", "--allow-origin", "http://localhost:3000", code=2)
    assert "streamable-http only" in res["errors"][0]["message"]
