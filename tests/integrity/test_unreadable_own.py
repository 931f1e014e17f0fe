"""What this user cannot read of its own memories (not another team's folder) is said plainly:
permission denied, with the path, in plain output too; and such a workspace is never called
healthy. An unreadable BOX_MEMORY_HOME does not stop recall (as it does not stop get).

Run as an unprivileged user (tests/helpers/unprivileged.py: setpriv as root).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.unprivileged import Box, reader_box


@pytest.fixture
def box() -> Iterator[Box]:
    with reader_box("bm-own-") as b:
        yield b


def _plain(box: Box, *args: str) -> str:
    res = box.run(*args, "--workspace", str(box.ws))
    return res.stdout + res.stderr


def test_an_unreadable_memories_folder_is_never_called_healthy(box: Box) -> None:
    box.deny("memories")
    recall = _plain(box, "recall", "deploy")
    assert "permission denied" in recall and "memories/" in recall
    env = box.json("status")
    assert env["data"]["index_health"]["ok"] is False
    assert any("permission denied" in w and "memories/" in w for w in env["warnings"])
    status = _plain(box, "status")
    assert "needs attention" in status and "permission denied" in status
    check = box.json("index-rebuild", "--check", code=6)
    assert check["data"]["complete"] is False
    assert "Indexes match the files" not in _plain(box, "index-rebuild", "--check")
    exported = _plain(box, "export", "-o", str(box.base / "out.jsonl"))
    assert "permission denied" in exported and "memories/" in exported


def test_an_unreadable_memory_file_is_named_in_plain_output(box: Box) -> None:
    mem = next((box.ws / "memories").glob("*__deploy-keys.md"))
    box.deny(str(mem.relative_to(box.ws)))
    said = _plain(box, "recall", "deploy")
    assert "permission denied" in said and mem.name in said


def test_an_unreadable_home_answers_recall_like_get(box: Box) -> None:
    box.home.chmod(0)
    env = box.json("recall", "deploy")
    assert [h["title"] for h in env["data"]["hits"]] == ["Deploy keys"]
    assert any("in-memory" in w for w in env["warnings"]), env["warnings"]
    assert box.json("get", "[[Deploy keys]]")["data"]["frontmatter"]["title"] == "Deploy keys"
