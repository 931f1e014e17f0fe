"""File systems without hard links (exFAT, FAT, some network and Box Drive volumes).

A new memory file is created by linking the finished temp file to its name (create-or-fail with
the whole content visible at once). Where link() is refused, the name is claimed with an
exclusive create and the temp file renamed over the claim. Linux file systems here all support
hard links, so os.link is replaced by one that fails the way those file systems do - the only
stand-in in this file; everything else is the real CLI on real folders.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import orjson
import pytest

from box_memory.errors import FileBusy
from box_memory.format import safeio
from box_memory.format.model import LOCK_NAME
from box_memory.store.base import AlreadyExists
from box_memory.store.local import FileLock, LocalStore


@pytest.fixture(params=[errno.EPERM, errno.ENOTSUP, errno.EXDEV], ids=["EPERM", "ENOTSUP", "EXDEV"])
def no_links(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    tried: list[tuple[str, str]] = []

    def refuse(src: object, dst: object, *a: object, **k: object) -> None:
        tried.append((str(src), str(dst)))
        raise OSError(request.param, os.strerror(request.param), str(dst))

    monkeypatch.setattr(os, "link", refuse)
    return tried


def temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.startswith(".bm-tmp-")]


def test_write_creates_memories_without_hard_links_and_never_clobbers(cli, ws, no_links):
    stray = ws / "memories" / "note__foo.md"  # a file from another machine the index does not know
    stray.write_bytes(b"---\ntitle: theirs\n---\n\ntheirs\n")
    env = cli.json("write", "ours about the kestrel launch", "--title", "Foo")
    assert no_links  # the link was tried and refused: the fallback made the file
    made = ws / env["data"]["file"]
    assert made.name == "note__foo-2.md"
    assert b"ours about the kestrel launch" in made.read_bytes()
    assert stray.read_bytes() == b"---\ntitle: theirs\n---\n\ntheirs\n"
    env = cli.json("write", "second body", "--title", "Bar")
    assert (ws / env["data"]["file"]).read_bytes().endswith(b"second body\n")
    index = orjson.loads((ws / "memories" / "_index.json").read_bytes())
    assert {"note__foo-2.md", "note__bar.md"} <= {e["filename"] for e in index["entries"]}
    assert temps(ws) == []
    hits = cli.json("recall", "kestrel")["data"]["hits"]
    assert [h["title"] for h in hits] == ["Foo"]


def test_create_refuses_an_existing_name_and_keeps_its_bytes(tmp_path, no_links):
    store = LocalStore(tmp_path)
    (tmp_path / "memories").mkdir()
    store.create_bytes("memories/a.md", b"first")
    assert (tmp_path / "memories" / "a.md").read_bytes() == b"first"
    with pytest.raises(AlreadyExists):
        store.create_bytes("memories/a.md", b"second")
    with pytest.raises(AlreadyExists):
        store.create_bytes("memories/A.md", b"second")  # the same name on Box, macOS, Windows
    assert (tmp_path / "memories" / "a.md").read_bytes() == b"first"
    assert sorted(p.name for p in (tmp_path / "memories").iterdir()) == ["a.md"]


def test_a_file_that_appears_while_creating_is_not_clobbered(tmp_path, monkeypatch):
    store = LocalStore(tmp_path)
    target = tmp_path / "b.md"

    def another_client_wins(src: object, dst: object, *a: object, **k: object) -> None:
        target.write_bytes(b"theirs")  # Box Drive syncs a file of that name in just now
        raise OSError(errno.EPERM, "Operation not permitted", str(dst))

    monkeypatch.setattr(os, "link", another_client_wins)
    with pytest.raises(AlreadyExists):
        store.create_bytes("b.md", b"ours")
    assert target.read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.md"]


def test_a_claim_that_cannot_be_filled_is_removed(tmp_path, no_links, monkeypatch):
    monkeypatch.setitem(safeio._FAULTS, "replace", {"c.md": 99})  # held open for good
    store = LocalStore(tmp_path)
    with pytest.raises(FileBusy, match=r"c\.md could not be created after 6 tries"):
        store.create_bytes("c.md", b"ours")
    assert list(tmp_path.iterdir()) == []  # no empty claim, no temp file


def test_a_lock_renewed_while_being_taken_over_is_put_back(tmp_path, no_links):
    lock = tmp_path / LOCK_NAME
    lock.write_bytes(orjson.dumps({"writer": "other", "token": "t2", "renewed_at": "now"}))
    FileLock(lock, writer="me", skill="")._lock._take_over(seen=b'{"token": "t1"}')  # it changed since
    assert orjson.loads(lock.read_bytes())["token"] == "t2"
    assert [p.name for p in tmp_path.iterdir()] == [LOCK_NAME]
