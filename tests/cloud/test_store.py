"""The cloud store's own promises: call budgets, the content cache, conflicts, the lease, metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.errors import LockBusy
from box_memory.store import logical_folder_paths
from box_memory.store.base import AlreadyExists
from box_memory.store.cloud import CloudStore, open_cloud_store
from tests.cloud.conftest import TOKEN, Backend

WRITE_TOOLS = {"upload_file", "upload_file_version", "create_folder", "move_file", "set_file_metadata"}


def _listed(emu: Emulator) -> Counter[str]:
    return Counter(
        str(c.arguments["folder_id"]) for c in emu.calls if c.name == "list_folder_content_by_folder_id"
    )


def test_warm_recall_lists_each_folder_once_and_reads_no_file(cloud: Backend, emu: Emulator) -> None:
    cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens", "--tag", "auth")
    cloud.data("write", "Redis caches sessions.", "--title", "Session cache", "--kind", "fact")
    cloud.data("recall", "auth")  # fills the recall cache
    emu.reset_calls()
    hits = cloud.data("recall", "auth")["hits"]
    assert [h["title"] for h in hits] == ["Auth tokens"]
    names = Counter(c.name for c in emu.calls)
    assert set(names) == {"list_folder_content_by_folder_id"}, names
    per_folder = _listed(emu)
    assert max(per_folder.values()) == 1, per_folder
    emu.reset_calls()
    cloud.data("get", "[[Session cache]]")  # memory text came with the write: cached by sha1
    assert not [c for c in emu.calls if c.name == "get_file_content"]


def test_changed_file_is_read_again_once(cloud: Backend, emu: Emulator) -> None:
    w = cloud.data("write", "Original text.", "--title", "Note one")
    text = cloud.path(w["file"]).read_text().replace("Original text.", "Edited in Box.")
    cloud.path(w["file"]).write_text(text)
    emu.reset_calls()
    assert "Edited in Box." in cloud.data("get", w["id"])["body"]
    assert [c.name for c in emu.calls].count("get_file_content") == 1
    emu.reset_calls()
    cloud.data("get", w["id"])
    assert [c.name for c in emu.calls].count("get_file_content") == 0


def test_writes_never_overwrite_and_retries_are_idempotent(store: CloudStore, cloud: Backend) -> None:
    assert store.list_names("memories") == ["_index.json"]  # listing now cached
    cloud.put("memories/note__x.md", b"theirs\n")  # appears behind the cached listing
    with pytest.raises(AlreadyExists):
        store.create_bytes("memories/note__x.md", b"ours\n")  # upload_file answers 409
    with pytest.raises(AlreadyExists):
        store.create_bytes("memories/NOTE__X.md", b"ours\n")  # Box names are case-insensitive
    # The same bytes already there: a retried upload whose first attempt landed.
    assert store.create_bytes("memories/note__x.md", b"theirs\n") == store.stat("memories/note__x.md").file_id
    first = store.write_bytes("files/data.json", b'{"v": 1}')
    second = store.write_bytes("files/data.json", b'{"v": 2}')
    assert first == second  # a new version of the same Box file
    assert store.read_bytes("files/data.json") == b'{"v": 2}'
    assert cloud.path("files/data.json").read_bytes() == b'{"v": 2}'


def test_move_and_folder_tree_move(store: CloudStore, cloud: Backend) -> None:
    store.write_bytes("files/a.txt", b"a")
    store.write_bytes("files/sub/b.txt", b"b")
    store.move("files/a.txt", "_archive/x/a.txt")
    assert not store.exists("files/a.txt") and store.read_bytes("_archive/x/a.txt") == b"a"
    with pytest.raises(AlreadyExists):
        store.move("files/sub/b.txt", "_archive/x/a.txt")
    store.move("files/sub", "_archive/sub")
    assert cloud.path("_archive/sub/b.txt").read_bytes() == b"b"
    assert store.list_names("files/sub") == []  # no folder move or delete tool: left empty


def test_stale_folder_ids_fall_back_to_names(cloud: Backend) -> None:
    cfg_path = cloud.path("_box-memory.json")
    cfg = json.loads(cfg_path.read_text())
    real = cfg["folder_ids"]["memories"]
    cfg["folder_ids"]["memories"] = "999999999999"  # a folder that no longer exists
    cfg_path.write_text(json.dumps(cfg))
    w = cloud.data("write", "Still works.", "--title", "After a folder id went stale")
    assert w["file"] == "memories/note__after-a-folder-id-went-stale.md"
    assert cloud.path(w["file"]).exists()
    assert [h["id"] for h in cloud.data("recall", "stale")["hits"]] == [w["id"]]
    cloud.data("team", "create", "ops")  # the next config write repairs the dead id
    repaired = json.loads(cfg_path.read_text())["folder_ids"]
    assert repaired["memories"] == real
    assert repaired["team_ops_memories"].isdigit()
    assert logical_folder_paths({"memories": "1", "team_x_root": 2, "team_x_files": "3", "bad": None}) == {
        "memories": "1",
        "teams/x": "2",
        "teams/x/files": "3",
    }


def test_lock_is_a_lease_that_blocks_and_releases(
    store: CloudStore, cloud: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOX_MEMORY_LOCK_WAIT_S", "0.3")
    with store.lock(writer="holder", skill="test"):
        body = json.loads(cloud.path("_box-memory.lock").read_text())
        assert body["writer"] == "holder" and body["renewed_at"] > "2000"
        busy = cloud.run("write", "blocked", "--title", "Blocked", code=5)
        assert busy["errors"][0]["code"] == "lock_busy" and "holder" in busy["errors"][0]["message"]
        other = open_cloud_store(store.root_id)
        with pytest.raises(LockBusy), other.lock(writer="second"):
            pass
    released = json.loads(cloud.path("_box-memory.lock").read_text())
    assert released["released_at"] and released["renewed_at"].startswith("1970")
    assert cloud.data("write", "free again", "--title", "Free")["slug"] == "free"


def test_stale_lease_is_taken_over(cloud: Backend) -> None:
    old = {"writer": "crashed", "pid": 1, "host": "elsewhere", "renewed_at": "2020-01-01T00:00:00.000Z"}
    cloud.put("_box-memory.lock", json.dumps(old).encode())
    assert cloud.data("write", "after a crash", "--title", "Recovered")["slug"] == "recovered"


def test_lost_lease_is_reported_not_silent(store: CloudStore, cloud: Backend) -> None:
    with store.lock(writer="me"):
        thief = {"writer": "thief", "renewed_at": "2099-01-01T00:00:00.000Z", "token": "other"}
        cloud.put("_box-memory.lock", json.dumps(thief).encode())
    assert any("taken over" in w for w in store.warnings)
    assert json.loads(cloud.path("_box-memory.lock").read_text())["writer"] == "thief"  # not clobbered


def test_released_cloud_lease_is_free_for_a_box_drive_writer(tmp_path: Path) -> None:
    from box_memory.store.local import LocalStore

    root = tmp_path / "drive"
    root.mkdir()
    released = {"writer": "box-memory", "renewed_at": "1970-01-01T00:00:00.000Z", "released_at": "now"}
    (root / "_box-memory.lock").write_text(json.dumps(released))
    started = time.monotonic()
    with LocalStore(root).lock(writer="drive"):
        assert json.loads((root / "_box-memory.lock").read_text())["writer"] == "drive"
    assert time.monotonic() - started < 2


def test_concurrent_writers_in_two_processes_lose_nothing(cloud: Backend, emu: Emulator) -> None:
    script = textwrap.dedent(
        """
        import sys
        from box_memory.write.memories import write_memory
        from box_memory.write.prepare import WriteRequest
        from box_memory.store.cloud import close_all
        from box_memory.workspace.resolve import open_workspace
        for n in range(3):
            ws = open_workspace(sys.argv[1])
            write_memory(ws, WriteRequest(content=f"{sys.argv[2]} {n}", title=f"{sys.argv[2]} {n}"))
            close_all()
        """
    )
    env = {
        **os.environ,
        "BOX_MCP_URL": emu.url,
        "BOX_ACCESS_TOKEN": TOKEN,
        "BOX_MEMORY_LOCK_SETTLE_S": "0.05",
    }
    procs = [
        subprocess.Popen([sys.executable, "-c", script, cloud.spec, who], env=env, stderr=subprocess.PIPE)
        for who in ("alpha", "beta")
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()[-2000:]
    check = cloud.run("index-rebuild", "--check")["data"]
    assert check["drift"] is False, check
    titles = sorted(h["title"] for h in cloud.data("recall", "kind:note", "--limit", "20")["hits"])
    assert titles == [f"{w} {n}" for w in ("alpha", "beta") for n in range(3)]


def test_memory_files_carry_box_metadata(cloud: Backend, emu: Emulator) -> None:
    w = cloud.data("write", "We decided X.", "--title", "Decision X", "--tag", "a", "--tag", "b")
    instance = emu.fs.get(w["file_id"]).metadata["enterprise_27182818.boxMemory"]
    assert (instance["memoryId"], instance["kind"], instance["status"], instance["tags"]) == (
        w["id"],
        "decision",
        "active",
        "a,b",
    )
    emu.configure(disabled_tools=("set_file_metadata",))
    res = cloud.run("write", "Still written.", "--title", "Without metadata")
    assert res["data"]["slug"] == "without-metadata"
    assert any("Box metadata not applied" in x for x in res["warnings"])


def test_lower_tier_writes_no_metadata(make: Any, emu: Emulator) -> None:
    emu.configure(hidden_tools=("list_metadata_templates", "create_metadata_template"))
    b = make("cloud")
    assert b.init_data["tier"] == "business"
    assert b.init_data["capabilities"]["custom_metadata_templates"] is False
    emu.reset_calls()
    b.data("write", "plain", "--title", "Plain")
    assert "set_file_metadata" not in {c.name for c in emu.calls}


def test_metadata_search_waits_for_the_search_lag(cloud: Backend, store: CloudStore) -> None:
    d = cloud.data("write", "We decided Y.", "--title", "Decision Y")
    cloud.data("write", "A fact.", "--title", "Fact Z", "--kind", "fact")
    assert store.metadata_search(kind="decision") is None  # template younger than 10 minutes
    cfg_path = cloud.path("_box-memory.json")
    cfg = json.loads(cfg_path.read_text())
    cfg["metadata_template_created_at"] = "2020-01-01T00:00:00.000Z"
    cfg_path.write_text(json.dumps(cfg))
    fresh = open_cloud_store(store.root_id)
    found = fresh.metadata_search(kind="decision", status="active")
    assert found is not None and [str(e["id"]) for e in found] == [d["file_id"]]


def test_local_write_and_recall_never_import_the_network_stack(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from typer.testing import CliRunner
        from box_memory.cli.app import app
        r = CliRunner()
        ws = {str(tmp_path / "ws")!r}
        assert r.invoke(app, ["init", "--path", ws]).exit_code == 0
        assert r.invoke(app, ["write", "hello world", "--title", "Hello", "-w", ws]).exit_code == 0
        assert r.invoke(app, ["recall", "hello", "-w", ws]).exit_code == 0
        bad = [m for m in ("mcp", "httpx", "httpx2", "box_memory.store.cloud", "box_memory.box.client")
               if m in sys.modules]
        assert not bad, bad
        """
    )
    env = {**os.environ, "BOX_MEMORY_HOME": str(tmp_path / "home")}
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0, res.stderr[-2000:]


def test_cloud_init_defaults_to_the_root_with_a_warning(emu: Emulator, cli: Any) -> None:
    env = cli.json("init", "rooted", "--backend", "cloud")
    assert env["data"]["parent"] == "0" and env["data"]["existed"] is False
    assert "Box root" in env["warnings"][0]
    assert (emu.fs.root / "rooted" / "_box-memory.json").is_file()
    again = cli.json("init", "rooted", "--backend", "cloud")  # the 409 reuses the folder
    assert again["data"]["existed"] is True and again["data"]["folder_id"] == env["data"]["folder_id"]
    assert cli.json("init", "x", "--backend", "cloud", "--path", "/tmp/x", code=2)["errors"][0]["code"] == (
        "invalid_input"
    )
    default = cli.json("status")["data"]["workspace"]["root"]  # init made it the default
    assert default == env["data"]["workspace"]


def test_structured_recall_falls_back_to_box_metadata_for_unindexed_memories(cloud: Backend) -> None:
    kept = cloud.data("write", "We decided X.", "--title", "Decision X")
    lost = cloud.data("write", "We decided Y.", "--title", "Decision Y")
    cloud.data("write", "A fact.", "--title", "Fact Z", "--kind", "fact")
    # Another writer's index update was lost: Y's file and metadata exist, its index entry does not.
    idx_path = cloud.path("memories/_index.json")
    idx = json.loads(idx_path.read_text())
    idx["entries"] = [e for e in idx["entries"] if e["id"] != lost["id"]]
    idx_path.write_text(json.dumps(idx))
    # While the template is younger than Box's search lag, only the indexes answer.
    env = cloud.run("recall", "kind:decision")
    assert [h["id"] for h in env["data"]["hits"]] == [kept["id"]]
    cfg_path = cloud.path("_box-memory.json")
    cfg = json.loads(cfg_path.read_text())
    cfg["metadata_template_created_at"] = "2020-01-01T00:00:00.000Z"
    cfg_path.write_text(json.dumps(cfg))
    env = cloud.run("recall", "kind:decision")
    hits = {h["id"]: h for h in env["data"]["hits"]}
    assert set(hits) == {kept["id"], lost["id"]}
    assert hits[lost["id"]]["matched_on"] == "metadata" and hits[kept["id"]]["matched_on"] == "filter"
    assert any("index-rebuild" in w for w in env["warnings"])
    # Free text never takes this route, and a fact filter finds no decision.
    assert all(h["kind"] == "fact" for h in cloud.data("recall", "kind:fact")["hits"])
