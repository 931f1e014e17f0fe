"""One workspace helper over both backends: a local folder, or a Box folder behind the emulator.

The cloud side is the real thing end to end: the real CLI (in-process Typer runner), the real MCP
client over real HTTP, and the emulator serving a local folder as Box. One emulator serves a
whole test session (per xdist worker); each test configures the answer shape it wants and gets
its own workspace folder, so tests stay independent and the suite stays fast.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.emulator.testing import running_emulator
from box_memory.store.cloud import CloudStore, close_all, open_cloud_store
from tests.conftest import Cli

TOKEN = "cloud-test-token-3f9a"  # a fixture token the emulator accepts

SHAPES: dict[str, dict[str, str]] = {
    "cloud": {"paging": "marker", "shape": "structured", "ids": "string"},
    "cloud-offset": {"paging": "offset", "shape": "structured", "ids": "string"},
    "cloud-text": {"paging": "marker", "shape": "text", "ids": "string"},
    "cloud-numeric": {"paging": "marker", "shape": "structured", "ids": "number"},
    "cloud-offset-text-numeric": {"paging": "offset", "shape": "text", "ids": "number"},
    # Tool catalogue snapshots (box_memory/emulator/catalogues/, each citing its source).
    "cloud-older": {"paging": "marker", "shape": "structured", "ids": "string", "catalogue": "older"},
    "cloud-newer": {"paging": "offset", "shape": "structured", "ids": "string", "catalogue": "newer"},
}
FULL = ["local", "cloud"]
DEFAULTS: dict[str, Any] = {
    "paging": "marker",
    "shape": "structured",
    "ids": "string",
    "latency_ms": 0,
    "error_rate": 0.0,
    "drop_rate": 0.0,
    "disabled_tools": (),
    "hidden_tools": (),
    "search_lag_s": 0,
    "retry_after_s": 0,
    "total_skew": 0,
    "short_pages": False,
    "page_cap": 0,
    "ignore_offset": False,
    "fail_later_pages": False,
    "content_pending": 0,
    "content_inexact": False,
    "user": "full",
    "upload_text_only": False,
    "shared_links": (),
    "external_collaborators": (),
    "catalogue": "today",
    "download_ttl_s": 900,
}


@pytest.fixture(scope="session")
def box_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    root = tmp_path_factory.mktemp("box-server") / "box"
    with running_emulator(root, token=TOKEN, retry_after_s=0) as emu:
        yield emu


@pytest.fixture
def emu(box_server: Emulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Emulator]:
    """The session's emulator, reset to the default shape, with the CLI pointed at it."""
    if not box_server.running:
        box_server.start()
    box_server.configure(**DEFAULTS)
    box_server.set_tokens([TOKEN])
    monkeypatch.setenv("BOX_MCP_URL", box_server.url)
    monkeypatch.setenv("BOX_ACCESS_TOKEN", TOKEN)
    monkeypatch.setenv("BOX_MEMORY_LOCK_SETTLE_S", "0")
    box_server.reset_calls()
    yield box_server
    if not box_server.running:
        box_server.start()
    box_server.configure(**DEFAULTS)
    box_server.set_tokens([TOKEN])


@dataclass
class Backend:
    """A workspace on one backend, driven through the real CLI with `--json`."""

    kind: str  # "local" or a key of SHAPES
    cli: Cli
    root: Path  # the workspace folder on disk (for cloud: inside the emulator's served folder)
    name: str
    emu: Emulator | None = None
    spec: str = ""
    init_data: dict[str, Any] = field(default_factory=dict)

    @property
    def cloud(self) -> bool:
        return self.kind != "local"

    def init(self, *extra: str) -> dict[str, Any]:
        if self.cloud:
            env = self.cli.json("init", self.name, "--parent", "0", *extra)
        else:
            env = self.cli.json("init", self.name, "--path", str(self.root), *extra)
        self.spec = env["data"]["workspace"]
        self.init_data = env["data"]
        return env

    def raw(self, *args: str, input: str | bytes | None = None) -> Any:
        return self.cli(*args, "-w", self.spec, "--json", input=input)

    def run(self, *args: str, code: int | None = 0, input: str | bytes | None = None) -> dict[str, Any]:
        """One command on this workspace; returns the parsed envelope (exit code checked)."""
        res = self.raw(*args, input=input)
        try:
            env = json.loads(res.stdout)
        except json.JSONDecodeError as e:  # pragma: no cover - shows the output on failure
            raise AssertionError(
                f"{self.kind} {args}: not JSON (exit {res.exit_code}): {res.output!r}"
            ) from e
        if code is not None:
            assert res.exit_code == code, (self.kind, args, res.exit_code, env)
        return env

    def data(self, *args: str, input: str | bytes | None = None) -> dict[str, Any]:
        data: dict[str, Any] = self.run(*args, input=input)["data"]
        return data

    def path(self, rel: str) -> Path:
        return self.root / rel

    def put(self, rel: str, data: bytes, *, mtime: float | None = None) -> None:
        """Place a file in the workspace behind the tool's back (a user dropping a binary in)."""
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if mtime is not None:
            os.utime(p, (mtime, mtime))


def make_backend(kind: str, tmp_path: Path, cli: Cli, emu: Emulator | None) -> Backend:
    name = f"ws-{uuid.uuid4().hex[:8]}"
    if kind == "local":
        return Backend(kind, cli, tmp_path / "local" / name, name)
    assert emu is not None
    emu.configure(**SHAPES[kind])
    return Backend(kind, cli, emu.fs.root / name, name, emu=emu)


@pytest.fixture
def make(tmp_path: Path, cli: Cli, request: pytest.FixtureRequest) -> Any:
    """`make(kind)` -> an initialised Backend (the emulator is only started for cloud kinds)."""

    def build(kind: str, *init_args: str) -> Backend:
        server = request.getfixturevalue("emu") if kind != "local" else None
        if kind not in ("local", "cloud"):
            # Alternative answer shapes also page every listing (3 entries a page).
            request.getfixturevalue("monkeypatch").setenv("BOX_MEMORY_LIST_LIMIT", "3")
        b = make_backend(kind, tmp_path, cli, server)
        b.init(*init_args)
        return b

    return build


@pytest.fixture(params=FULL)
def bk(request: pytest.FixtureRequest, make: Any) -> Backend:
    """The full suite's workspace: local, and cloud in the default answer shape."""
    backend: Backend = make(request.param)
    return backend


@pytest.fixture
def cloud(make: Any) -> Backend:
    """A workspace on the cloud backend, in the default answer shape (a module overrides this to
    seed files or set its own listing limits first)."""
    backend: Backend = make("cloud")
    return backend


@pytest.fixture
def store(cloud: Backend) -> Iterator[CloudStore]:
    """The cloud store of the module's `cloud` workspace, opened directly (no CLI in between)."""
    s = open_cloud_store(cloud.spec.removeprefix("box:"))
    try:
        yield s
    finally:
        close_all()
