"""Every environment variable is read through box_memory.settings, at call time, with its default."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from box_memory import settings

PACKAGE = Path(__file__).resolve().parents[2] / "box_memory"


def _environ_reads(path: Path) -> list[int]:
    """Lines of `path` that touch os.environ or os.getenv."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr in ("environ", "getenv")
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    ]


def test_only_settings_reads_the_environment() -> None:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "settings.py":
            continue
        lines = _environ_reads(path)
        if lines:
            found[rel] = lines
    assert found == {}


def test_read_at_call_time_with_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BOX_MCP_URL", raising=False)
    assert settings.mcp_url() == "https://mcp.box.com/"
    monkeypatch.setenv("BOX_MCP_URL", "http://127.0.0.1:9/")
    assert settings.mcp_url() == "http://127.0.0.1:9/"

    monkeypatch.setenv("BOX_MEMORY_HOME", str(tmp_path / "h"))
    assert settings.home() == tmp_path / "h"
    monkeypatch.delenv("BOX_MEMORY_HOME")
    assert settings.home() is None

    monkeypatch.setenv("BOX_CLIENT_SECRET", "  ")
    assert settings.client_secret() is None  # blank is unset
    monkeypatch.setenv("BOX_CLIENT_SECRET", " s3cret ")
    assert settings.client_secret() == "s3cret"


@pytest.mark.parametrize(
    ("var", "value", "read", "expected"),
    [
        ("BOX_MEMORY_TOOL_TIMEOUT_S", "abc", settings.tool_timeout_s, 300.0),
        ("BOX_MEMORY_TOOL_TIMEOUT_S", "-1", settings.tool_timeout_s, 300.0),
        ("BOX_MEMORY_TOOL_TIMEOUT_S", "2.5", settings.tool_timeout_s, 2.5),
        ("BOX_MEMORY_PROGRESS_AFTER_S", "x", settings.progress_after_s, 1.0),
        ("BOX_MEMORY_PROGRESS_AFTER_S", "0", settings.progress_after_s, 0.0),
        ("BOX_MEMORY_LIST_LIMIT", "5000", settings.list_limit, 1000),
        ("BOX_MEMORY_LIST_LIMIT", "7", settings.list_limit, 7),
        ("BOX_MEMORY_LIST_LIMIT", "seven", settings.list_limit, 1000),
        ("BOX_MEMORY_CATALOGUE_CACHE", "0", settings.catalogue_cache, False),
        ("BOX_MEMORY_CATALOGUE_CACHE", "1", settings.catalogue_cache, True),
        ("BOX_MEMORY_LOCK_SETTLE_S", "-3", settings.lock_settle_s, 0.0),
    ],
)
def test_parsing(monkeypatch: pytest.MonkeyPatch, var: str, value: str, read, expected) -> None:
    monkeypatch.setenv(var, value)
    assert read() == expected


def test_lock_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("BOX_MEMORY_LOCK_STALE_S", "BOX_MEMORY_LOCK_WAIT_S", "BOX_MEMORY_LOCK_RENEW_S"):
        monkeypatch.delenv(var, raising=False)
    assert settings.lock_timing() == (30.0, 15.0, 10.0)
    assert not settings.lock_renew_set()
    monkeypatch.setenv("BOX_MEMORY_LOCK_STALE_S", "6")
    assert settings.lock_timing() == (6.0, 15.0, 2.0)
    monkeypatch.setenv("BOX_MEMORY_LOCK_RENEW_S", "0.5")
    assert settings.lock_timing()[2] == 0.5 and settings.lock_renew_set()


def test_injected_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOX_MEMORY_FAIL_READ", "a/b.md:2,bad,c.json:x,d.json:1")
    assert settings.injected_faults("read") == {"a/b.md": 2, "d.json": 1}
    assert settings.injected_faults("replace") == {}


def test_present_keeps_order_and_skips_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOX_MEMORY_WORKSPACE", "/w")
    monkeypatch.setenv("BOX_CLIENT_ID", "")
    assert settings.present(["BOX_CLIENT_ID", "BOX_MEMORY_WORKSPACE", "BOX_MEMORY_HOME"]) == {
        "BOX_MEMORY_WORKSPACE": "/w",
        "BOX_MEMORY_HOME": settings.present(["BOX_MEMORY_HOME"])["BOX_MEMORY_HOME"],
    }


def test_import_is_cheap() -> None:
    code = "import sys, json, box_memory.settings; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert {m for m in loaded if m.startswith("box_memory")} == {"box_memory", "box_memory.settings"}
    assert not loaded & {"orjson", "yaml", "pydantic", "httpx", "httpx2", "mcp", "platformdirs"}
