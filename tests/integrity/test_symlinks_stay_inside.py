"""Symbolic links never take box-memory out of the workspace: a folder or a memory file linked to
a place outside is neither read nor written through, by any command, and each says so once,
naming the link. A link that stays inside the workspace is followed as before."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import snapshot

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")


def _tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under root: file bytes, and what each link points to (a changed link shows)."""
    out: dict[str, bytes | str] = dict(snapshot(root))
    out.update({str(p.relative_to(root)): f"-> {p.readlink()}" for p in root.rglob("*") if p.is_symlink()})
    return out


@pytest.fixture
def linked_team(cli, tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose team `ops` keeps its memories/ in a folder outside the workspace."""
    ws = tmp_path / "ws"
    cli.json("init", "--path", str(ws), "--team", "ops")
    cli.json("write", "Ops rotates the pager.", "--title", "Pager rota", "--team", "ops", "-w", str(ws))
    cli.json("write", "Deploys happen on Tuesdays.", "--title", "Deploy day", "-w", str(ws))
    outside = tmp_path / "elsewhere"
    shutil.move(ws / "teams/ops/memories", outside)
    (ws / "teams/ops/memories").symlink_to(outside)
    return ws, outside


def _named_once(warnings: list[str], link: str) -> None:
    said = [w for w in warnings if f"{link} is a symbolic link to" in w and "outside the workspace" in w]
    assert len(said) == 1, warnings


def test_nothing_is_written_through_a_linked_folder(cli, linked_team: tuple[Path, Path]) -> None:
    ws, outside = linked_team
    before = _tree(outside)
    env = cli.json("write", "Escaped?", "--title", "Escape", "--team", "ops", "-w", str(ws), code=1)
    assert env["errors"][0]["code"] == "outside_workspace"
    assert "teams/ops/memories is a symbolic link to" in env["errors"][0]["message"]
    rebuilt = cli.json("index-rebuild", "-w", str(ws))
    _named_once(rebuilt["warnings"], "teams/ops/memories")
    assert rebuilt["data"]["outside_workspace"] and "teams/ops/memories/" not in [
        f["folder"] for f in rebuilt["data"]["folders"] if f["written"]
    ]
    assert _tree(outside) == before
    # The workspace's own folders still work.
    cli.json("write", "Still fine here.", "--title", "Inside", "-w", str(ws))


def test_nothing_is_read_through_a_linked_folder(cli, linked_team: tuple[Path, Path], tmp_path: Path) -> None:
    ws, _ = linked_team
    env = cli.json("recall", "pager", "-w", str(ws))
    assert env["data"]["count"] == 0
    _named_once(env["warnings"], "teams/ops/memories")
    status = cli.json("status", "-w", str(ws))
    assert status["data"]["index_health"]["ok"] is False
    _named_once(status["warnings"], "teams/ops/memories")
    check = cli.json("index-rebuild", "--check", "-w", str(ws), code=6)
    _named_once(check["warnings"], "teams/ops/memories")
    out = tmp_path / "export.jsonl"
    exported = cli.json("export", "-o", str(out), "-w", str(ws))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["frontmatter"]["title"] for r in records] == ["Deploy day"]
    _named_once(exported["warnings"], "teams/ops/memories")


@pytest.fixture
def linked_memory(cli, ws: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A memory file replaced by a link to a file outside the workspace."""
    cli.json("write", "Deploys happen on Tuesdays.", "--title", "Deploy day", "-w", str(ws))
    mem = ws / "memories" / "note__deploy-day.md"
    secret = tmp_path / "secret.md"
    secret.write_text(mem.read_text().replace("Deploys happen on Tuesdays.", "The vault code is hunter2."))
    mem.unlink()
    mem.symlink_to(secret)
    return mem, secret


def test_a_memory_file_linked_outside_is_never_read(cli, ws: Path, linked_memory: tuple[Path, Path]) -> None:
    mem, secret = linked_memory
    before = secret.read_bytes()
    link = "memories/note__deploy-day.md"
    env = cli.json("recall", "vault", "-w", str(ws))
    assert env["data"]["count"] == 0
    _named_once(env["warnings"], link)
    got = cli.json("get", "[[Deploy day]]", "-w", str(ws), code=1)
    assert got["errors"][0]["code"] == "outside_workspace"
    out = ws.parent / "export.jsonl"
    exported = cli.json("export", "-o", str(out), "-w", str(ws))
    assert "hunter2" not in out.read_text() and exported["data"]["count"] == 0
    _named_once(exported["warnings"], link)
    rebuilt = cli.json("index-rebuild", "-w", str(ws))
    assert [o["path"] for o in rebuilt["data"]["orphans"]] == [link]
    assert "hunter2" not in (ws / "memories" / "_index.json").read_text()
    assert mem.is_symlink() and secret.read_bytes() == before


def test_a_link_inside_the_workspace_is_followed(cli, ws: Path) -> None:
    cli.json("write", "Deploys happen on Tuesdays.", "--title", "Deploy day", "-w", str(ws))
    mem = ws / "memories" / "note__deploy-day.md"
    kept = ws / "_archive" / "deploy-day.md"
    shutil.move(mem, kept)
    mem.symlink_to(kept)
    env = cli.json("recall", "tuesdays", "-w", str(ws))
    assert [h["title"] for h in env["data"]["hits"]] == ["Deploy day"]
    assert not any("symbolic link" in w for w in env["warnings"])


def test_a_linked_files_folder_is_named_once(cli, ws: Path, tmp_path: Path) -> None:
    shutil.move(ws / "files", tmp_path / "files-elsewhere")
    (ws / "files").symlink_to(tmp_path / "files-elsewhere")
    for cmd in (("status",), ("recall", "anything")):
        _named_once(cli.json(*cmd, "-w", str(ws))["warnings"], "files")


def test_a_link_above_a_memory_folder_is_caught_and_one_inside_is_followed(tmp_path: Path) -> None:
    """The containment check looks at every part of a folder's path below the root (not only the
    folder itself): `teams/` linked outside keeps `teams/ops/memories/` out; linked to a folder
    inside the workspace, it is followed; asked again after the link changes, it is seen."""
    from box_memory.format.safeio import OutsideWorkspace
    from box_memory.store import open_local

    ws, outside = tmp_path / "ws", tmp_path / "elsewhere"
    (outside / "ops" / "memories").mkdir(parents=True)
    (outside / "ops" / "memories" / "a.md").write_bytes(b"secret")
    ws.mkdir()
    (ws / "teams").symlink_to(outside)
    store = open_local(ws)
    with pytest.raises(OutsideWorkspace) as e:
        store.read_bytes("teams/ops/memories/a.md")
    assert "teams is a symbolic link to" in str(e.value)
    (ws / "teams").unlink()
    shutil.copytree(outside, ws / "kept")
    (ws / "teams").symlink_to(ws / "kept")
    store.drop_listings()
    assert store.read_bytes("teams/ops/memories/a.md") == b"secret"
