"""A cloud command's start-up: the CLI talks to Box through its own MCP wire (box/mcp_http.py), so
a command run against the emulator over real HTTP never imports the `mcp` SDK or pydantic (the
SDK's import alone took about 0.9 s of a command's start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from box_memory.emulator import Emulator
from tests.cloud.conftest import TOKEN, Backend

SLOW = ("mcp", "mcp_types", "pydantic", "pydantic_core", "jsonschema", "starlette", "uvicorn")
PROBE = """
import json, sys
from box_memory.cli.app import main
watch = set(json.loads(sys.argv[2]))
sys.argv = ["box-memory", *json.loads(sys.argv[1])]
code = None
try:
    main()
except SystemExit as exit:
    code = exit.code
slow = sorted(m for m in sys.modules if m.split(".")[0] in watch)
print("\\n" + json.dumps({"code": code, "slow": slow}))
"""


@pytest.mark.parametrize(
    "args",
    [("status",), ("recall", "JWT"), ("write", "Tokens expire after an hour.", "--title", "Token expiry")],
)
def test_cloud_commands_do_not_import_the_mcp_sdk(make: Any, emu: Emulator, args: tuple[str, ...]) -> None:
    cloud: Backend = make("cloud")
    cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens")
    emu.reset_calls()
    env = {**os.environ, "BOX_MCP_URL": emu.url, "BOX_ACCESS_TOKEN": TOKEN}
    argv = [*args, "-w", cloud.spec, "--json"]
    res = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv), json.dumps(SLOW)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    probe = json.loads(res.stdout.strip().splitlines()[-1])
    assert probe["code"] in (0, None), res.stdout[-2000:] + res.stderr[-2000:]
    assert probe["slow"] == []
    assert emu.counters.get("rpc:initialize") == 1  # it did talk to the emulator, over HTTP
    assert emu.calls, "no tool call reached the emulator"
