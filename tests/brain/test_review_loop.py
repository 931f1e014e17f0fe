"""The review loop as the design says: candidates are edited before acceptance ($EDITOR or flags),
the review pass proposes archiving a memory the evidence retires, and accepting that archives it
through a superseding `archived` memory (nothing deleted)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from tests.brain.helpers import put, sync
from tests.conftest import Cli


def _candidates(cli: Cli, status: str = "proposed") -> list[dict]:
    cands: list[dict] = cli.json("brain", "review", "--status", status)["data"]["candidates"]
    return cands


def _setup(cli: Cli, ws: Path, tmp_path: Path) -> tuple[str, dict]:
    old = cli.json(
        "write",
        "Deploys go through the Jenkins pipeline on the build server.",
        "--title",
        "Jenkins deploy pipeline",
        "--kind",
        "decision",
        "-w",
        str(ws),
    )["data"]["id"]
    drive = tmp_path / "Box"
    put(
        drive,
        "platform-update.md",
        "Platform update.\n\nThe Jenkins deploy pipeline is now retired; builds moved to the new CI.\n",
    )
    run = sync(cli, "--path", str(drive), "-w", str(ws))
    assert run["review"]["status"] == "done", run["review"]
    [archive] = [c for c in _candidates(cli) if c["kind"] == "archive"]
    return old, archive


def test_the_review_proposes_archiving_a_retired_memory_and_accepting_archives_it(
    cli: Cli, ws: Path, tmp_path: Path
) -> None:
    old, archive = _setup(cli, ws, tmp_path)
    assert archive["supersedes"] == old
    assert "retired" in archive["evidence"][0]["excerpt"]
    accepted = cli.json("brain", "accept", str(archive["id"]), "-w", str(ws))["data"]
    mem = accepted["memory"]
    new = cli.json("get", mem["id"], "-w", str(ws))["data"]
    assert new["frontmatter"]["status"] == "archived"
    assert new["frontmatter"]["supersedes"] == [old]
    before = cli.json("get", old, "-w", str(ws))["data"]
    assert before["frontmatter"]["status"] == "superseded"  # kept, never deleted
    assert (ws / before["path"]).is_file()
    # An archived memory is hidden from recall unless asked for.
    hits = cli.json("recall", "jenkins deploy", "-w", str(ws))["data"]["hits"]
    assert old not in {h["id"] for h in hits} and mem["id"] not in {h["id"] for h in hits}
    shown = cli.json("recall", "jenkins deploy", "--include-superseded", "-w", str(ws))["data"]["hits"]
    assert {old, mem["id"]} <= {h["id"] for h in shown}


def test_a_candidate_is_edited_with_flags_before_it_is_accepted(cli: Cli, ws: Path, tmp_path: Path) -> None:
    _old, archive = _setup(cli, ws, tmp_path)
    cid = str(archive["id"])
    edited = cli.json(
        "brain", "review", "edit", cid, "--title", "Jenkins retired", "--body", "Use the new CI."
    )
    assert edited["data"]["candidate"]["title"] == "Jenkins retired"
    assert edited["data"]["candidate"]["statement"] == "Use the new CI."
    piped = cli.json("brain", "review", "edit", cid, "--body", "-", input="Builds run on the new CI only.\n")
    assert piped["data"]["candidate"]["statement"] == "Builds run on the new CI only."
    mem = cli.json("brain", "accept", cid, "-w", str(ws))["data"]["memory"]
    got = cli.json("get", mem["id"], "-w", str(ws))["data"]
    assert got["frontmatter"]["title"] == "Jenkins retired"
    assert "Builds run on the new CI only." in got["body"]
    # Only a proposed candidate can be edited; a bad edit changes nothing.
    assert cli.json("brain", "review", "edit", cid, "--title", "x", code=2)["errors"]


def test_a_candidate_is_edited_in_the_editor(cli: Cli, ws: Path, tmp_path: Path, monkeypatch: object) -> None:
    _old, archive = _setup(cli, ws, tmp_path)
    editor = tmp_path / "fake-editor"
    editor.write_text(
        f"#!{sys.executable}\n"
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        "lines = p.read_text().splitlines()\n"
        "assert lines[0].startswith('Archived: ')\n"
        "p.write_text('Retire the Jenkins pipeline\\n\\nEdited in the editor.\\n' + '\\n'.join(lines[2:]))\n"
    )
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("EDITOR", str(editor))  # type: ignore[attr-defined]
    monkeypatch.delenv("VISUAL", raising=False)  # type: ignore[attr-defined]
    cand = cli.json("brain", "review", "edit", str(archive["id"]))["data"]["candidate"]
    assert cand["title"] == "Retire the Jenkins pipeline"
    assert cand["statement"].startswith("Edited in the editor.")
    assert "retired" in cand["statement"]  # the rest of the statement kept
