"""The README as a newcomer follows it: its set-up line in a fresh HOME and a fresh copy of the
repository, then its five-command tour with the `box-memory` that set-up put on PATH. The commands
are read from README.md, not copied here."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def bash_block(after: str) -> list[str]:
    """The command lines of the first ```bash block after the heading/text `after`."""
    block = README.split(after, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def test_readme_blocks_have_the_expected_shape() -> None:
    setup, tests = bash_block("# box-memory")
    assert "pip install" in setup and "activate" in setup and "examples/quickstart.sh" in setup
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci.splitlines()  # CI runs exactly the README's test command
    tour = bash_block("## A five-command tour")
    assert len(tour) == 5 and all(ln.startswith("box-memory ") for ln in tour)


def _copy_repo(dest: Path) -> None:
    files = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _shell(script: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("BOX_", "VIRTUAL_ENV", "PYTEST", "PYTHON"))
    }
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
    )
    return subprocess.run(
        ["bash", "-c", "set -eo pipefail\n" + script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to list the repository's files")
@pytest.mark.slow
def test_readme_setup_and_tour_work_as_written(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    _copy_repo(repo)
    setup = bash_block("# box-memory")[0]
    tour = bash_block("## A five-command tour")

    # Set-up, then the first three tour commands, in the one shell the set-up activated.
    first = _shell("\n".join([setup, *tour[:3]]), repo, home)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert shutil.which("box-memory", path=str(repo / ".venv" / "bin"))
    # The quickstart's last line is a command to paste: it must work as printed.
    try_line = [ln for ln in first.stdout.splitlines() if ln.startswith("Try: ")][-1][len("Try: ") :]
    wrote = re.findall(r"^Wrote (mem_\w+) decision 'Auth strategy'", first.stdout, re.M)
    assert len(wrote) >= 2  # the quickstart's two, then the tour's
    old_id = wrote[-1]

    # A new shell: activate as the README says, paste the rest (the placeholder is the id above).
    rest = [ln.replace("mem_...", old_id) for ln in tour[3:]]
    second = _shell("\n".join([". .venv/bin/activate", try_line, *rest]), repo, home)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "Deploy window" in second.stdout
    assert re.search(rf"{old_id}\s+superseded", second.stdout)

    # The headline query now returns the superseding decision.
    headline = _shell(f". .venv/bin/activate\n{tour[2].split('#')[0]} --json", repo, home)
    hits = json.loads(headline.stdout)["data"]["hits"]
    assert hits and hits[0]["kind"] == "decision" and hits[0]["id"] != old_id
    assert hits[0]["title"] == "Auth strategy" and hits[0]["status"] == "active"
    assert (home / "Box" / "agent-memory" / "_box-memory.json").is_file()
