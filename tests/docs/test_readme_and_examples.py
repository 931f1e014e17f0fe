"""docs/cli-reference.md matches --help, every command has --help, examples run green."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer.main

from box_memory.cli.app import app

ROOT = Path(__file__).resolve().parents[2]


def _reference_module():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cli_reference_is_current() -> None:
    mod = _reference_module()
    assert mod.TARGET == ROOT / "docs" / "cli-reference.md"
    page = mod.TARGET.read_text(encoding="utf-8")
    drifted = "docs/cli-reference.md drifted: run `python scripts/cli_reference.py --write`"
    assert mod.render() == page, drifted


def test_cli_reference_has_every_command_and_its_help() -> None:
    page = (ROOT / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#{2,} `(box-memory [^`]+)`$", page, re.M))
    assert headings == {" ".join(["box-memory", *p]) for p in _all_commands() if p}
    assert page.count("Usage: box-memory ") == len(headings)


def test_cli_reference_check_fails_on_a_stale_page(tmp_path: Path) -> None:
    """`--check` exits 1 on a page that no longer matches the commands, 0 on the current one."""
    mod = _reference_module()
    stale = tmp_path / "cli-reference.md"
    stale.write_text(mod.render().replace("Usage: box-memory recall", "Usage: box-memory recal"), "utf-8")
    mod.TARGET = stale
    assert mod.main(["--check"]) == 1
    stale.write_text(mod.render(), "utf-8")
    assert mod.main(["--check"]) == 0


def _all_commands() -> list[list[str]]:
    root = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        out.append(path)
        if isinstance(cmd, click.Group):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])

    walk(root, [])
    return out


@pytest.mark.parametrize("path", _all_commands(), ids=lambda p: " ".join(p) or "box-memory")
def test_every_command_has_help(cli, path: list[str]) -> None:
    res = cli(*path, "--help")
    assert res.exit_code == 0
    assert "Usage:" in res.stdout


def test_readme_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = readme.split("```bash", 1)[1].split("```", 1)[0]
    assert "pip install -e '.[dev]'" in first_block and "examples/quickstart.sh" in first_block
    assert ".venv/bin/pytest -n 2" in first_block
    ci = (ROOT / ".ci" / "run").read_text()
    assert ".venv/bin/pytest -n 2" in ci  # CI runs exactly the README's test command


EXAMPLES = sorted((ROOT / "examples").glob("*.sh"))
SLOW_EXAMPLES = {"cloud_emulator.sh"}  # starts the Box MCP emulator and runs every command through it


@pytest.mark.parametrize(
    "script",
    [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_EXAMPLES else p for p in EXAMPLES],
    ids=lambda p: p.name,
)
def test_example_runs_green(script: Path, tmp_path: Path) -> None:
    bindir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
        "PYTHON": sys.executable,
        "BOX_MEMORY": f"{sys.executable} -m box_memory",
        "BOX_MEMORY_HOME": str(tmp_path / "home"),
    }
    for var in ("BOX_MEMORY_WORKSPACE", "BOX_ACCESS_TOKEN", "BOX_MCP_URL"):
        env.pop(var, None)
    res = subprocess.run(
        ["bash", str(script), str(tmp_path / "demo")],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "error:" not in res.stderr


def test_lazy_entry_point_knows_every_command() -> None:
    """main() builds only the invoked command from COMMAND_MODULES: it must name them all."""
    from box_memory.cli import app as app_module

    root = typer.main.get_command(app_module.app)
    assert isinstance(root, click.Group)
    assert set(app_module.COMMAND_MODULES) == set(root.commands)
    for name, module in app_module.COMMAND_MODULES.items():
        lean = typer.main.get_command(app_module.build_app([module]))
        assert isinstance(lean, click.Group) and name in lean.commands


def test_cold_version_and_help_via_the_console_entry_point() -> None:
    for args, needle in ((["--version"], "box-memory "), (["recall", "--help"], "box-memory recall")):
        res = subprocess.run(
            [sys.executable, "-m", "box_memory", *args], capture_output=True, text=True, check=False
        )
        assert res.returncode == 0 and needle in res.stdout


def test_version_does_not_import_the_network_stack() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['box-memory', '--version']\n"
        "from box_memory.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('mcp', 'httpx', 'httpx2', 'anyio', 'pydantic') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("box-memory ")
