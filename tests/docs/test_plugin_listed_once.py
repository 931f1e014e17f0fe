"""Claude Code lists the plugin's MCP server once, inside a clone of this repository (where a
project `.mcp.json` would add a second, unapproved copy) and outside it alike. The real `claude`
CLI installs the plugin as docs/mcp-clients.md says, then `claude mcp list` is read in both places."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.test_plugin import ROOT, SECTION, _claude


@pytest.mark.slow
def test_claude_code_lists_the_server_once_inside_and_outside_the_clone(tmp_path: Path) -> None:
    claude = _claude()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env["HOME"] = str(tmp_path / "home")  # a fresh user: no settings, no marketplaces
    # `claude mcp list` starts each server to check it: the box-memory this test runs is on PATH.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [claude, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
        )

    for line in re.findall(r"^claude (plugin .+?)\s*(?:#.*)?$", SECTION, re.M):
        res = run(*line.split(), cwd=ROOT)
        assert res.returncode == 0, (line, res.stdout, res.stderr)
    for where in (ROOT, elsewhere):
        res = run("mcp", "list", cwd=where)
        assert res.returncode == 0, res.stdout + res.stderr
        listed = [ln for ln in res.stdout.splitlines() if "box-memory serve" in ln]
        assert len(listed) == 1, (where, res.stdout)
        assert listed[0].startswith("plugin:box-memory:box-memory:"), res.stdout
