"""The recall cache is derived state: deleted, corrupt, foreign or unwritable, recall stays correct;
it follows writes incrementally; stale indexes are reported; the workspace is never written."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from box_memory.paths import user_dirs
from tests.recall.helpers import cache_files, ids, mem_id, put, reindex


def _write(cli, root: Path, content: str, title: str, *extra: str) -> str:
    return cli.json("write", content, "--title", title, *extra, "-w", str(root))["data"]["id"]


@pytest.fixture
def filled(ws: Path, cli) -> Path:
    _write(cli, ws, "We decided the gateway retries twice with jitter.", "Gateway retries", "--tag", "net")
    _write(cli, ws, "Invoices are generated nightly by the billing job.", "Billing schedule")
    return ws


def test_cache_is_one_database_per_workspace_under_the_cache_dir(filled: Path, tmp_path: Path, cli) -> None:
    cli.json("recall", "gateway", "-w", str(filled))
    other = tmp_path / "other"
    cli.json("init", "--path", str(other))
    cli.json("recall", "gateway", "-w", str(other))
    files = cache_files()
    assert len(files) == 2
    assert all(f.parent == user_dirs().recall_cache_dir for f in files)
    assert oct(files[0].stat().st_mode & 0o777) == "0o600"


def test_deleted_cache_between_calls(filled: Path, cli) -> None:
    first = cli.json("recall", "jitter", "-w", str(filled))
    for f in cache_files():
        f.unlink()
    second = cli.json("recall", "jitter", "-w", str(filled))
    assert ids(first) == ids(second) and len(ids(first)) == 1
    assert second["data"]["cache"]["rebuilt"] is True
    third = cli.json("recall", "jitter", "-w", str(filled))
    assert third["data"]["cache"]["rebuilt"] is False and third["data"]["cache"]["reread_files"] == 0
    assert ids(third) == ids(first)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign"])
def test_corrupt_or_foreign_cache_is_rebuilt(filled: Path, cli, damage: str) -> None:
    good = cli.json("recall", "billing", "-w", str(filled))
    (db,) = cache_files()
    if damage == "garbage":
        db.write_bytes(b"this is not a database at all" * 100)
    elif damage == "truncated":
        db.write_bytes(db.read_bytes()[:1500])
    else:
        db.unlink()
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE meta(k TEXT, v TEXT)")
        con.execute("INSERT INTO meta VALUES ('schema', 'from-the-future')")
        con.commit()
        con.close()
    env = cli.json("recall", "billing", "-w", str(filled))
    assert ids(env) == ids(good) and len(ids(env)) == 1
    assert env["data"]["cache"]["rebuilt"] is True


def test_unusable_cache_dir_falls_back_to_memory(filled: Path, cli) -> None:
    cache_root = user_dirs().cache
    cache_root.mkdir(parents=True, exist_ok=True)
    (cache_root / "recall").write_text("a file where the cache folder should be")
    env = cli.json("recall", "gateway", "-w", str(filled))
    assert len(ids(env)) == 1
    assert env["data"]["cache"]["memory_only"] is True
    assert any("in-memory" in w for w in env["warnings"])


def test_a_write_is_found_right_away_and_refreshes_incrementally(filled: Path, cli) -> None:
    cli.json("recall", "anything", "-w", str(filled))  # warm the cache
    mid = _write(cli, filled, "The wombat service pages on-call after 3 failures.", "Paging thresholds")
    by_title = cli.json("recall", "paging thresholds", "-w", str(filled))
    assert ids(by_title)[0] == mid and by_title["data"]["hits"][0]["score"] == 10
    cache = by_title["data"]["cache"]
    # The write brought the cache along for its own entry: nothing is re-read, nothing rebuilt.
    assert cache["rebuilt"] is False and cache["reread_files"] == 0 and cache["reread_folders"] == 0
    by_body = cli.json("recall", "wombat", "-w", str(filled))
    assert ids(by_body) == [mid] and by_body["data"]["hits"][0]["matched_on"] == "body"
    assert by_body["data"]["cache"]["reread_files"] == 0


def test_supersede_is_seen_right_away(filled: Path, cli) -> None:
    old = ids(cli.json("recall", "gateway retries", "-w", str(filled)))[0]
    new = _write(cli, filled, "Retries are now three.", "Gateway retries", "--supersedes", old)
    env = cli.json("recall", "gateway retries", "-w", str(filled))
    assert ids(env) == [new]


def _answers(cli, root: Path, queries: list[list[str]]) -> list[dict]:
    out = []
    for q in queries:
        data = cli.json("recall", *q, "-w", str(root))["data"]
        out.append({k: v for k, v in data.items() if k != "cache"})
    return out


def test_a_write_updates_the_cache_as_a_rebuild_would(tmp_path: Path, cli) -> None:
    """Writes (new, supersede, into a team) update the cache in place; the answers are exactly
    those of a cache built from scratch afterwards, and no recall in between re-reads a folder."""
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    for n in range(1, 40):
        put(root, f"Runbook {n} for the heron cluster", n=n, kind="reference", tags=["ops"])
    reindex(root)
    cli.json("recall", "heron", "-w", str(root))  # build the cache
    first = _write(cli, root, "The heron cluster pages after 3 failures.", "Heron paging", "--tag", "ops")
    _write(cli, root, "Ops owns the heron pager.", "Heron owner", "--team", "ops")
    new = _write(cli, root, "It pages after 5 failures now.", "Heron paging", "--supersedes", first)
    queries = [
        ["heron paging"], ["heron paging", "--include-superseded"], [first], ["tag:ops"],
        ["team:ops"], ["pager"], ["failures"], ["heron", "--limit", "50"],
    ]  # fmt: skip
    for q in queries:
        cache = cli.json("recall", *q, "-w", str(root))["data"]["cache"]
        assert cache["reread_folders"] == 0 and cache["reread_files"] == 0 and not cache["rebuilt"], q
    updated = _answers(cli, root, queries)
    assert [h["id"] for h in updated[0]["hits"]][:1] == [new]
    for f in cache_files():
        f.unlink()
    assert _answers(cli, root, queries) == updated


def test_a_write_over_a_cache_that_was_behind_leaves_the_folder_to_the_refresh(filled: Path, cli) -> None:
    """The cache had not seen a change made before the write: the write does not mark that folder
    current, and the next recall re-reads it (only the files that changed)."""
    cli.json("recall", "anything", "-w", str(filled))
    put(filled, "Dropped by another tool", "The ocelot queue drains nightly.", n=90)
    reindex(filled)
    mid = _write(cli, filled, "The ocelot queue has two consumers.", "Ocelot consumers")
    env = cli.json("recall", "ocelot", "-w", str(filled))
    assert set(ids(env)) == {mid, mem_id(90)}
    cache = env["data"]["cache"]
    assert cache["reread_folders"] >= 1 and cache["reread_files"] == 2 and not cache["rebuilt"]


def test_replaced_file_body_is_reread(filled: Path, cli) -> None:
    cli.json("recall", "anything", "-w", str(filled))
    (path,) = (filled / "memories").glob("*billing-schedule.md")
    text = path.read_text().replace("nightly by the billing job", "hourly by the narwhal job")
    tmp = path.with_name(".replacement")
    tmp.write_text(text)
    os.replace(tmp, path)  # a new file under the same name (what editors and sync clients do)
    env = cli.json("recall", "narwhal", "-w", str(filled))
    assert len(ids(env)) == 1 and env["data"]["hits"][0]["title"] == "Billing schedule"
    assert ids(cli.json("recall", "nightly", "-w", str(filled))) == []


def test_stale_index_is_reported_and_still_answers(tmp_path: Path, cli, snap) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "Indexed one", n=1)
    reindex(root)
    put(root, "Not indexed yet", n=2)  # a file the index does not know
    before = snap(root)
    for _ in range(2):  # the verdict is kept with the cache, and repeated
        env = cli.json("recall", "indexed", "-w", str(root))
        assert ids(env) == [mem_id(1)]
        assert any("may be stale" in w and "index-rebuild" in w for w in env["warnings"])
    res = cli("recall", "indexed", "-w", str(root))
    assert "may be stale" in res.stderr
    assert snap(root) == before
    reindex(root)
    env = cli.json("recall", "indexed", "-w", str(root))
    assert set(ids(env)) == {mem_id(1), mem_id(2)}
    assert not any("stale" in w for w in env["warnings"])


def test_broken_index_is_reported_and_other_folders_answer(tmp_path: Path, cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    put(root, "Pelican default", n=1)
    put(root, "Pelican ops", n=2, folder="teams/ops/memories")
    reindex(root)
    (root / "memories" / "_index.json").write_text("{not json")
    env = cli.json("recall", "pelican", "-w", str(root))
    assert ids(env) == [mem_id(2)]
    assert any("memories/_index.json" in w and "index-rebuild" in w for w in env["warnings"])


def test_a_configured_team_without_folders_is_no_error(filled: Path, cli) -> None:
    cfg = filled / "_box-memory.json"
    data = json.loads(cfg.read_text())
    data["teams"] = [*data["teams"], "ghost"]  # listed in the config, never created on disk
    cfg.write_text(json.dumps(data))
    env = cli.json("recall", "billing", "-w", str(filled))
    assert len(ids(env)) == 1
    assert ids(cli.json("recall", "billing", "-w", str(filled))) == ids(env)


def test_recall_never_writes_to_the_workspace(filled: Path, cli, snap) -> None:
    before = snap(filled)
    cli.json("recall", "gateway", "-w", str(filled))
    cli.json("recall", "kind:decision", "--include-superseded", "--full", "-w", str(filled))
    assert snap(filled) == before


def test_concurrent_first_recalls_agree(filled: Path) -> None:
    cmd = [sys.executable, "-m", "box_memory", "recall", "billing", "-w", str(filled), "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, env=os.environ.copy()) for _ in range(3)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len({tuple(ids(o)) for o in outs}) == 1 and len(ids(outs[0])) == 1


def test_index_written_by_another_tool_is_read_tolerantly(tmp_path: Path, cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    put(root, "Loose entry", n=1, tags=["auth"])
    reindex(root)
    idx_path = root / "memories" / "_index.json"
    idx = json.loads(idx_path.read_text())
    entry = idx["entries"][0]
    entry["tags"] = "auth"  # a scalar where a list belongs
    del entry["local_path"]  # the plugin's entries carry only the file name
    idx_path.write_text(json.dumps(idx))
    env = cli.json("recall", "tag:auth", "-w", str(root))
    assert ids(env) == [mem_id(1)]
    assert env["data"]["hits"][0]["path"] == "memories/note__loose-entry.md"


def test_status_verbose_shows_the_recall_caches_location_and_size(filled: Path, cli) -> None:
    cli.json("recall", "billing", "-w", str(filled))
    (cache,) = cache_files()
    info = cli.json("status", "--verbose", "-w", str(filled))["data"]["recall_cache"]
    wal = cache.with_name(cache.name + "-wal")
    assert info["path"] == str(cache) and info["exists"] is True
    assert info["bytes"] == cache.stat().st_size + (wal.stat().st_size if wal.exists() else 0) > 0
    shown = cli("status", "--verbose", "-w", str(filled)).stdout
    assert "Recall cache:" in shown and cache.name in shown.replace("\n", "")


def test_caches_of_gone_workspaces_and_old_schemas_are_collected(filled: Path, tmp_path: Path, cli) -> None:
    import shutil

    other = tmp_path / "other"
    cli.json("init", "--path", str(other))
    cli.json("recall", "billing", "-w", str(other))
    cli.json("recall", "billing", "-w", str(filled))
    mine = Path(cli.json("status", "--verbose", "-w", str(filled))["data"]["recall_cache"]["path"])
    # A cache left by an older box-memory (another schema version) for some workspace.
    old = user_dirs().recall_cache_dir / "older-0000000000000000.sqlite3"
    db = sqlite3.connect(old)
    db.executescript("CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT);")
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("schema", "1"), ("root", str(filled))])
    db.commit()
    db.close()
    shutil.rmtree(other)  # that workspace is gone
    cli.json("recall", "billing", "-w", str(filled))
    assert len(cache_files()) == 3  # collected when a cache is created, not on every call
    for suffix in ("", "-wal", "-shm"):
        Path(str(mine) + suffix).unlink(missing_ok=True)
    env = cli.json("recall", "billing", "-w", str(filled))
    assert env["data"]["cache"]["rebuilt"] is True and len(ids(env)) == 1
    assert cache_files() == [mine]
