"""What the README and the quick start promise a newcomer holds: the demo workspace `init` calls
"the default" is the default in the next command, and the API memory tool's install line is one
that can work (the package is installed from a clone, not from an index that lacks it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _env(home: Path) -> dict[str, str]:
    """A user's shell: a HOME of their own, no box-memory variables (so no BOX_MEMORY_HOME)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BOX_", "XDG_"))}
    env["HOME"] = str(home)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def test_quickstart_leaves_the_demo_as_the_default_it_says_it_is(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**_env(home), "BOX_MEMORY": f"{sys.executable} -m box_memory"}
    demo = subprocess.run(
        ["bash", str(ROOT / "examples" / "quickstart.sh"), str(tmp_path / "demo")],
        env=env, capture_output=True, text=True, timeout=180, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "(now the default)" in demo.stdout
    # The next command in that shell, with no -w, finds the demo workspace.
    res = subprocess.run(
        [sys.executable, "-m", "box_memory", "recall", "deploy window"],
        env=_env(home), capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Deploy window" in res.stdout
    assert not (tmp_path / "demo" / ".home").exists()


def test_the_memory_tool_install_line_installs_from_a_clone() -> None:
    assert "pip install 'box-memory[anthropic]'" not in README.replace(
        "`pip install 'box-memory[anthropic]'` finds nothing", ""
    )
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    lines = re.findall(r"pip install '([^']+)\[(\w+)\]'", README)
    assert lines, "README names no install of the anthropic extra"
    for target, extra in lines:
        assert extra in extras
        if target != "box-memory":
            assert target.startswith(("/", ".")), target  # a path to a clone, which pip can install
    assert "not published on PyPI" in README
    assert (
        "environment your\napplication runs in" in README or "environment your application runs in" in README
    )
