"""Names on Box Drive: skip list, Windows limits, 260-character paths, case folding, NFC/NFD.

Linux ext4 is case-sensitive and keeps names as bytes, so each macOS/Windows property is
simulated here: case variants and NFD names are created on disk by hand, and every name
box-memory creates is checked against the rules in `box_memory/names.py`.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from box_memory.format.names import MAX_PATH, fit_slug, name_problem, path_problem

PDF = b"%PDF-1.7\n" + bytes(range(256)) * 20
NFC_NAME = "Résumé.pdf"
NFD_NAME = unicodedata.normalize("NFD", NFC_NAME)


def w(root: Path) -> list[str]:
    return ["-w", str(root)]


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("con", "reserved device name"),
        ("CON.txt", "reserved device name"),
        ("com1.tar.gz", "reserved device name"),
        ("Lpt9", "reserved device name"),
        ("a.", "trailing dot or space"),
        ("a ", "trailing dot or space"),
        ('a"b', "does not allow"),
        ("a<b", "does not allow"),
        ("a|b", "does not allow"),
        ("a?b", "does not allow"),
        ("a*b", "does not allow"),
        ("a:b", "does not allow"),
        ("~$draft.docx", "temporary"),
        (".hidden", "hidden"),
        ("x.TMP", ".tmp"),
        ("x.bak", ".bak"),
        ("x.lnk", ".lnk"),
        ("x.qbi", ".qbi"),
        ("desktop.ini", "system"),
        ("Thumbs.db", "system"),
        ("1234ABCD", "8 uppercase hex"),
        ("mail.pst", "blocks"),
        ("books.qbw.tlg", "blocks"),
    ],
)
def test_names_box_drive_or_windows_would_not_keep_are_named_with_the_reason(name, expected):
    problem = name_problem(name)
    assert problem is not None and expected in problem


@pytest.mark.parametrize(
    "name",
    ["_index.json", "_box-memory.json", "_box-memory.lock", "README.md", "_archive", "note__foo.md",
     "1234abcd", "1234ABCD.pdf", "console.md", "com10", "report.pdf.md", "Résumé.pdf"],
)  # fmt: skip
def test_names_box_memory_uses_and_ordinary_names_pass(name):
    assert name_problem(name) is None


def test_a_long_slug_is_cut_so_the_path_with_a_suffix_fits_260_characters():
    folder = "teams/" + "t" * 64 + "/memories"
    slug = fit_slug("a" * 400, folder, "observation")
    assert len(f"{folder}/observation__{slug}-999.md") == MAX_PATH
    assert fit_slug("short", folder, "note") == "short"
    assert path_problem("x/" * 130 + "y") is not None  # 261 characters


@pytest.mark.parametrize("team", ["con", "nul", "aux", "com1", "lpt1", "prn", "com9", "lpt9"])
def test_windows_reserved_team_names_are_refused_and_nothing_changes(cli, ws, snap, team):
    before = snap(ws)
    env = cli.json("team", "create", team, *w(ws), code=2)
    assert "reserved device name" in env["errors"][0]["message"]
    assert "\n" not in env["errors"][0]["message"]
    assert snap(ws) == before
    write = cli.json("write", "x", "--title", "T", "--team", team, *w(ws), code=2)
    assert "reserved" in write["errors"][0]["message"]


def test_init_refuses_a_reserved_team_name(cli, tmp_path):
    env = cli.json("init", "--path", str(tmp_path / "w"), "--team", "nul", code=2)
    assert "reserved device name" in env["errors"][0]["message"]


@pytest.mark.parametrize(
    "name",
    ["~$draft.docx", ".hidden.pdf", "notes.tmp", "old.bak", "1234ABCD", "trailing.", "mail.pst", "con.pdf"],
)
def test_companions_for_binaries_box_drive_would_not_sync_are_refused(cli, ws, snap, name):
    (ws / "files" / name).write_bytes(PDF)
    before = snap(ws)
    env = cli.json("companion", f"files/{name}", *w(ws), code=2)
    msg = env["errors"][0]["message"]
    assert msg.startswith(f"binary {name!r} cannot be used: ") and "\n" not in msg
    assert snap(ws) == before


def test_a_companion_whose_path_would_pass_260_characters_is_refused(cli, ws, snap):
    team = "t" * 64
    cli.json("team", "create", team, *w(ws))
    name = "r" * 178 + ".pdf"  # the binary's path fits (259), its companion's does not (262)
    binary = f"teams/{team}/files/{name}"
    assert len(binary) < MAX_PATH < len(binary + ".md")
    (ws / binary).write_bytes(PDF)
    before = snap(ws)
    env = cli.json("companion", binary, *w(ws), code=2)
    assert "260" in env["errors"][0]["message"]
    assert snap(ws) == before


def test_every_file_box_memory_creates_is_a_name_box_drive_syncs(cli, tmp_path):
    root = tmp_path / "w"
    cli.json("init", "--path", str(root), "--team", "eng", "--layout", "folder")
    first = cli.json("write", "body", "--title", "A decision", "--kind", "decision", *w(root))["data"]
    cli.json("write", "body 2", "--title", "A decision", "--supersedes", first["id"], *w(root))
    cli.json("write", "x", "--title", "Team note", "--team", "eng", *w(root))
    (root / "files" / "plan.pdf").write_bytes(PDF)
    cli.json("companion", "files/plan.pdf", *w(root))
    (root / "files" / "plan.pdf").write_bytes(PDF + b"changed")
    cli.json("companion", "files/plan.pdf", *w(root))  # supersedes: the old one is archived
    cli.json("team", "create", "ops", *w(root))
    cli.json("write", "y", "--title", "Ops", "--team", "ops", *w(root))
    cli.json("team", "remove", "ops", "--yes", *w(root))
    cli.json("index-rebuild", *w(root))
    made = tree(root)
    assert any(p.startswith("_archive/companions/") for p in made)
    assert any(p.startswith("_archive/teams/ops") for p in made)
    problems = {p: path_problem(p) for p in made if p != "files/plan.pdf"}
    assert {p: r for p, r in problems.items() if r} == {}


# --- case-insensitive collisions -----------------------------------------------------------------


def test_a_case_variant_on_disk_unknown_to_the_index_takes_the_file_name(cli, ws):
    """The clash is case-folded (Box, macOS, Windows); the memory keeps its slug ("slug stable")
    and only its file name takes the suffix."""
    foreign = ws / "memories" / "Note__Foo.md"
    foreign.write_text("written by another client\n", encoding="utf-8")
    made = cli.json("write", "content", "--title", "foo", "--kind", "note", *w(ws))["data"]
    assert made["slug"] == "foo"
    assert made["file"] == "memories/note__foo-2.md"
    assert not (ws / "memories" / "note__foo.md").exists()
    assert foreign.read_text(encoding="utf-8") == "written by another client\n"


def test_a_case_variant_of_a_companion_name_is_not_overwritten(cli, ws, snap):
    (ws / "files" / "report.pdf").write_bytes(PDF)
    (ws / "files" / "REPORT.PDF.md").write_text("someone else's notes\n", encoding="utf-8")
    before = snap(ws)
    env = cli.json("companion", "files/report.pdf", *w(ws), code=1)
    assert "already exists" in env["errors"][0]["message"]
    assert snap(ws) == before


def test_a_team_folder_differing_only_in_case_is_not_a_second_team(cli, ws, snap):
    (ws / "teams" / "Eng" / "memories").mkdir(parents=True)
    (ws / "teams" / "Eng" / "memories" / "x.md").write_text("x\n", encoding="utf-8")
    before = snap(ws)
    env = cli.json("team", "create", "eng", *w(ws), code=1)
    assert "teams/Eng/ already exists" in env["errors"][0]["message"]
    assert snap(ws) == before
    assert not (ws / "teams" / "eng").exists()


def test_archiving_a_team_next_to_a_case_variant_takes_a_fresh_name(cli, ws):
    cli.json("team", "create", "old", *w(ws))
    cli.json("write", "x", "--title", "Old note", "--team", "old", *w(ws))
    (ws / "_archive" / "teams" / "OLD").mkdir(parents=True)
    (ws / "_archive" / "teams" / "OLD" / "keep.txt").write_text("earlier archive\n", encoding="utf-8")
    res = cli.json("team", "remove", "old", "--yes", *w(ws))["data"]
    assert res["archived_to"].startswith("_archive/teams/old.")
    assert (ws / "_archive" / "teams" / "OLD" / "keep.txt").read_text(encoding="utf-8") == "earlier archive\n"
    assert list((ws / res["archived_to"] / "memories").glob("note__*.md"))


# --- NFC / NFD -------------------------------------------------------------------------------------


def test_a_companion_for_an_nfd_binary_records_nfc_and_survives_nfd_names_on_disk(cli, ws):
    (ws / "files" / NFD_NAME).write_bytes(PDF)
    made = cli.json("companion", f"files/{NFC_NAME}", *w(ws))["data"]
    assert made["binary"] == f"files/{NFC_NAME}"
    assert made["path"] == f"files/{NFC_NAME}.md"
    idx = json.loads((ws / "files" / "_index.json").read_bytes())
    assert idx["entries"][0]["companion_for"] == f"files/{NFC_NAME}"
    # macOS hands the companion back with a decomposed name, as Box Drive synced it.
    (ws / "files" / f"{NFC_NAME}.md").rename(ws / "files" / f"{NFD_NAME}.md")
    status = cli.json("status", *w(ws))["data"]
    assert status["index_health"]["drifted"] == []
    chk = cli.json("companion", f"files/{NFC_NAME}", "--check", *w(ws))["data"]
    assert chk["state"] == "current"
    assert cli.json("companion", f"files/{NFD_NAME}", "--check", *w(ws))["data"]["state"] == "current"
    assert cli.json("index-rebuild", "--check", *w(ws))["exit_code"] == 0
    got = cli.json("get", made["id"], *w(ws))["data"]
    assert got["frontmatter"]["companion_for"]["local_path"] == f"files/{NFC_NAME}"
    team = cli.json("team", "inspect", "default", *w(ws))["data"]
    assert team["files_list"] == [{"path": f"files/{NFC_NAME}", "companion": True}]


def test_team_folder_names_from_disk_are_compared_in_nfc(cli, ws):
    nfd = unicodedata.normalize("NFD", "Équipe")
    (ws / "teams" / nfd / "memories").mkdir(parents=True)
    (ws / "teams" / nfd / "memories" / "x.md").write_text("x\n", encoding="utf-8")
    listed = cli.json("team", "ls", *w(ws))["data"]
    assert listed["untracked_folders"] == ["teams/Équipe/"]


def test_brain_sync_local_ids_are_nfc_whichever_form_the_disk_shows(cli, ws, tmp_path):
    drive = tmp_path / "drive"
    drive.mkdir()
    nfd = unicodedata.normalize("NFD", "Résumé notes.md")
    (drive / nfd).write_text("Résumé of the plan\n", encoding="utf-8")
    first = cli.json("brain-sync", "--path", str(drive), *w(ws))["data"]["runs"][0]
    assert first["counts"]["indexed"] == 1
    items = cli.json("brain", "items")["data"]["items"]
    assert [i["path"] for i in items] == ["Résumé notes.md"]
    # Another client re-uploads it and the disk now shows the composed name: the same item.
    (drive / nfd).rename(drive / "Résumé notes.md")
    second = cli.json("brain-sync", "--path", str(drive), *w(ws))["data"]["runs"][0]
    assert second["counts"]["unchanged"] == 1
    assert second["counts"].get("deleted", 0) == 0
    assert len(cli.json("brain", "items")["data"]["items"]) == 1
