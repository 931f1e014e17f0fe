"""Shared fixtures: every test gets its own BOX_MEMORY_HOME and no inherited workspace env."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from box_memory.cli.app import app


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("bm-home")
    monkeypatch.setenv("BOX_MEMORY_HOME", str(home))
    # Tests change files in (emulated) Box behind the lock's back, as a person in the Box web app
    # would, and expect the very next command to see it: no Box folder listing is reused between
    # commands. tests/cloud/test_listing_reuse.py turns the reuse (on by default) back on.
    monkeypatch.setenv("BOX_MEMORY_LISTING_TRUST_S", "0")
    # Tokens go to the 0600 file, never into the keychain of the machine running the tests
    # (tests/auth/test_keychain.py installs its own keyring backend).
    monkeypatch.setenv("BOX_MEMORY_CREDENTIALS_STORE", "file")
    for var in (
        "BOX_MEMORY_WORKSPACE",
        "BOX_ACCESS_TOKEN",
        "BOX_MCP_URL",
        "BOX_CLIENT_ID",
        "BOX_CLIENT_SECRET",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def dev_zero_mode() -> Iterator[int]:
    """/dev/zero's mode before the test; put back after it if a regression changed it (as root a
    chmod through a link to /dev/zero succeeds, and would break every other program here)."""
    before = stat.S_IMODE(os.stat("/dev/zero").st_mode)
    yield before
    if stat.S_IMODE(os.stat("/dev/zero").st_mode) != before:
        os.chmod("/dev/zero", before)


@pytest.fixture(autouse=True)
def _no_held_recall_caches() -> Iterator[None]:
    """A test that runs the MCP server in-process turns on `serve`'s kept-open recall caches and
    parsed indexes for the whole process; drop them after each test so the next one sees the CLI's
    per-call ones."""
    yield
    from box_memory.recall.cache import close_held
    from box_memory.workspace.index import forget_parsed
    from box_memory.write.commit import keep_folders

    close_held()
    forget_parsed()
    keep_folders(None)


class Cli:
    """Runs the real Typer app in-process; `.json()` parses the envelope."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | bytes | None = None) -> Any:
        return self.runner.invoke(app, [str(a) for a in args], input=input, catch_exceptions=False)

    def json(self, *args: str, input: str | bytes | None = None, code: int | None = 0) -> dict[str, Any]:
        res = self(*args, "--json", input=input)
        try:
            env = json.loads(res.stdout)
        except json.JSONDecodeError as e:  # pragma: no cover - shows the output on failure
            raise AssertionError(f"not JSON (exit {res.exit_code}): {res.stdout!r} {res.stderr!r}") from e
        if code is not None:
            assert res.exit_code == code, (res.exit_code, env)
            assert env["exit_code"] == code
        return env


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture
def ws(tmp_path: Path, cli: Cli) -> Path:
    """A fresh local workspace (default layout, team 'default')."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root with its bytes (for byte-for-byte 'nothing changed' checks)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def snap() -> Callable[[Path], dict[str, bytes]]:
    return snapshot
