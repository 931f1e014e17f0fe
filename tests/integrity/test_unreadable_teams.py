"""Team boundaries are permissions: what a user may not read is skipped and reported once, never
taken for a missing, orphaned or deleted file.

Run as an unprivileged user (tests/helpers/unprivileged.py: setpriv as root).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.unprivileged import Box, reader_box


@pytest.fixture
def box() -> Iterator[Box]:
    with reader_box("bm-perm-") as b:
        b.json("write", "Ops decided on blue-green deploys.", "--title", "Deploy strategy", "--team", "ops")
        yield b


def test_recall_skips_an_unreadable_team_folder(box: Box) -> None:
    box.deny("teams/ops/memories")
    env = box.json("recall", "deploy")
    assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
    denied = [w for w in env["warnings"] if "permission denied" in w]
    assert len(denied) == 1 and "teams/ops/memories/" in denied[0]
    assert box.json("recall", "deploy", "--team", "default")["data"]["count"] == 1
    # Said once, on stderr, in plain output too (it changes what the hits mean) and with --verbose.
    plain = box.run("recall", "deploy", "--workspace", str(box.ws))
    assert plain.returncode == 0 and plain.stderr.count("permission denied") == 1
    loud = box.run("recall", "deploy", "--workspace", str(box.ws), "--verbose")
    assert loud.returncode == 0 and loud.stderr.count("permission denied") == 1
    # Once readable again it is found.
    box.restore()
    titles = {h["title"] for h in box.json("recall", "deploy")["data"]["hits"]}
    assert titles == {"Deploy keys", "Deploy strategy"}


def test_recall_skips_an_unreadable_memory_file(box: Box) -> None:
    mem = next((box.ws / "teams/ops/memories").glob("*__deploy-strategy.md"))
    box.deny(str(mem.relative_to(box.ws)))
    env = box.json("recall", "deploy")
    assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
    assert any(mem.name in w and "permission denied" in w for w in env["warnings"])
    box.restore()
    assert box.json("recall", "deploy")["data"]["count"] == 2


def test_status_reports_an_unreadable_team_without_calling_it_missing(box: Box) -> None:
    box.deny("teams/ops")
    env = box.json("status")
    data = env["data"]
    assert "teams/ops/memories/" in data["unreadable"]
    assert data["teams"]["ops"]["unreadable"] is True
    assert data["index_health"]["problems"] == []
    assert data["totals"]["memories"] == 1
    assert sum("permission denied" in w for w in env["warnings"]) == 1
    plain = box.run("status", "--workspace", str(box.ws))
    assert plain.returncode == 0 and "permission denied" not in plain.stderr


def test_index_rebuild_never_drops_what_it_cannot_read(box: Box) -> None:
    mem = next((box.ws / "memories").glob("*__deploy-keys.md"))
    before = json.loads((box.ws / "memories/_index.json").read_text())
    box.deny(str(mem.relative_to(box.ws)))
    box.deny("teams/ops/memories")
    # A memory of this user's own that cannot be read: the check cannot vouch for the indexes.
    check = box.json("index-rebuild", "--check", code=6)
    assert check["data"]["complete"] is False
    assert check["data"]["drift"] is False
    assert check["data"]["orphans"] == []
    assert set(check["data"]["permission_denied"]) == {"memories/" + mem.name, "teams/ops/memories/"}
    env = box.json("index-rebuild")
    assert env["data"]["orphans"] == [] and env["data"]["diff"]["removed"] == []
    assert "teams/ops/memories/" not in env["data"]["skipped_folders"]
    after = json.loads((box.ws / "memories/_index.json").read_text())
    assert [e["id"] for e in after["entries"]] == [e["id"] for e in before["entries"]]
    assert sum("permission denied" in w for w in env["warnings"]) == 1
    box.restore()
    ops = json.loads((box.ws / "teams/ops/memories/_index.json").read_text())
    assert [e["title"] for e in ops["entries"]] == ["Deploy strategy"]


def test_a_box_team_folder_answering_403_is_skipped(make: Any) -> None:
    """On Box, a team folder whose listing answers 403 is skipped like an unreadable local one."""
    from tests.cloud.conftest import Backend

    b: Backend = make("cloud", "--team", "ops")
    b.run("write", "Rotate the deploy keys monthly.", "--title", "Deploy keys")
    b.run("write", "Blue-green deploys.", "--title", "Deploy strategy", "--team", "ops")
    assert b.emu is not None
    ops = b.emu.fs.id_for_path(f"{b.name}/teams/ops")
    b.emu.configure(forbidden=[ops])
    try:
        env = b.run("recall", "deploy")
        assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
        assert sum("permission denied" in w for w in env["warnings"]) == 1
        status = b.run("status")
        assert any(u.startswith("teams/ops/") for u in status["data"]["unreadable"])
        assert status["data"]["index_health"]["problems"] == []
        rebuilt = b.run("index-rebuild")
        assert rebuilt["data"]["orphans"] == [] and rebuilt["data"]["diff"]["removed"] == []
        assert any(u.startswith("teams/ops/") for u in rebuilt["data"]["permission_denied"])
    finally:
        b.emu.configure(forbidden=())
    titles = {h["title"] for h in b.run("recall", "deploy")["data"]["hits"]}
    assert titles == {"Deploy keys", "Deploy strategy"}
