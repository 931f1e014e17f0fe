"""Two machines writing to one Box Drive workspace before Box Drive has synced either.

Box Drive is simulated: two copies of one workspace folder are written to independently, then
merged the way Box Drive keeps both versions of a file changed on two machines (the later
version saved as a conflict copy beside the original). How long Box Drive takes to propagate is
not simulated; what is checked is what box-memory guarantees whatever the delay.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from box_memory.format import frontmatter


def w(root: Path) -> list[str]:
    return ["-w", str(root)]


def box_drive_merge(first: Path, later: Path, into: Path) -> list[str]:
    """`first` as it synced, then `later`'s files: new ones as they are, changed ones as
    `<stem> (1)<ext>` beside the original. Returns the conflict copies made."""
    shutil.copytree(first, into)
    copies = []
    for src in sorted(p for p in later.rglob("*") if p.is_file()):
        rel = src.relative_to(later)
        dst = into / rel
        if not dst.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        elif dst.read_bytes() != src.read_bytes():
            copy = dst.with_name(f"{dst.stem} (1){dst.suffix}")
            shutil.copy2(src, copy)
            copies.append(str(copy.relative_to(into)))
    return copies


def memory_ids(root: Path) -> set[str]:
    out = set()
    for p in root.rglob("*.md"):
        if p.name == "README.md" or "_archive" in p.parts:
            continue
        meta, _ = frontmatter.parse(p.read_text("utf-8"), str(p))
        out.add(str(meta["id"]))
    return out


def test_writes_on_two_machines_merge_into_one_index_and_no_memory_is_lost(cli, tmp_path):
    base = tmp_path / "base"
    cli.json("init", "--path", str(base))
    m0 = cli.json("write", "The first plan", "--title", "Plan", "--kind", "decision", *w(base))["data"]
    a, b = tmp_path / "machine-a", tmp_path / "machine-b"
    shutil.copytree(base, a)
    shutil.copytree(base, b)

    cli.json("write", "alpha", "--title", "Alpha", *w(a))
    cli.json("write", "from a", "--title", "Same title", *w(a))
    cli.json("write", "Plan as A sees it", "--title", "Plan", "--supersedes", m0["id"], *w(a))
    cli.json("write", "beta", "--title", "Beta", *w(b))
    cli.json("write", "from b", "--title", "Same title", *w(b))
    cli.json("write", "Plan as B sees it", "--title", "Plan", "--supersedes", m0["id"], *w(b))
    written = memory_ids(a) | memory_ids(b)
    assert len(written) == 7  # m0 + three on each machine

    merged = tmp_path / "merged"
    copies = box_drive_merge(a, b, merged)
    assert "memories/_index (1).json" in copies  # the later index, as a conflict copy
    assert "_index (1).json" in copies  # the later rollup
    assert any(c.startswith("memories/decision__plan") for c in copies)  # m0 changed on both
    assert "memories/note__same-title (1).md" in copies

    # The write path notices the copies in the folder it lists and says so in one line.
    wrote = cli.json("write", "after the merge", "--title", "Gamma", *w(merged))
    notes = [x for x in wrote["warnings"] if "conflict copies" in x]
    assert len(notes) == 1 and "\n" not in notes[0] and "_index (1).json" in notes[0]
    written.add(wrote["data"]["id"])

    status = cli.json("status", *w(merged))["data"]["index_health"]
    assert "memories/_index (1).json" in status["conflict_copies"]
    assert "_index (1).json" in status["conflict_copies"]
    assert "memories/note__same-title (1).md" in status["memory_conflict_copies"]
    assert status["ok"] is False

    # Both machines rewrote the plan (supersede bookkeeping): two files with one id. Exit 6 says
    # a person must pick one; both stay on disk and the index holds the memory.
    rebuilt = cli.json("index-rebuild", *w(merged), code=6)["data"]
    assert [sorted(d["paths"]) for d in rebuilt["duplicate_ids"]] == [
        ["memories/decision__plan (1).md", "memories/decision__plan.md"]
    ]
    assert {c["path"] for c in rebuilt["conflict_copies"]} == {"memories/_index (1).json", "_index (1).json"}
    idx = json.loads((merged / "memories" / "_index.json").read_bytes())
    indexed = {e["id"] for e in idx["entries"]}
    assert written <= indexed, written - indexed
    rollup = json.loads((merged / "_index.json").read_bytes())
    assert written <= {e["id"] for e in rollup["entries"]}
    assert memory_ids(merged) >= written  # no file was deleted
    # Merged: the index copies are archived, the memory copies are indexed, the next write is quiet.
    after = cli.json("status", *w(merged))["data"]["index_health"]
    assert after["conflict_copies"] == []
    assert "memories/note__same-title (1).md" in after["memory_conflict_copies"]
    quiet = cli.json("write", "later", "--title", "Delta", *w(merged))
    assert not [x for x in quiet["warnings"] if "conflict copies" in x]
    # Both machines superseded the plan: the fork is reported, and both successors are kept.
    plan = [e for e in idx["entries"] if e["title"] == "Plan"]
    assert len(plan) == 3


def test_a_companion_write_notices_conflict_copies_in_its_folder(cli, tmp_path):
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root))
    (root / "files" / "plan.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)))
    cli.json("companion", "files/plan.pdf", *w(root))
    index = root / "files" / "_index.json"
    (root / "files" / "_index (1).json").write_bytes(index.read_bytes())  # another machine's index
    (root / "files" / "plan.pdf").write_bytes(b"%PDF-1.7\nchanged")
    env = cli.json("companion", "files/plan.pdf", *w(root))
    notes = [x for x in env["warnings"] if "conflict copies" in x]
    assert notes == [
        "files/ holds sync conflict copies from another machine (_index (1).json); "
        "run `box-memory index-rebuild` to merge them"
    ]
