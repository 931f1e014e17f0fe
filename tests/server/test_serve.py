"""`box-memory serve` end to end: the real `mcp` client against a spawned server, stdio and HTTP."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

from tests.conftest import Cli
from tests.server.helpers import TOOL_NAMES, ServedHttp, call, exercise, fails, serve_argv, server_env


def stdio_params(ws: Path | str, cwd: Path) -> StdioServerParameters:
    argv = serve_argv("--transport", "stdio", "-w", str(ws))
    return StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(), cwd=cwd)


def test_stdio_end_to_end(ws: Path, cli: Cli, tmp_path: Path) -> None:
    async def main() -> None:
        async with Client(stdio_params(ws, tmp_path)) as client:
            assert client.server_info is not None and client.server_info.name == "box-memory"
            assert "untrusted" in (client.instructions or "")
            await exercise(client, ws, cli)

    anyio.run(main)


def test_streamable_http_end_to_end(ws: Path, cli: Cli, tmp_path: Path) -> None:
    with ServedHttp(ws, tmp_path) as server:

        async def main() -> None:
            async with Client(server.url) as client:
                await exercise(client, ws, cli)
            # Stateless HTTP: a second client (a new session) sees the same workspace.
            async with Client(server.url) as client:
                st = await call(client, "status", {})
                assert st["data"]["totals"]["companions"] == 1

        anyio.run(main)
    err = server.err
    assert server.proc.returncode == 130, err
    assert b"Traceback" not in err
    assert f"http://127.0.0.1:{server.port}/mcp" in err.decode()  # announced on stderr


def test_initialize_answers_before_the_workspace_exists(cli: Cli, tmp_path: Path) -> None:
    """Start-up never opens the workspace: a missing one is the first tool call's error, and the
    server picks the workspace up once it exists."""
    ws = tmp_path / "later"

    async def main() -> None:
        async with Client(stdio_params(ws, tmp_path)) as client:
            assert not ws.exists()
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == TOOL_NAMES
            err = await fails(client, "status", {}, "workspace_not_found")
            assert err["exit_code"] == 3
            await fails(client, "recall", {"query": "anything"}, "workspace_not_found")
            cli.json("init", "--path", str(ws))
            st = await call(client, "status", {})
            assert st["data"]["workspace"]["root"] == str(ws.resolve())
            assert st["data"]["totals"]["memories"] == 0

    anyio.run(main)


def test_busy_port_is_one_clear_line(ws: Path, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        res = subprocess.run(
            serve_argv("--transport", "streamable-http", "--port", str(port), "-w", str(ws)),
            cwd=tmp_path,
            env=server_env(),
            capture_output=True,
            timeout=30,
            check=False,
        )
    assert res.returncode == 1
    lines = res.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0], lines


def test_bad_transport_is_a_usage_error(cli: Cli) -> None:
    env = cli.json("serve", "--transport", "sse", code=2)
    assert env["errors"][0]["code"] == "invalid_input" and "stdio" in env["errors"][0]["message"]
