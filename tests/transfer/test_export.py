"""`box-memory export`: JSONL and markdown-zip, filters, and the export -> import round trip."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from box_memory.format import frontmatter


def write(cli, ws: Path, text: str, title: str, *extra: str) -> str:
    return cli.json("write", text, "--title", title, "-w", str(ws), *extra)["data"]["id"]


def build_workspace(cli, ws: Path) -> dict[str, str]:
    """Memories with tags, a team, a draft, related links, and a three-long supersede chain."""
    cli.json("team", "create", "platform", "-w", str(ws))
    ids = {}
    ids["a1"] = write(cli, ws, "We decided to use JWTs.", "Auth strategy", "--tag", "auth", "--agent", "ci")
    ids["a2"] = write(cli, ws, "We decided on sessions.", "Auth strategy", "--supersedes", ids["a1"])
    ids["a3"] = write(
        cli,
        ws,
        "We decided on passkeys.",
        "Auth strategy",
        "--supersedes",
        ids["a2"],
        "--tag",
        "auth",
        "--tag",
        "auth/passkeys",
        "--confidence",
        "0.8",
    )
    ids["deploy"] = write(
        cli,
        ws,
        "Deploys on Tuesdays.",
        "Deploy window",
        "--kind",
        "fact",
        "--team",
        "platform",
        "--source",
        "url:https://wiki.example/deploy",
    )
    ids["draft"] = write(
        cli, ws, "TODO rotate keys", "Rotate keys", "--status", "draft", "--related", "[[Auth strategy]]"
    )
    return ids


def all_memories(ws: Path) -> dict[str, dict[str, Any]]:
    """id -> (folder, frontmatter, body) of every memory file in the workspace."""
    out: dict[str, dict[str, Any]] = {}
    for p in ws.rglob("*__*.md"):
        if "_archive" in p.parts:
            continue
        meta, body = frontmatter.parse(p.read_text(encoding="utf-8"), str(p))
        out[meta["id"]] = {
            "folder": str(p.parent.relative_to(ws)),
            "file": p.name,
            "meta": meta,
            "body": body,
        }
    return out


def test_round_trip_reproduces_memories_and_chains(cli, ws: Path, tmp_path: Path) -> None:
    ids = build_workspace(cli, ws)
    out = tmp_path / "export.jsonl"
    env = cli.json("export", "--include-superseded", "-o", str(out), "-w", str(ws))
    assert env["data"]["count"] == 5 and env["data"]["by_status"] == {
        "superseded": 2,
        "active": 2,
        "draft": 1,
    }
    records = [json.loads(line) for line in out.read_text().splitlines()]
    # Every frontmatter field, the body, the folder and the chain links, oldest first.
    assert [r["id"] for r in records[:3]] == [ids["a1"], ids["a2"], ids["a3"]]
    first = records[0]
    assert first["superseded_by"] == ids["a2"] and first["frontmatter"]["agent"] == "ci"
    assert first["folder"] == "memories/" and first["body"].strip().startswith("# Auth strategy")
    assert records[1]["supersedes"] == [ids["a1"]]

    fresh = tmp_path / "fresh"
    cli.json("init", "--path", str(fresh), "--team", "platform")
    data = cli.json("import", str(out), "-w", str(fresh))["data"]
    assert data["format"] == "box-memory" and data["imported"] == 5 and data["failed"] == 0

    before, after = all_memories(ws), all_memories(fresh)
    assert set(before) == set(after) == set(ids.values())
    for mem_id, orig in before.items():
        copy = after[mem_id]
        assert copy["folder"] == orig["folder"], mem_id
        assert copy["file"] == orig["file"], mem_id
        assert copy["meta"] == orig["meta"], (mem_id, orig["meta"], copy["meta"])
        assert copy["body"] == orig["body"], mem_id
    history = cli.json("get", ids["a1"], "--history", "-w", str(fresh))["data"]
    assert [h["id"] for h in history["history"]] == [ids["a1"], ids["a2"], ids["a3"]]
    assert history["current_id"] == ids["a3"]
    assert cli.json("index-rebuild", "--check", "-w", str(fresh))["exit_code"] == 0

    # Importing the same export again writes nothing (ids already present).
    again = cli.json("import", str(out), "-w", str(fresh))["data"]
    assert again["imported"] == 0 and again["already_imported"] == 5


def test_default_export_leaves_out_superseded_and_since_filters(cli, ws: Path, tmp_path: Path) -> None:
    ids = build_workspace(cli, ws)
    res = cli("export", "-w", str(ws))  # JSONL on stdout
    assert res.exit_code == 0
    got = {json.loads(line)["id"] for line in res.stdout.splitlines()}
    assert got == {ids["a3"], ids["deploy"], ids["draft"]}
    future = cli.json("export", "--since", "2999-01-01", "-o", str(tmp_path / "none.jsonl"), "-w", str(ws))
    assert future["data"]["count"] == 0 and (tmp_path / "none.jsonl").read_text() == ""
    past = cli.json("export", "--since", "2000-01-01", "-o", str(tmp_path / "all.jsonl"), "-w", str(ws))
    assert past["data"]["count"] == 3
    bad = cli.json(
        "export", "--since", "yesterday-ish", "-o", str(tmp_path / "x.jsonl"), "-w", str(ws), code=2
    )
    assert "invalid --since" in bad["errors"][0]["message"]
    assert not (tmp_path / "x.jsonl").exists()


def test_markdown_zip_holds_the_files_unchanged(cli, ws: Path, tmp_path: Path) -> None:
    ids = build_workspace(cli, ws)
    out = tmp_path / "export.zip"
    env = cli.json(
        "export", "--format", "markdown-zip", "--include-superseded", "-o", str(out), "-w", str(ws)
    )
    assert env["data"]["count"] == 5
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
        deploy = next(n for n in names if n.startswith("teams/platform/memories/fact__deploy-window"))
        assert zf.read(deploy) == (ws / deploy).read_bytes()
        assert "export.jsonl" in names
        assert {json.loads(x)["id"] for x in zf.read("export.jsonl").splitlines()} == set(ids.values())
    env = cli.json("export", "--format", "markdown-zip", "-w", str(ws), code=2)
    assert "--output" in env["errors"][0]["message"]


def fresh_workspace(cli, tmp_path: Path, name: str, *teams: str) -> Path:
    root = tmp_path / name
    cli.json("init", "--path", str(root), *[x for t in teams for x in ("--team", t)])
    return root


def test_markdown_zip_export_imports_with_the_same_ids(cli, ws: Path, tmp_path: Path) -> None:
    """The zip itself, or the folder it was unpacked into, reproduces the memories (ids, files,
    chains) instead of importing them as new markdown notes with new ids."""
    ids = build_workspace(cli, ws)
    out = tmp_path / "export.zip"
    cli.json("export", "--format", "markdown-zip", "--include-superseded", "-o", str(out), "-w", str(ws))
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(out) as zf:
        zf.extractall(unpacked)
    before = all_memories(ws)
    for source in (out, unpacked):
        target = fresh_workspace(cli, tmp_path, f"from-{source.name}", "platform")
        data = cli.json("import", str(source), "-w", str(target))["data"]
        assert data["format"] == "box-memory" and data["imported"] == 5, data
        after = all_memories(target)
        assert set(after) == set(ids.values())
        for mem_id, orig in before.items():
            assert (after[mem_id]["file"], after[mem_id]["meta"]) == (orig["file"], orig["meta"])
        again = cli.json("import", str(source), "-w", str(target))["data"]
        assert again["imported"] == 0 and again["already_imported"] == 5


def test_from_jsonl_is_the_box_memory_format(cli, ws: Path, tmp_path: Path) -> None:
    build_workspace(cli, ws)
    out = tmp_path / "export.jsonl"
    cli.json("export", "-o", str(out), "-w", str(ws))
    target = fresh_workspace(cli, tmp_path, "target", "platform")
    data = cli.json("import", str(out), "--from", "jsonl", "-w", str(target))["data"]
    assert data["format"] == "box-memory" and data["imported"] == 3


def test_a_team_the_target_lacks_is_refused_not_defaulted(cli, ws: Path, tmp_path: Path, snap) -> None:
    ids = build_workspace(cli, ws)
    out = tmp_path / "export.jsonl"
    cli.json("export", "-o", str(out), "-w", str(ws))
    target = fresh_workspace(cli, tmp_path, "target")  # no team "platform"
    before = snap(target)
    env = cli.json("import", str(out), "-w", str(target), code=2)
    message = env["errors"][0]["message"]
    assert "platform" in message and "team create platform" in message and "--team" in message
    assert snap(target) == before
    # Asked for explicitly: everything goes into one team of the target.
    cli.json("team", "create", "ops", "-w", str(target))
    data = cli.json("import", str(out), "--team", "ops", "-w", str(target))["data"]
    assert data["imported"] == 3
    after = all_memories(target)
    assert after[ids["deploy"]]["folder"] == "teams/ops/memories"


def test_companions_come_back_as_companions(cli, ws: Path, tmp_path: Path) -> None:
    """A companion is exported; importing it writes it where the target keeps the companion of
    that binary, with its id and pinned hashes. Its binary is not in an export: the import says
    so, and the companion reports orphaned until the binary is copied over, then current."""
    (ws / "files").mkdir(exist_ok=True)
    (ws / "files" / "report.pdf").write_bytes(b"%PDF-1.4 quarterly numbers")
    comp = cli.json("companion", "files/report.pdf", "-w", str(ws))["data"]
    out = tmp_path / "export.jsonl"
    cli.json("export", "-o", str(out), "-w", str(ws))
    target = fresh_workspace(cli, tmp_path, "target")
    env = cli.json("import", str(out), "-w", str(target))
    data = env["data"]
    assert data["failed"] == 0 and data["imported"] == 1, data
    assert any("binary is not in the export" in w and "files/report.pdf" in w for w in env["warnings"])
    assert data["memories"][0]["file"] == comp["path"] == "files/report.pdf.md"  # sibling layout
    assert (target / comp["path"]).read_bytes() == (ws / comp["path"]).read_bytes()  # id, hashes, body
    assert cli.json("companion", "files/report.pdf", "--check", "-w", str(target), code=6)["data"][
        "state"
    ] == ("orphaned")
    (target / "files").mkdir(exist_ok=True)
    (target / "files" / "report.pdf").write_bytes((ws / "files" / "report.pdf").read_bytes())
    assert (
        cli.json("companion", "files/report.pdf", "--check", "-w", str(target))["data"]["state"] == "current"
    )
    assert cli.json("index-rebuild", "--check", "-w", str(target))["exit_code"] == 0
    again = cli.json("import", str(out), "-w", str(target))["data"]
    assert again["imported"] == 0 and again["already_imported"] == 1


def test_an_export_past_the_single_note_limit_imports(cli, ws: Path, tmp_path: Path) -> None:
    """A source file (a note, a CLAUDE.md, a mem0 export) may be 8 MiB; an export holds a whole
    workspace and comes back whole. 9 memories of ~1 MiB each make a ~9.5 MiB export."""
    big = "word " * 200_000  # 1,000,000 bytes: just under the 1 MiB content cap
    for i in range(9):
        write(cli, ws, f"{i} {big}", f"Large memory {i}")
    out = tmp_path / "export.jsonl"
    cli.json("export", "-o", str(out), "-w", str(ws))
    assert out.stat().st_size > 8 * 1024 * 1024
    target = fresh_workspace(cli, tmp_path, "target")
    data = cli.json("import", str(out), "-w", str(target))["data"]
    assert data["imported"] == 9 and data["failed"] == 0
