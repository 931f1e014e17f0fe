"""A local recall, in a cold process, stays off the network stack and the heavy libraries."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.imports import NETWORK, imported_by


def _modules(tmp_path: Path, *args: str) -> set[str]:
    return imported_by(tmp_path, *args)[1]


def test_recall_imports_neither_mcp_nor_httpx(ws: Path, cli, tmp_path: Path) -> None:
    cli.json("write", "We decided to cache tokens.", "--title", "Token cache", "-w", str(ws))
    cold = _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")  # builds the cache
    warm = _modules(tmp_path, "recall", "token cache", "-w", str(ws), "--json")
    human = _modules(tmp_path, "recall", "tokens", "-w", str(ws))  # not a terminal: no rich
    for mods in (cold, warm, human):
        assert not mods & {*NETWORK, "pydantic", "rich"}, mods
    # A warm call answers from the cache: no YAML parser either.
    assert "yaml" not in warm
    assert "sqlite3" in warm


def test_write_on_a_local_workspace_stays_off_the_network_stack(ws: Path, tmp_path: Path) -> None:
    mods = _modules(tmp_path, "write", "Tokens expire hourly.", "--title", "Expiry", "-w", str(ws), "--json")
    assert not mods & NETWORK, mods
