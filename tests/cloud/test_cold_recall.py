"""The first recall on a fresh machine against a big Box workspace: a few calls, not one per file.

A folder whose `_index.json` is big (store/cloud/pins.py: PIN_MIN_BYTES) is read through that
index, found by Box search and pinned by its sha1; the folder is not listed and the memory files
are not read. Index routes (id, wikilink, slug, title, tag, filters) answer from the index; a word
found only in bodies goes through Box search (`search_files_keyword`), whose hits' bodies are read
and kept. Everything runs against the emulator over real HTTP; "a fresh machine" is a new, empty
BOX_MEMORY_HOME (no recall cache, content cache, listings or tool catalogue).
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.format import frontmatter
from box_memory.format.model import Memory, index_entry
from box_memory.store.cloud import close_all
from box_memory.workspace.index import FolderIndex, refresh_rollup, save_index
from box_memory.workspace.resolve import open_workspace
from tests.cloud.conftest import Backend
from tests.conftest import Cli
from tests.helpers.corpus import mem_id

N = 420  # an index of about 300 KiB: over PIN_MIN_BYTES, so the folder is read through it
TOPICS = ["auth", "billing", "search", "deploy", "cache", "queue", "schema", "metrics"]
KINDS = ["decision", "fact", "task", "observation"]
# Words each found in the bodies of a few memories only, never in a title, slug or tag.
BODY_ONLY = {"zanzibarite": [37], "quillwort": [5, 150, 300, 401]}
COMMON = "halyard"  # in the bodies of every 20th memory, one to three times


def _meta(i: int) -> dict[str, Any]:
    topic = TOPICS[i % len(TOPICS)]
    stamp = f"2026-0{1 + i % 9}-{1 + i % 27:02d}T10:{i % 60:02d}:00.000Z"
    return {
        "id": mem_id(10_000 + i),
        "slug": f"{topic}-note-{i}",
        "title": f"{topic.capitalize()} note {i}",
        "kind": KINDS[i % len(KINDS)],
        "status": "active",
        "team": None,
        "agent": "seed",
        "created_at": stamp,
        "updated_at": stamp,
        "tags": sorted({topic, TOPICS[(i * 3) % len(TOPICS)]}),
    }


def _body(i: int) -> str:
    words = [w for w, at in BODY_ONLY.items() if i in at]
    if i % 20 == 0:
        words += [COMMON] * (1 + i % 3)
    filler = " ".join(f"w{(i * 7 + k) % 97}" for k in range(40))
    return f"## Context\n\nNote {i} records {' '.join(words)} details. {filler}\n"


@pytest.fixture
def big(make: Any, emu: Emulator) -> Backend:
    """A cloud workspace of N memories in `memories/`, seeded on the emulator's disk with an index
    written by the project's own code (as `index-rebuild` writes it), not N uploads."""
    cloud: Backend = make("cloud")
    ws = open_workspace(cloud.spec)
    entries = []
    for i in range(N):
        meta = _meta(i)
        name = f"{meta['kind']}__{meta['slug']}.md"
        mem = Memory(meta, _body(i), f"memories/{name}")
        data = frontmatter.render(meta, mem.body).encode("utf-8")
        cloud.put(f"memories/{name}", data)
        fid = emu.fs.id_for_path(f"{cloud.name}/memories/{name}")
        entries.append(index_entry(mem, filename=name, file_id=fid, size_bytes=len(data)))
    old = json.loads(ws.store.read_bytes("memories/_index.json"))
    idx = FolderIndex("memories", {**old, "entries": entries})
    idx.mark_dirty()
    save_index(ws, idx)
    refresh_rollup(ws)
    close_all()
    return cloud


def _fresh_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    close_all()
    home = tmp_path / name
    home.mkdir()
    monkeypatch.setenv("BOX_MEMORY_HOME", str(home))
    return home


def _recall(b: Backend, emu: Emulator, *args: str) -> tuple[dict[str, Any], Counter[str]]:
    emu.reset_calls()
    env = b.run("recall", *args)
    calls = Counter(c.name for c in emu.calls)
    calls.trail = [(c.name, _where(emu, c.arguments)) for c in emu.calls]  # type: ignore[attr-defined]
    return env, calls


def _where(emu: Emulator, args: dict[str, Any]) -> str:
    """A call's arguments with the Box ids it names spelled as paths (for a failing assert)."""
    out = []
    for k, v in args.items():
        shown = v
        if k.endswith("_id"):
            with contextlib.suppress(Exception):  # an id the emulator does not know: as it came
                shown = emu.fs.path_of(emu.fs.get(v)).relative_to(emu.fs.root).as_posix()
        if k != "fields":
            out.append(f"{k}={shown}")
    return " ".join(out)


def _ids(env: dict[str, Any]) -> list[str]:
    return [h["id"] for h in env["data"]["hits"]]


@pytest.mark.parametrize(
    ("shape", "args", "want"),
    [
        ("id", [mem_id(10_200)], 200),
        ("wikilink", ["[[Schema note 206]]"], 206),
        ("slug", ["deploy-note-211"], 211),
        ("title", ["Billing note 129"], 129),
        ("tag", ["#queue", "--limit", "3"], None),
        ("filter", ["--kind", "fact", "--tag", "metrics", "--limit", "5"], None),
    ],
)
def test_a_fresh_machine_answers_index_routes_with_a_few_calls(
    big: Backend,
    emu: Emulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    shape: str,
    args: list[str],
    want: int | None,
) -> None:
    _fresh_machine(tmp_path, monkeypatch, "m1")
    env, calls = _recall(big, emu, *args)
    ids = _ids(env)
    assert ids, env
    if want is not None:
        assert ids[0] == mem_id(10_000 + want)
    else:
        metas = {mem_id(10_000 + i): _meta(i) for i in range(N)}
        for hit in ids:
            m = metas[hit]
            if shape == "tag":
                assert "queue" in m["tags"]
            else:
                assert m["kind"] == "fact" and "metrics" in m["tags"]
    # Not one call per memory file (main: N + 10): the index, found by search, and the hits' bodies.
    assert sum(calls.values()) <= 20, "\n".join(map(str, calls.trail))  # type: ignore[attr-defined]
    # Every shape is answered by the indexes, Box search not asked for text: an id, a wikilink,
    # three exact tags and filters need nothing more; a slug or a title names its memory, and
    # the rest of the list is ranked on what is held here, which is said once.
    assert calls["search_files_keyword"] == 1, calls  # the one that found the indexes
    assert not [w for w in env["warnings"] if "Box search" in w], env["warnings"]
    named = [w for w in env["warnings"] if "the memory the query names" in w]
    assert len(named) == (1 if shape in ("slug", "title") else 0), env["warnings"]
    # No folder is listed but the workspace's root: the index search saw every index.
    assert calls["list_folder_content_by_folder_id"] == 1, "\n".join(map(str, calls.trail))  # type: ignore[attr-defined]


def test_a_word_only_in_bodies_is_found_through_box_search_with_one_lag_warning(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_machine(tmp_path, monkeypatch, "m1")
    env, calls = _recall(big, emu, "zanzibarite")
    assert _ids(env) == [mem_id(10_037)]
    lag = [w for w in env["warnings"] if "Box search may lag recent writes" in w]
    assert len(lag) == 1, env["warnings"]
    assert calls["search_files_keyword"] == 2, calls  # one finds the index, one the text
    assert sum(calls.values()) <= 30, calls
    # The hit's body is now held.
    env, calls = _recall(big, emu, "zanzibarite")
    assert _ids(env) == [mem_id(10_037)]
    # Other bodies are still pending, so Box is asked again; the hit's body is not read again.
    assert calls["search_files_keyword"] == 1 and calls["get_file_content"] == 0, calls


def test_held_and_searched_bodies_come_out_in_the_order_of_a_machine_holding_every_body(
    big: Backend, emu: Emulator, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference: the same files opened as a local folder, every body read.
    _fresh_machine(tmp_path, monkeypatch, "local")
    ref = cli.json("recall", COMMON, "--limit", "50", "-w", str(big.root))
    want = [h["id"] for h in ref["data"]["hits"]]
    assert len(want) == N // 20
    _fresh_machine(tmp_path, monkeypatch, "m1")
    env, _ = _recall(big, emu, "quillwort")  # holds four bodies; the rest stay pending
    assert sorted(_ids(env)) == sorted(mem_id(10_000 + i) for i in BODY_ONLY["quillwort"])
    env, calls = _recall(big, emu, COMMON, "--limit", "50")
    num = {mem_id(10_000 + i): i for i in range(N)}
    assert [num[i] for i in _ids(env)] == [num[i] for i in want], (
        [h["score"] for h in env["data"]["hits"]],
        [h["score"] for h in ref["data"]["hits"]],
    )
    assert calls["search_files_keyword"] == 1, calls
    # A limit smaller than the matches: Box's own ranking picks which five bodies are read (at
    # most `limit`), and those five come out in the order the full reference gives them.
    _fresh_machine(tmp_path, monkeypatch, "m2")
    env, calls = _recall(big, emu, COMMON, "--limit", "5")
    got = _ids(env)
    assert len(got) == 5 and set(got) <= set(want)
    assert got == [i for i in want if i in got]
    assert calls["get_file_content"] <= 5 + 5, calls  # five indexes, then at most `limit` bodies


def test_another_machines_write_is_seen_by_the_next_recall(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m1 = _fresh_machine(tmp_path, monkeypatch, "m1")
    env, _ = _recall(big, emu, "Auth note 8")
    assert _ids(env)[0] == mem_id(10_008)
    _fresh_machine(tmp_path, monkeypatch, "m2")
    wrote = big.data("write", "The quokka rollout waits for the marmoset audit.", "--title", "Quokka rollout")
    close_all()
    monkeypatch.setenv("BOX_MEMORY_HOME", str(m1))
    env, calls = _recall(big, emu, "Quokka rollout")  # a title: from the index, a new version
    assert _ids(env)[0] == wrote["id"]
    assert sum(calls.values()) <= 20, calls
    env, _ = _recall(big, emu, "marmoset")  # body only: held since the last recall read it
    assert _ids(env) == [wrote["id"]]


def test_fetch_fills_the_text_paced_under_the_rate_limit_and_recall_then_searches_it_locally(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_machine(tmp_path, monkeypatch, "m1")
    _recall(big, emu, "Auth note 8")  # a cold build: indexes only, bodies pending
    # Box's 1,000 calls a minute, in a 12 s window (200 calls) so that the test stays short.
    emu.configure(rate_limit=True, calls_per_minute=200, rate_window_s=12)
    emu.reset_calls()
    env = big.run("fetch", "--limit", "150", "--calls-per-minute", "900")
    d = env["data"]
    assert d["fetched"] == 150 and d["failed"] == 0
    assert 0 < d["remaining"] <= N - 150  # (the first recall read a few hits' bodies)
    assert emu.counters.get("rate_limited", 0) == 0, emu.counters  # no 429 from the budget
    assert d["pace"]["calls_per_minute"] == 900
    # At most the pace, plus one chunk of 8 calls taken at once over this short a run.
    assert 700 <= d["pace"]["achieved_per_minute"] <= 900 * (151 + 8) / 151, d["pace"]
    gets = [c for c in emu.calls if c.name == "get_file_content"]
    assert len(gets) == 150  # one call per body: the listing gave the sha1s
    # The rest unpaced, under the same budget: it meets the limit (the switch is on), waits out
    # each Retry-After (no command deadline) and still fetches everything.
    emu.reset_calls()
    env = big.run("fetch", "--calls-per-minute", "0")
    assert env["data"]["remaining"] == 0
    assert emu.counters.get("rate_limited", 0) > 0, emu.counters
    emu.configure(rate_limit=False)
    env, calls = _recall(big, emu, "zanzibarite")
    assert _ids(env) == [mem_id(10_037)]
    assert calls["search_files_keyword"] == 0 and calls["get_file_content"] == 0, calls
    assert not [w for w in env["warnings"] if "Box search" in w], env["warnings"]
    env = big.run("fetch")
    assert env["data"]["fetched"] == 0 and env["data"]["remaining"] == 0


def test_fetch_says_its_plan_first_and_has_no_command_deadline(
    big: Backend, emu: Emulator, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh_machine(tmp_path, monkeypatch, "m1")
    _recall(big, emu, "Auth note 8")
    monkeypatch.setenv("BOX_MEMORY_DEADLINE_S", "1")  # the pace below takes about 3 s
    res = cli("fetch", "--limit", "24", "--calls-per-minute", "480", "-w", big.spec)
    assert res.exit_code == 0, res.output
    assert (
        "Fetching the text of 24 memories from Box (25 calls at 480 calls a minute: about 3 s)" in res.stderr
    )
    assert "Fetched the text of 24 memories" in res.stdout
    env = big.run("recall", "Auth note 8")  # other commands keep theirs
    assert env["exit_code"] == 0


def test_an_index_outside_the_config_s_folders_makes_the_fresh_machine_look_for_it(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A companions/ folder with its own index in the team (the folder layout, made elsewhere):
    # the config does not name it, so its team folder is listed to find it, as before.
    index = json.loads(big.path("teams/default/files/_index.json").read_bytes())
    big.put("teams/default/companions/_index.json", json.dumps({**index, "entries": []}).encode())
    _fresh_machine(tmp_path, monkeypatch, "m1")
    env, calls = _recall(big, emu, mem_id(10_200))
    assert _ids(env) == [mem_id(10_200)]
    listed = [args for name, args in calls.trail if name == "list_folder_content_by_folder_id"]  # type: ignore[attr-defined]
    assert any(a.startswith(f"folder_id={big.name}/teams/default ") for a in listed), listed


def test_a_fresh_machine_fetches_the_folder_indexes_together(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each call waits 250 ms before it runs: indexes fetched one after another start at least
    # that far apart; fetched together (a few at a time), they start within a moment of each other.
    _fresh_machine(tmp_path, monkeypatch, "m1")
    emu.configure(latency_ms=250)
    env, _ = _recall(big, emu, mem_id(10_200))
    assert _ids(env)[0] == mem_id(10_200)
    starts = sorted(
        c.time
        for c in emu.calls
        if c.name == "get_file_content" and _where(emu, c.arguments).endswith("/_index.json")
    )
    assert len(starts) >= 2, "\n".join(f"{c.name} {_where(emu, c.arguments)}" for c in emu.calls)
    assert min(b - a for a, b in itertools.pairwise(starts)) < 0.2, starts
    # Each index is read once: the read that parses it takes the fetched copy.
    paths = [_where(emu, c.arguments) for c in emu.calls if c.name == "get_file_content"]
    assert len(paths) == len(set(paths)), paths


def test_an_index_over_the_read_cap_is_not_fetched_ahead(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from box_memory.format import safeio

    size = (big.root / "memories" / "_index.json").stat().st_size
    monkeypatch.setitem(safeio.LIMITS, "index", size - 1)  # the memories index only is over it
    _fresh_machine(tmp_path, monkeypatch, "m1")
    env, _ = _recall(big, emu, "anything")
    read = [_where(emu, c.arguments).split("/", 1)[-1] for c in emu.calls if c.name == "get_file_content"]
    assert "memories/_index.json" not in read, read
    # Said, not skipped silently: one warning names that index, and the folder it left out.
    said = [w for w in env["warnings"] if w.startswith("memories/_index.json ")]
    assert len(said) == 1 and said[0].endswith("(recall skipped this folder)"), env["warnings"]


@pytest.mark.parametrize("expired", [False, True])
def test_a_big_index_is_fetched_as_bytes_and_as_text_when_its_download_fails(
    big: Backend, emu: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, expired: bool
) -> None:
    from box_memory.store.cloud import reading

    # The memories index (~300 KiB here) counts as big; the small ones are read as text.
    monkeypatch.setattr(reading, "DOWNLOAD_MIN_BYTES", 100_000)
    if expired:
        emu.configure(download_ttl_s=0)  # every download URL has expired by the time it is used
    _fresh_machine(tmp_path, monkeypatch, "m1")
    env, _ = _recall(big, emu, mem_id(10_200))
    assert _ids(env)[0] == mem_id(10_200)
    texts = [_where(emu, c.arguments).split("/", 1)[-1] for c in emu.calls if c.name == "get_file_content"]
    urls = [_where(emu, c.arguments).split("/", 1)[-1] for c in emu.calls if c.name == "get_download_url"]
    assert "memories/_index.json" in urls, urls
    assert ("memories/_index.json" in texts) is expired, texts
    assert "files/_index.json" in texts and "files/_index.json" not in urls
