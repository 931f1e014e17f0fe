"""companion: write, check, stale listing, regeneration and refusals through the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from box_memory.format import frontmatter
from box_memory.workspace.resolve import open_workspace
from box_memory.write.binaries import digest_chunks, sniff_mime, type_tag
from box_memory.write.companion_state import stale_companions

PLUGIN_FIXTURE = Path(__file__).parent.parent / "fixtures" / "plugin_workspace"
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 50


def has_command(name: str) -> bool:
    from box_memory.cli.app import app

    return any(c.name == name for c in app.registered_commands)


def read_md(path: Path) -> tuple[dict, str]:
    return frontmatter.parse(path.read_text("utf-8"), str(path))


def index(root: Path, folder: str) -> dict:
    return json.loads((root / folder / "_index.json").read_bytes())


def active_ids(idx: dict) -> list[str]:
    return list(idx["by_status"].get("active", []))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def put(root: Path, rel: str, data: bytes = PDF) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def flip_one_byte(p: Path) -> None:
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))


@pytest.fixture
def folder_ws(tmp_path: Path, cli) -> Path:
    root = tmp_path / "fws"
    cli.json("init", "--path", str(root), "--layout", "folder", "--team", "eng")
    return root


# --- the whole life cycle, both layouts ------------------------------------------------------


@pytest.mark.parametrize("layout", ["sibling", "folder"])
def test_create_check_stale_regenerate_orphan(tmp_path: Path, cli, layout: str) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--layout", layout)
    w = ("-w", str(root))
    binary = put(root, "files/Q2 report.pdf")
    folder = "files" if layout == "sibling" else "companions"
    comp = root / folder / "Q2 report.pdf.md"

    made = cli.json("companion", "files/Q2 report.pdf", "--tag", "Finance", *w)["data"]
    assert made["action"] == "created" and made["path"] == f"{folder}/Q2 report.pdf.md"
    meta, body = read_md(comp)
    assert meta["id"] == made["id"] and meta["kind"] == "companion" and meta["status"] == "active"
    assert meta["slug"] == "q2-report-pdf-companion"
    assert meta["title"] == "Companion — Q2 report.pdf"
    assert meta["tags"] == ["companion", "pdf", "finance"]
    cf = meta["companion_for"]
    assert list(cf) == [
        "file_id",
        "filename",
        "local_path",
        "sha256",
        "hash_algo",
        "sha1",
        "size_bytes",
        "mime_type",
        "reviewed_at",
        "reviewed_by",
    ]
    assert cf["file_id"] is None and cf["filename"] == "Q2 report.pdf"
    assert cf["local_path"] == "files/Q2 report.pdf"
    assert cf["sha256"] == sha256(PDF) and cf["hash_algo"] == "sha256"
    assert cf["sha1"] == hashlib.sha1(PDF).hexdigest()
    assert cf["size_bytes"] == len(PDF) and cf["mime_type"] == "application/pdf"
    assert "## Hash chain" in body and f"sha256:{sha256(PDF)}" in body
    assert "## What the agent did NOT verify" in body and "- [ ]" in body

    idx = index(root, folder)
    entry = next(e for e in idx["entries"] if e["id"] == made["id"])
    assert entry["companion_for"] == "files/Q2 report.pdf" and entry["sha256"] == sha256(PDF)
    assert idx["by_companion_for"] == {"files/Q2 report.pdf": made["id"]}
    roll = json.loads((root / "_index.json").read_bytes())
    assert roll["by_companion_for"] == {"files/Q2 report.pdf": made["id"]}

    chk = cli.json("companion", "files/Q2 report.pdf", "--check", *w)["data"]
    assert chk["state"] == "current" and chk["id"] == made["id"] and chk["pinned"] == sha256(PDF)

    # Up to date: shown, not rewritten.
    before = comp.read_bytes()
    again = cli.json("companion", "files/Q2 report.pdf", *w)["data"]
    assert again["action"] == "unchanged" and again["id"] == made["id"]
    assert comp.read_bytes() == before

    flip_one_byte(binary)
    new_hash = sha256(binary.read_bytes())
    stale = cli.json("companion", "files/Q2 report.pdf", "--check", *w, code=6)
    assert stale["data"]["state"] == "stale"
    assert stale["data"]["pinned"] == sha256(PDF) and stale["data"]["current"] == new_hash
    listed = cli.json("companion", "--stale", *w, code=6)["data"]
    assert [(r["id"], r["state"]) for r in listed["stale"]] == [(made["id"], "stale")]

    regen = cli.json("companion", "files/Q2 report.pdf", *w)["data"]
    assert regen["action"] == "superseded" and regen["state_before"] == "stale"
    assert regen["supersedes"] == made["id"] and regen["path"] == f"{folder}/Q2 report.pdf.md"
    archived = root / "_archive" / "companions" / f"Q2 report.pdf.{made['id']}.md"
    assert regen["archived"] == f"_archive/companions/Q2 report.pdf.{made['id']}.md"
    old_meta, _ = read_md(archived)
    assert old_meta["id"] == made["id"] and old_meta["status"] == "superseded"
    assert old_meta["superseded_by"] == regen["id"]
    new_meta, new_body = read_md(comp)
    assert new_meta["id"] == regen["id"] and new_meta["supersedes"] == [made["id"]]
    assert new_meta["companion_for"]["sha256"] == new_hash
    assert new_meta["slug"] == "q2-report-pdf-companion"
    assert f"Supersedes {made['id']}" in new_body  # the hash chain names the previous pin
    idx = index(root, folder)
    assert active_ids(idx) == [regen["id"]]
    assert [e["id"] for e in idx["entries"]] == [regen["id"]]
    assert idx["by_companion_for"] == {"files/Q2 report.pdf": regen["id"]}
    roll = json.loads((root / "_index.json").read_bytes())
    assert made["id"] not in roll["by_id"] and roll["by_companion_for"]["files/Q2 report.pdf"] == regen["id"]
    assert cli.json("companion", "files/Q2 report.pdf", "--check", *w)["data"]["state"] == "current"
    assert cli.json("companion", "--stale", *w)["data"]["stale"] == []
    if has_command("recall"):
        hits = cli.json("recall", "Q2 report.pdf", *w)["data"]["hits"]
        assert [(h["id"], h["status"]) for h in hits if h["kind"] == "companion"] == [(regen["id"], "active")]

    binary.unlink()
    orphan = cli.json("companion", "files/Q2 report.pdf", "--check", *w, code=6)["data"]
    assert orphan["state"] == "orphaned" and orphan["id"] == regen["id"] and orphan["current"] is None
    listed = cli.json("companion", "--stale", *w, code=6)["data"]
    assert [(r["id"], r["state"]) for r in listed["stale"]] == [(regen["id"], "orphaned")]
    assert stale_companions(open_workspace(str(root)))[0]["state"] == "orphaned"


def test_missing_and_force(ws: Path, cli) -> None:
    w = ("-w", str(ws))
    put(ws, "files/plan.xlsx", b"PK\x03\x04 not really a spreadsheet")
    miss = cli.json("companion", "files/plan.xlsx", "--check", *w, code=6)["data"]
    assert miss["state"] == "missing" and miss["expected_path"] == "files/plan.xlsx.md"
    first = cli.json("companion", "files/plan.xlsx", *w)["data"]
    assert first["type"] == "office"
    assert read_md(ws / "files/plan.xlsx.md")[0]["tags"] == ["companion", "office"]
    forced = cli.json("companion", "files/plan.xlsx", "--force", *w)["data"]
    assert forced["action"] == "superseded" and forced["state_before"] == "current"
    assert forced["supersedes"] == first["id"]
    assert (ws / "_archive/companions" / f"plan.xlsx.{first['id']}.md").is_file()
    assert active_ids(index(ws, "files")) == [forced["id"]]


def test_body_from_option_and_stdin(ws: Path, cli) -> None:
    w = ("-w", str(ws))
    put(ws, "files/a.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 100)
    cli.json("companion", "files/a.png", "--body", "A logo.\n\n## Key facts\n\n- blue", *w)
    meta, body = read_md(ws / "files/a.png.md")
    assert meta["tags"] == ["companion", "image"]
    assert body.lstrip().startswith("# Companion — a.png") and "A logo." in body
    assert "## Hash chain" in body  # appended: the pin is always visible in the body
    put(ws, "files/b.wav", b"RIFF\x00\x00\x00\x00WAVEfmt ")
    cli.json("companion", "files/b.wav", "--body", "-", *w, input="# Custom\n\nA chime.\n")
    meta, body = read_md(ws / "files/b.wav.md")
    assert meta["tags"] == ["companion", "audio"] and body.lstrip().startswith("# Custom")


def test_team_binary_goes_to_team_folders(tmp_path: Path, cli, folder_ws: Path) -> None:
    w = ("-w", str(folder_ws))
    put(folder_ws, "teams/eng/files/part.step", b"ISO-10303-21;\nHEADER;")
    made = cli.json("companion", "teams/eng/files/part.step", *w)["data"]
    assert made["path"] == "teams/eng/companions/part.step.md" and made["team"] == "eng"
    assert made["type"] == "cad"
    meta, _ = read_md(folder_ws / made["path"])
    assert meta["team"] == "eng"
    assert index(folder_ws, "teams/eng/companions")["by_companion_for"] == {
        "teams/eng/files/part.step": made["id"]
    }
    # Sibling layout keeps team companions next to the binary.
    sib = tmp_path / "sib"
    cli.json("init", "--path", str(sib), "--team", "eng")
    put(sib, "teams/eng/files/clip.mp4", b"\x00\x00\x00\x18ftypmp42")
    made = cli.json("companion", "teams/eng/files/clip.mp4", "--team", "eng", "-w", str(sib))["data"]
    assert made["path"] == "teams/eng/files/clip.mp4.md" and made["type"] == "video"
    bad = cli.json("companion", "teams/eng/files/clip.mp4", "--team", "default", "-w", str(sib), code=2)
    assert "belongs to team 'eng'" in bad["errors"][0]["message"]


def test_binary_elsewhere_in_workspace_gets_companions_folder(ws: Path, cli) -> None:
    """Documented choice: no indexed folder next to it, so the scope's companions/ holds it."""
    w = ("-w", str(ws))
    put(ws, "docs/diagrams/flow.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>")
    made = cli.json("companion", "docs/diagrams/flow.svg", *w)["data"]
    assert made["path"] == "companions/flow.svg.md" and made["type"] == "image"
    assert index(ws, "companions")["by_companion_for"] == {"docs/diagrams/flow.svg": made["id"]}
    roll = json.loads((ws / "_index.json").read_bytes())
    assert "companions/" in {c["folder_path"] for c in roll["child_indexes"]}
    flip_one_byte(ws / "docs/diagrams/flow.svg")
    listed = cli.json("companion", "--stale", *w, code=6)["data"]["stale"]
    assert [r["path"] for r in listed] == ["companions/flow.svg.md"]
    # Another binary with the same name elsewhere cannot take that companion's name.
    put(ws, "other/flow.svg", b"<svg/>")
    clash = cli.json("companion", "other/flow.svg", *w, code=1)
    assert "companions/flow.svg.md already exists" in clash["errors"][0]["message"]


def test_relative_to_cwd_and_absolute_paths(ws: Path, cli, monkeypatch) -> None:
    put(ws, "files/x.zip", b"PK\x03\x04")
    monkeypatch.chdir(ws / "files")
    made = cli.json("companion", "x.zip", "-w", str(ws))["data"]
    assert made["binary"] == "files/x.zip" and made["type"] == "archive"
    monkeypatch.chdir(ws.parent)
    chk = cli.json("companion", str(ws / "files" / "x.zip"), "--check", "-w", str(ws))["data"]
    assert chk["state"] == "current" and chk["id"] == made["id"]


# --- plugin-shaped companions ------------------------------------------------------------------


def test_plugin_fixture_companion_is_recognised(tmp_path: Path, cli) -> None:
    """The plugin's own shape: `companion__<slug>.md` in memories/, companion_for without local_path."""
    root = tmp_path / "plugin"
    shutil.copytree(PLUGIN_FIXTURE, root)
    w = ("-w", str(root))
    comp = root / "memories" / "companion__capacity-plan-xlsx-companion.md"
    data = b"PK\x03\x04 quarterly capacity"
    put(root, "files/capacity-plan.xlsx", data)
    # The fixture's hash is a placeholder: the binary we put there does not match it.
    stale = cli.json("companion", "files/capacity-plan.xlsx", "--check", *w, code=6)["data"]
    assert stale["state"] == "stale" and stale["id"] == "mem_01JAAAA1B2C3D4E5F6G7H8J9L5"
    assert stale["path"] == "memories/companion__capacity-plan-xlsx-companion.md"
    listed = cli.json("companion", "--stale", *w, code=6)["data"]["stale"]
    assert [(r["path"], r["state"], r["binary"]) for r in listed] == [
        ("memories/companion__capacity-plan-xlsx-companion.md", "stale", "files/capacity-plan.xlsx")
    ]
    # Pin the real hash (as the plugin would have): now current.
    text = comp.read_text("utf-8")
    comp.write_text(text.replace(read_md(comp)[0]["companion_for"]["sha256"], sha256(data)), "utf-8")
    assert cli.json("companion", "files/capacity-plan.xlsx", "--check", *w)["data"]["state"] == "current"
    assert cli.json("companion", "--stale", *w)["data"]["stale"] == []
    # Regenerating moves it to the canonical sibling name and archives the plugin's file.
    flip_one_byte(root / "files/capacity-plan.xlsx")
    regen = cli.json("companion", "files/capacity-plan.xlsx", *w)["data"]
    assert regen["supersedes"] == "mem_01JAAAA1B2C3D4E5F6G7H8J9L5"
    assert regen["path"] == "files/capacity-plan.xlsx.md"
    assert not comp.exists()
    archived = root / "_archive/companions/capacity-plan.xlsx.mem_01JAAAA1B2C3D4E5F6G7H8J9L5.md"
    meta, _ = read_md(archived)
    assert meta["status"] == "superseded" and meta["superseded_by"] == regen["id"]
    mem_idx = index(root, "memories")
    assert "mem_01JAAAA1B2C3D4E5F6G7H8J9L5" not in mem_idx["by_id"]
    assert mem_idx["by_companion_for"] == {}
    assert active_ids(index(root, "files")) == [regen["id"]]


def test_hand_written_plugin_shape_in_team_memories(tmp_path: Path, cli) -> None:
    """A companion named like a memory, indexed by a rebuild-equivalent scan, is found anywhere."""
    from box_memory.maintenance.regenerate import rebuild

    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    data = b"%PDF-1.4 runbook"
    put(root, "teams/ops/files/runbook.pdf", data)
    (root / "teams/ops/memories/companion__runbook-pdf-companion.md").write_text(
        "---\n"
        "id: mem_01HXYZA1B2C3D4E5F6G7H8J9M1\n"
        "slug: runbook-pdf-companion\n"
        "title: Companion — runbook.pdf\n"
        "kind: companion\n"
        "status: active\n"
        "team: ops\n"
        "created_at: 2026-05-22T19:14:00Z\n"
        "updated_at: 2026-05-22T19:14:00Z\n"
        "companion_for:\n"
        '  file_id: "1844291673399"\n'
        "  filename: runbook.pdf\n"
        f"  sha256: {sha256(data)}\n"
        "  hash_algo: sha256\n"
        f"  size_bytes: {len(data)}\n"
        "  mime_type: application/pdf\n"
        "tags: [companion, pdf]\n"
        "---\n\n# Companion — runbook.pdf\n",
        "utf-8",
    )
    rebuild(open_workspace(str(root)))
    w = ("-w", str(root))
    chk = cli.json("companion", "teams/ops/files/runbook.pdf", "--check", *w)["data"]
    assert chk["state"] == "current" and chk["id"] == "mem_01HXYZA1B2C3D4E5F6G7H8J9M1"
    # Writing again sees it as up to date (no duplicate companion next to the binary).
    assert cli.json("companion", "teams/ops/files/runbook.pdf", *w)["data"]["action"] == "unchanged"
    assert not (root / "teams/ops/files/runbook.pdf.md").exists()
    (root / "teams/ops/files/runbook.pdf").unlink()
    listed = cli.json("companion", "--stale", *w, code=6)["data"]["stale"]
    assert [(r["id"], r["state"]) for r in listed] == [("mem_01HXYZA1B2C3D4E5F6G7H8J9M1", "orphaned")]


def test_held_companion_is_never_regenerated(ws: Path, cli, snap) -> None:
    w = ("-w", str(ws))
    p = put(ws, "files/contract.pdf")
    made = cli.json("companion", "files/contract.pdf", *w)["data"]
    comp = ws / made["path"]
    comp.write_text(comp.read_text("utf-8").replace("status: active", "status: held"), "utf-8")
    flip_one_byte(p)
    assert cli.json("companion", "files/contract.pdf", "--check", *w, code=6)["data"]["state"] == "stale"
    before = snap(ws)
    err = cli.json("companion", "files/contract.pdf", *w, code=1)
    assert err["errors"][0]["code"] == "held"
    assert snap(ws) == before


# --- refusals: one clear line, nothing written -------------------------------------------------


def test_refusals_write_nothing(ws: Path, tmp_path: Path, cli, snap) -> None:
    w = ("-w", str(ws))
    outside = tmp_path / "outside.pdf"
    outside.write_bytes(PDF)
    mem = cli.json("write", "a memory", "--title", "Memo", *w)["data"]
    put(ws, "files/notes.MD", b"# not a binary")
    os.symlink(outside, ws / "files" / "link.pdf")
    os.symlink(ws / "files", ws / "files" / "loop")  # inside: fine to resolve, but a folder
    before = snap(ws)
    cases = [
        (mem["file"], 2, "markdown memory"),
        ("files/notes.MD", 2, "markdown memory"),
        (str(outside), 2, "outside the workspace"),
        ("../outside.pdf", 2, "outside the workspace"),
        ("files/link.pdf", 2, "outside the workspace"),
        ("files/nope.pdf", 1, "does not exist"),
        ("files/loop", 2, "is a folder"),
        ("files/_index.json", 2, "bookkeeping"),
        ("_box-memory.json", 2, "bookkeeping"),
        ("files", 2, "is a folder"),
    ]
    for arg, code, words in cases:
        env = cli.json("companion", arg, *w, code=code)
        assert env["status"] == "error", arg
        msg = env["errors"][0]["message"]
        assert words in msg and "\n" not in msg, (arg, msg)
        res = cli("companion", arg, *w)
        assert res.exit_code == code and len(res.stderr.strip().splitlines()) == 1, (arg, res.stderr)
    assert snap(ws) == before
    assert cli.json("companion", "files/nope.pdf", "--check", *w, code=1)["errors"][0]["code"] == "not_found"
    assert cli.json("companion", "--stale", "files/x", *w, code=2)["status"] == "error"
    assert cli.json("companion", "files/x", "--check", "--force", *w, code=2)["status"] == "error"
    assert cli.json("companion", *w, code=2)["status"] == "error"
    # An archived binary gets no companion either.
    put(ws, "_archive/old.pdf")
    assert "_archive" in cli.json("companion", "_archive/old.pdf", *w, code=2)["errors"][0]["message"]


def test_concurrent_writers_make_one_companion(ws: Path) -> None:
    """Cold processes racing on one binary: the lock lets one write; the others find it current."""
    put(ws, "files/race.pdf")
    env = {k: v for k, v in os.environ.items() if k != "BOX_MEMORY_WORKSPACE"}
    cmd = [sys.executable, "-m", "box_memory", "companion", "files/race.pdf", "-w", str(ws), "--json"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(3)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        results.append(json.loads(out)["data"])
    actions = sorted(r["action"] for r in results)
    assert actions == ["created", "unchanged", "unchanged"]
    assert len({r["id"] for r in results}) == 1
    idx = index(ws, "files")
    assert [e["id"] for e in idx["entries"]] == [results[0]["id"]]
    assert not (ws / "_archive" / "companions").exists()


def test_stale_listing_by_team_and_library_shape(tmp_path: Path, cli) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--team", "ops")
    w = ("-w", str(root))
    a = put(root, "files/a.pdf")
    b = put(root, "teams/ops/files/b.pdf")
    ida = cli.json("companion", "files/a.pdf", *w)["data"]["id"]
    idb = cli.json("companion", "teams/ops/files/b.pdf", *w)["data"]["id"]
    flip_one_byte(a)
    flip_one_byte(b)
    everything = cli.json("companion", "--stale", *w, code=6)["data"]
    assert everything["checked"] == 2 and {r["id"] for r in everything["stale"]} == {ida, idb}
    ops = cli.json("companion", "--stale", "--team", "ops", *w, code=6)["data"]["stale"]
    assert [r["id"] for r in ops] == [idb]
    rows = stale_companions(open_workspace(str(root)))
    assert {r["id"] for r in rows} == {ida, idb}
    for r in rows:
        assert {"id", "path", "binary", "state", "pinned", "current", "hash_algo"} <= set(r)
        assert r["state"] == "stale" and r["pinned"] != r["current"]
        assert r["current"] == sha256((root / r["binary"]).read_bytes())


def test_help(cli) -> None:
    res = cli("companion", "--help")
    assert res.exit_code == 0 and "--check" in res.stdout and "--stale" in res.stdout


# --- hashing and types (library) ---------------------------------------------------------------


def test_digest_chunks_matches_hashlib_across_chunk_boundaries() -> None:
    data = os.urandom(3 * 65536 + 17)
    buf = bytearray(70000)  # one reused buffer, as the local reader does
    view = memoryview(buf)

    def chunks():
        for i in range(0, len(data), len(buf)):
            n = len(data[i : i + len(buf)])
            buf[:n] = data[i : i + len(buf)]
            yield view[:n]

    d = digest_chunks(chunks())
    assert d.sha256 == hashlib.sha256(data).hexdigest()
    assert d.sha1 == hashlib.sha1(data).hexdigest()
    assert d.size == len(data) and d.head == data[: len(d.head)]
    empty = digest_chunks([])
    assert empty.sha256 == hashlib.sha256(b"").hexdigest() and empty.size == 0


@pytest.mark.parametrize(
    ("name", "head", "tag"),
    [
        ("a.pdf", b"", "pdf"),
        ("scan", b"%PDF-1.4", "pdf"),
        ("photo.JPG", b"", "image"),
        ("noext", b"\x89PNG\r\n\x1a\n", "image"),
        ("model.dwg", b"", "cad"),
        ("bracket.SLDPRT", b"", "cad"),
        ("deck.pptx", b"PK\x03\x04", "office"),
        ("old.doc", b"", "office"),
        ("song.flac", b"", "audio"),
        ("clip.mov", b"", "video"),
        ("bundle.tar.gz", b"", "archive"),
        ("blob", b"PK\x03\x04", "archive"),
        ("data.bin", b"\x00\x01", "other"),
    ],
)
def test_type_tags(name: str, head: bytes, tag: str) -> None:
    assert type_tag(name, sniff_mime(name, head)) == tag
