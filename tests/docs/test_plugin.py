"""The Claude Code plugin as shipped: manifest, marketplace and MCP server entry agree with the
files and commands that exist, docs/mcp-clients.md documents the exact entry, and the real `claude`
CLI (npm package @anthropic-ai/claude-code) validates and installs it offline."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import click
import pytest
import typer.main

from box_memory.cli.app import app
from box_memory.serve.tools import TOOLS

ROOT = Path(__file__).resolve().parents[2]
# The page the README sends users to for installing the plugin (the whole page is the section).
PAGE = (ROOT / "docs" / "mcp-clients.md").read_text(encoding="utf-8")
HEADING = "# Use it from Claude Code / Claude Desktop / any MCP client\n"
SECTION = PAGE.split(HEADING, 1)[1] if PAGE.startswith(HEADING) else ""


def _load(rel: str) -> dict:
    return json.loads((ROOT / rel).read_text(encoding="utf-8"))


def _servers() -> dict:
    """The plugin's MCP servers, declared inline in its manifest."""
    return {"mcpServers": _load(".claude-plugin/plugin.json")["mcpServers"]}


def test_manifest_marketplace_and_mcp_entry_agree_with_what_exists() -> None:
    manifest = _load(".claude-plugin/plugin.json")
    market = _load(".claude-plugin/marketplace.json")
    assert market["owner"]["name"] and market["name"] == "box-memory"
    [entry] = [p for p in market["plugins"] if p["name"] == manifest["name"]]
    assert (ROOT / entry["source"]).resolve() == ROOT
    assert entry.get("version", manifest["version"]) == manifest["version"]
    assert (ROOT / manifest["skills"]).is_dir()

    assert isinstance(manifest["mcpServers"], dict)  # inline: no file a project config also reads
    assert not (ROOT / ".mcp.json").exists()
    servers = _servers()["mcpServers"]
    server = servers["box-memory"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert server["command"] in scripts  # the console script pip/pipx/uv install
    root = typer.main.get_command(app)
    assert isinstance(root, click.Group)
    cmd = root.commands[server["args"][0]]
    flags = {o for p in cmd.params for o in p.opts}
    assert all(a in flags for a in server["args"][1:] if a.startswith("-"))


def test_docs_document_the_install_and_the_exact_entry() -> None:
    assert SECTION.strip(), "docs/mcp-clients.md lacks its 'Use it from Claude Code' heading"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/mcp-clients.md)" in readme  # the README sends readers there
    blocks = re.findall(r"```json\n(.*?)```", SECTION, re.S)
    assert json.loads(blocks[0]) == _servers()
    desktop = json.loads(blocks[1])["mcpServers"]["box-memory"]
    assert os.path.isabs(desktop["command"]) and desktop["command"].endswith("/box-memory")
    assert desktop["args"] == _servers()["mcpServers"]["box-memory"]["args"]
    market = _load(".claude-plugin/marketplace.json")
    assert f"claude plugin install box-memory@{market['name']}" in SECTION
    assert "claude plugin marketplace add" in SECTION
    for tool in TOOLS:
        assert f"`{tool.name}`" in SECTION, tool.name
    assert "/box-mcp-check" in SECTION


def _claude() -> str:
    """The `claude` CLI: on PATH, else installed once from npm into a cache folder."""
    found = shutil.which("claude")
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed, so the claude CLI cannot be installed")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "box-memory-tests" / "claude"
    exe = cache / "bin" / "claude"
    if not exe.exists():
        res = subprocess.run(
            [npm, "install", "-g", "--prefix", str(cache), "@anthropic-ai/claude-code"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if res.returncode != 0:
            pytest.skip(f"npm could not install @anthropic-ai/claude-code: {res.stderr.strip()[-300:]}")
    if subprocess.run([str(exe), "--version"], capture_output=True, check=False).returncode != 0:
        pkg = cache / "lib" / "node_modules" / "@anthropic-ai" / "claude-code"
        subprocess.run(["node", "install.cjs"], cwd=pkg, capture_output=True, check=False, timeout=300)
    if subprocess.run([str(exe), "--version"], capture_output=True, check=False).returncode != 0:
        pytest.skip("the claude CLI installed from npm does not run on this machine")
    return str(exe)


@pytest.mark.slow
def test_claude_cli_validates_and_installs_the_plugin(tmp_path: Path) -> None:
    claude = _claude()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env["HOME"] = str(tmp_path)  # a fresh user: no settings, no marketplaces

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [claude, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180, check=False
        )

    for target in (".", ".claude-plugin/plugin.json"):
        res = run("plugin", "validate", target)
        assert res.returncode == 0 and "Validation passed" in res.stdout, res.stdout + res.stderr
    # The page's install lines, as written (run from the repository, as the page says).
    for line in re.findall(r"^claude (plugin .+?)\s*(?:#.*)?$", SECTION, re.M):
        res = run(*line.split())
        assert res.returncode == 0, (line, res.stdout, res.stderr)
    res = run("plugin", "list", "--json")
    [plugin] = [p for p in json.loads(res.stdout) if p["id"] == "box-memory@box-memory"]
    assert plugin["enabled"] is True
    assert plugin["mcpServers"] == _servers()["mcpServers"]
    installed = Path(plugin["installPath"])
    assert {p.parent.name for p in installed.glob("skills/*/SKILL.md")} >= {"box-mcp-check", "box-recall"}
