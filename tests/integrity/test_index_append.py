"""A write into a large folder appends its entry to the index's bytes without parsing them
(workspace/index.py: RawEntries), and the file it writes is byte for byte what parsing the whole
index, appending the entry and dumping it again would write: for indexes box-memory wrote (with
unicode and escapes), one the plugin wrote, and one with its keys in another order. A write that
needs more than an append (a retry, a duplicate title, a taken slug, drift, a file another tool
replaced) parses the index as before.

"Large" is a few entries here: the thresholds are lowered (COMPACT_ABOVE, CHECKED_MIN_BYTES,
LAZY_ROLLUP_BYTES) so the tests run the very code a 40,000-memory folder runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import orjson
import pytest

from box_memory.format import frontmatter
from box_memory.format.ids import new_id, slugify
from box_memory.format.model import Memory, index_entry
from box_memory.workspace import index
from tests.integrity.test_crash import FAST_LOCK
from tests.integrity.util import bm, bm_json, fake_id

EXAMPLES = next(
    (
        p / "shared" / "reference" / "plugin-examples"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "reference" / "plugin-examples").is_dir()
    ),
    None,
)

TITLES = [
    'Café "quoted" naïve',
    "Emoji 🚀 launch plan",
    "日本語のメモ",
    "Tab\u00a0nbsp and \u2028 line separator",
    "Apostrophe's & ampersand <tag>",
    "Ünïcode Title",
]


def lower_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A few entries make a "large" index: the code a 40,000-memory folder runs."""
    monkeypatch.setattr(index, "CHECKED_MIN_BYTES", 0)
    monkeypatch.setattr(index, "COMPACT_ABOVE", 3)
    monkeypatch.setattr(index, "LAZY_ROLLUP_BYTES", 0)  # the rollup may lag, as a large one does


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lowered thresholds; returns the index parses made (`spy_parses`)."""
    lower_thresholds(monkeypatch)
    return spy_parses(monkeypatch)


def spy_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The memories index's parses from now on: its file parsed whole, or unparsed entries parsed
    later (a spy: the real parse still runs)."""
    seen: list[str] = []
    real_parse = index.parse_index
    real_raw = getattr(index.FolderIndex, "_parse_raw", None)

    def parse(raw: bytes, where: str, *, checked: bool = False) -> dict[str, Any]:
        if where.endswith("memories/_index.json"):
            seen.append("parse")
        return real_parse(raw, where, checked=checked)

    def parse_raw(self: index.FolderIndex) -> None:
        if self.raw() is not None:
            seen.append("unparsed entries parsed")
        if real_raw is not None:
            real_raw(self)

    monkeypatch.setattr(index, "parse_index", parse)
    monkeypatch.setattr(index.FolderIndex, "_parse_raw", parse_raw, raising=False)
    return seen


def full_path(before: bytes, after: bytes) -> bytes:
    """What the write makes of `before` parsed whole: the entry it added appended, the maps
    extended, dumped (the write's own time and count taken from `after`)."""
    old, new = orjson.loads(before), orjson.loads(after)
    idx = index.FolderIndex("memories", old)
    idx.upsert(new["entries"][-1])
    idx.finalize("unknown")
    idx.data["updated_at"] = new["updated_at"]
    return orjson.dumps(idx.data, option=orjson.OPT_NON_STR_KEYS)


def write(cli: Any, ws: Path, title: str, *extra: str, code: int = 0) -> dict[str, Any]:
    return cli.json("write", f"We decided: {title}.", "--title", title, "-w", str(ws), *extra, code=code)


def checked_write(
    cli: Any, ws: Path, parses: list[str], title: str, *extra: str, parsed: bool = False
) -> None:
    """One write: its index file is the full path's bytes; it parsed the index only if `parsed`."""
    path = ws / "memories" / "_index.json"
    before = path.read_bytes()
    parses.clear()
    env = write(cli, ws, title, *extra)
    after = path.read_bytes()
    assert after == full_path(before, after)
    assert orjson.loads(after)["entries"][-1]["id"] == env["data"]["id"]
    assert bool(parses) == parsed, parses


def test_appended_bytes_are_the_full_dump_for_indexes_box_memory_wrote(
    cli: Any, ws: Path, parses: list[str]
) -> None:
    for n in range(4):  # up to 4 entries: the fourth save is compact and records its layout
        write(cli, ws, f"Seed memory {n}", "--tag", "seed")
    for n, title in enumerate(TITLES):
        tags = ["--tag", "seed", "--tag", f"t{n}"] if n % 2 else []
        checked_write(cli, ws, parses, title, *tags, "--related", "[[Seed memory 1]]")
    data = orjson.loads((ws / "memories" / "_index.json").read_bytes())
    assert data["entry_count"] == len(data["entries"]) == 4 + len(TITLES)
    assert {k: data[k] for k in index.INDEX_MAPS} == index.build_maps(data["entries"])
    env = cli.json("recall", "Emoji launch", "-w", str(ws))
    assert env["data"]["hits"][0]["title"] == "Emoji 🚀 launch plan"
    env = cli.json("index-rebuild", "--check", "-w", str(ws))
    mine = next(f for f in env["data"]["folders"] if f["folder"] == "memories/")
    assert (mine["drift"], mine["added"], mine["removed"], mine["changed"]) == (False, 0, 0, 0), mine


@pytest.mark.skipif(EXAMPLES is None, reason="the plugin's examples are not here")
def test_appended_bytes_are_the_full_dump_for_an_index_the_plugin_wrote(
    cli: Any, ws: Path, parses: list[str]
) -> None:
    assert EXAMPLES is not None
    plugin = orjson.loads((EXAMPLES / "example-_index.json").read_bytes())
    for name, example in zip(
        [e["filename"] for e in plugin["entries"]],
        ["example-memory-decision.md", "example-memory-task.md", "example-companion.md"],
        strict=True,
    ):
        shutil.copy(EXAMPLES / example, ws / "memories" / name)
    shutil.copy(EXAMPLES / "example-_index.json", ws / "memories" / "_index.json")
    parses.clear()
    write(cli, ws, "First after the plugin")  # parses the plugin's index (4 entries: compact)
    assert parses
    for title in TITLES[:3]:
        checked_write(cli, ws, parses, title, "--tag", "auth")
    data = orjson.loads((ws / "memories" / "_index.json").read_bytes())
    assert list(data) == list(plugin)  # the plugin's key order, its Box ids and companion map kept
    assert data["folder_id"] == plugin["folder_id"]
    assert data["by_companion_for"] == plugin["by_companion_for"]
    assert data["entries"][:3] == plugin["entries"]


def test_keys_in_another_order_and_unknown_keys_are_kept_in_place(
    cli: Any, ws: Path, parses: list[str]
) -> None:
    for n in range(5):
        write(cli, ws, f"Seed memory {n}")
    path = ws / "memories" / "_index.json"
    data = orjson.loads(path.read_bytes())
    entries = data.pop("entries")
    reordered = {"x-extension": {"note": 'ünï "q" \\ /'}, **data, "entries": entries, "x-tail": [1, None]}
    path.write_bytes(orjson.dumps(reordered))  # another tool's file: a new signature
    parses.clear()
    write(cli, ws, "After another tool")
    assert parses  # not this user's bytes: parsed
    checked_write(cli, ws, parses, TITLES[0])
    checked_write(cli, ws, parses, TITLES[1])
    assert list(orjson.loads(path.read_bytes())) == list(reordered)


def test_a_write_that_needs_more_than_an_append_parses_the_index(
    cli: Any, ws: Path, parses: list[str]
) -> None:
    for n in range(5):
        write(cli, ws, f"Seed memory {n}")
    checked_write(cli, ws, parses, "Ünïcode Title")
    # Another title with that slug: the slug is taken, the new one gets the next suffix.
    parses.clear()
    env = write(cli, ws, "Unicode Title!")
    assert env["data"]["slug"] == "unicode-title-2" and parses
    # A retry of the same write is recognised as done, not written again.
    checked_write(cli, ws, parses, "Plain retry")
    parses.clear()
    env = write(cli, ws, "Plain retry")
    assert env["data"].get("already_written") is True and parses
    # The same title with other content is refused as a duplicate.
    env = cli.json("write", "Other text", "--title", "Plain retry", "-w", str(ws), code=None)
    assert env["errors"][0]["code"] == "duplicate"
    # --new-slug keeps both: its title is in by_wikilink already (which entry wins: parsed).
    path = ws / "memories" / "_index.json"
    before = path.read_bytes()
    parses.clear()
    write(cli, ws, "Plain retry", "--new-slug")
    assert parses and path.read_bytes() == full_path(before, path.read_bytes())
    # The next plain write appends again.
    checked_write(cli, ws, parses, "Appends again")


def test_a_file_added_behind_the_index_is_repaired_as_before(cli: Any, ws: Path, parses: list[str]) -> None:
    for n in range(5):
        write(cli, ws, f"Seed memory {n}")
    checked_write(cli, ws, parses, "Appends")
    folder = ws / "memories"
    text = (folder / "decision__seed-memory-1.md").read_text(encoding="utf-8")
    old_id = orjson.loads((folder / "_index.json").read_bytes())["entries"][1]["id"]
    (folder / "note__copied-by-hand.md").write_text(text.replace(old_id, new_id()), encoding="utf-8")
    parses.clear()
    env = write(cli, ws, "After the copy")
    assert parses
    assert any("repaired drifted index" in w for w in env["warnings"]), env["warnings"]
    names = [e["filename"] for e in orjson.loads((folder / "_index.json").read_bytes())["entries"]]
    assert "note__copied-by-hand.md" in names
    checked_write(cli, ws, parses, "Appends after the repair")


def seed(ws: Path, n: int) -> None:
    """N memory files in memories/ and their index (as a rebuild writes it): past COMPACT_ABOVE
    and CHECKED_MIN_BYTES as they are, so a cold writer process takes the appending path."""
    folder, entries = ws / "memories", []
    for i in range(n):
        title = f"Seeded memory number {i} about the deploy queue and its retries"
        meta = {"id": fake_id(i), "slug": slugify(title), "title": title, "kind": "note", "status": "active"}
        meta |= {"team": "default", "created_at": "2026-01-01T00:00:00.000Z", "tags": ["seed", f"s{i % 7}"]}
        meta["updated_at"] = meta["created_at"]
        raw = frontmatter.render(meta, f"# {title}\n\nSeeded body {i}.\n").encode()
        name = f"note__{meta['slug']}.md"
        (folder / name).write_bytes(raw)
        mem = Memory(meta, f"# {title}\n", f"memories/{name}")
        entries.append(index_entry(mem, filename=name, file_id=None, size_bytes=len(raw)))
    idx = index.FolderIndex("memories", {"version": 1, "folder_id": None, "entries": entries})
    idx.finalize("unknown")
    (folder / "_index.json").write_bytes(idx.to_bytes())


@pytest.mark.parametrize("step", ["write:file-created", "write:index-saved"])
def test_a_writer_killed_while_appending_loses_nothing(ws: Path, step: str) -> None:
    seed(ws, index.COMPACT_ABOVE + 400)
    path = ws / "memories" / "_index.json"
    assert path.stat().st_size >= index.CHECKED_MIN_BYTES
    first = bm_json("write", "We decided: the first.", "--title", "Acknowledged first", "-w", str(ws))
    hints = json.loads(
        next((Path(os.environ["BOX_MEMORY_HOME"]) / "cache" / "index-checks").glob("*.json")).read_bytes()
    )
    st = path.stat()
    layout = hints["layout\0memories/_index.json"]
    assert (
        layout[0] == f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    )  # the next write appends
    before = path.read_bytes()

    proc = bm(
        "write",
        "We decided: killed.",
        "--title",
        "Killed midway",
        "-w",
        str(ws),
        env={"BOX_MEMORY_CRASH_AT": step},
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    data = orjson.loads(path.read_bytes())  # whole: the old bytes or the new, never torn
    titles = [e["title"] for e in data["entries"]]
    if step == "write:index-saved":
        assert titles[-1] == "Killed midway" and path.read_bytes() == full_path(before, path.read_bytes())
    else:
        assert path.read_bytes() == before

    nxt = bm_json(
        "write", "We decided: after.", "--title", "Acknowledged after", "-w", str(ws), env=FAST_LOCK
    )
    data = orjson.loads(path.read_bytes())
    ids = {e["id"] for e in data["entries"]}
    assert {first["data"]["id"], nxt["data"]["id"]} <= ids  # every acknowledged write is indexed
    assert "Killed midway" in [e["title"] for e in data["entries"]]  # the killed one's file too
    assert {k: data[k] for k in index.INDEX_MAPS} == index.build_maps(data["entries"])
    assert bm_json("index-rebuild", "--check", "-w", str(ws))["data"]["drift"] is False
