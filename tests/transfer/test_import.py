"""`box-memory import` on fixtures in each tool's own format (see tests/fixtures/import/*/README.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import snapshot
from tests.helpers.imports import NETWORK, imported_by

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
STAMP = 1_700_000_000  # 2023-11-14T22:13:20Z, set as the copied source files' mtime
STAMP_ISO = "2023-11-14T22:13:20.000Z"


def copy_source(tmp_path: Path, rel: str) -> Path:
    """A private copy of a fixture (so mtimes can be pinned) whose tree we can snapshot."""
    src = FIXTURES / rel
    dst = tmp_path / "src" / rel
    if src.is_dir():
        shutil.copytree(src, dst)
        for p in dst.rglob("*"):
            os.utime(p, (STAMP, STAMP))
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    return dst


def memories(ws: Path, folder: str = "memories") -> dict[str, dict[str, Any]]:
    """title -> {frontmatter..., body} for every memory file in a folder, read back from disk."""
    from box_memory.format import frontmatter

    out: dict[str, dict[str, Any]] = {}
    for p in sorted((ws / folder).glob("*__*.md")):
        meta, body = frontmatter.parse(p.read_text(encoding="utf-8"), str(p))
        out[meta["title"]] = {**meta, "body": body, "file": p.name}
    return out


def do_import(cli, ws: Path, *args: str, code: int = 0) -> dict[str, Any]:
    return cli.json("import", *args, "-w", str(ws), code=code)


def check_idempotent_and_untouched(cli, ws: Path, src: Path, before: dict[str, bytes], n: int) -> None:
    ws_before = snapshot(ws / "memories")
    again = do_import(cli, ws, str(src))["data"]
    assert again["imported"] == 0 and again["already_imported"] == n
    assert snapshot(ws / "memories") == ws_before  # nothing rewritten, not even an index
    assert snapshot(src if src.is_dir() else src.parent) == before  # the source, byte for byte


def test_basic_memory_project(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "basic-memory/project")
    before = snapshot(src)
    env = do_import(cli, ws, str(src))
    data = env["data"]
    assert data["format"] == "basic-memory" and data["detected"].startswith("basic-memory")
    assert data["imported"] == 4 and data["failed"] == 0
    mems = memories(ws)
    search = mems["Search Design"]
    assert search["kind"] == "note" and search["tags"] == ["search", "sqlite"]
    # Observations and relations stay in the body as written; wikilinks also become `related`.
    assert "- [design] Full-text search runs on SQLite FTS5 #search" in search["body"]
    assert "- relates_to [[Sync Protocol|the sync protocol]]" in search["body"]
    assert search["related"] == ["[[Storage Layer]]", "[[Markdown Parser]]", "[[Sync Protocol]]"]
    (source,) = search["sources"]
    assert source["type"] == "basic-memory" and source["ref"] == str(src / "search-design.md")
    assert source["permalink"] == "search-design"
    assert source["digest"].startswith("sha256:") and len(source["digest"]) == 71
    assert search["created_at"] == STAMP_ISO
    decision = mems["Use Postgres for billing"]
    assert decision["kind"] == "decision" and decision["tags"] == ["billing", "database"]
    ada = mems["Ada Lovelace"]  # a custom entity type is kept as a tag; comma-separated tags split
    assert ada["kind"] == "note" and ada["tags"] == ["history", "computing", "person"]
    assert "storage-layer" in mems  # no title in the frontmatter: the file name stem
    check_idempotent_and_untouched(cli, ws, src, before, 4)


def test_claude_code_project_files(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "claude-code/project")
    before = snapshot(src)
    data = do_import(cli, ws, str(src))["data"]
    assert data["format"] == "claude-code" and "Claude Code" in data["detected"]
    mems = memories(ws)
    # One memory per `## ` section; the text before the first section is kept too. docs/memory/ is
    # ordinary documentation, not auto memory: not imported.
    assert set(mems) == {
        "project CLAUDE.md - Acme API",
        "project CLAUDE.md - Commands",
        "project CLAUDE.md - Code style",
        "project CLAUDE.md - Workflow",
        "project CLAUDE.local.md - Local notes",
        "project rule testing - Testing rules",
        "api CLAUDE.md - API conventions",
    }
    assert mems["project CLAUDE.md - Code style"]["kind"] == "decision"  # "We decided to use ..."
    assert mems["project CLAUDE.md - Workflow"]["kind"] == "task"  # "TODO: ..."
    assert mems["project CLAUDE.md - Commands"]["kind"] == "note"
    src_entry = mems["project CLAUDE.md - Commands"]["sources"][0]
    assert src_entry["ref"] == f"{src / 'CLAUDE.md'}#Commands" and src_entry["path"] == str(src / "CLAUDE.md")
    assert "`make lint` runs ruff and mypy" in mems["project CLAUDE.md - Commands"]["body"]
    assert mems["project CLAUDE.md - Commands"]["created_at"] == STAMP_ISO
    check_idempotent_and_untouched(cli, ws, src, before, 7)


def test_claude_code_user_dir_with_auto_memory(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "claude-code/home/.claude")
    before = snapshot(src)
    data = do_import(cli, ws, str(src))["data"]
    assert data["format"] == "claude-code" and data["imported"] == 8
    mems = memories(ws)
    assert mems["user CLAUDE.md - Personal preferences"]["tags"] == ["claude-code", "claude-md"]
    assert "- The body says why, not what" in mems["user rule commit-messages - Commit messages"]["body"]
    # An installed plugin's own CLAUDE.md (under plugins/) is not the user's memory.
    assert not any("Example plugin" in t for t in mems)
    # Auto-memory files: one memory each, kind from the frontmatter `type`.
    assert mems["Release freeze"]["kind"] == "fact"
    assert mems["Dashboards"]["kind"] == "reference"
    feedback = mems["Testing feedback"]
    assert feedback["kind"] == "note" and feedback["tags"] == ["claude-code", "auto-memory", "feedback"]
    assert feedback["body"].lstrip().startswith("# Testing feedback\n\n> Integration tests must hit")
    assert "**Why:**" in feedback["body"]
    assert feedback["sources"][0]["project"] == "home-dev-acme-api"
    assert mems["home-dev-acme-api memory index"]["kind"] == "reference"
    # A topic file in a sub-folder of the auto-memory folder is a memory too.
    billing = mems["Billing cut-over"]
    assert billing["kind"] == "fact" and billing["sources"][0]["folder"] == "topics"
    assert billing["sources"][0]["project"] == "home-dev-acme-api"
    check_idempotent_and_untouched(cli, ws, src, before, 8)


def test_claude_code_auto_memory_folder_alone(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "claude-code/home/.claude/projects/-home-dev-acme-api/memory")
    data = do_import(cli, ws, str(src))["data"]
    assert data["format"] == "claude-code" and "auto-memory" in data["detected"]
    assert data["imported"] == 6 and "Billing cut-over" in memories(ws)


def test_a_folder_inside_the_claude_dir_reads_no_parent_claude_md(cli, ws: Path, tmp_path: Path) -> None:
    """`~/.claude/projects` holds no CLAUDE.md of its own; the user's `~/.claude/CLAUDE.md` above
    it is user memory, not a parent folder's project memory, and is not pulled in."""
    home = copy_source(tmp_path, "claude-code/home/.claude")
    data = do_import(cli, ws, str(home / "projects"), "--from", "claude-code")["data"]
    assert data["read_outside_source"] == [] and data["imported"] == 6
    assert not any("CLAUDE.md" in t for t in memories(ws))


def test_mem0_export(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "mem0/get_all.json")
    before = snapshot(src.parent)
    env = do_import(cli, ws, str(src))
    data = env["data"]
    assert data["format"] == "mem0" and data["imported"] == 3 and data["failed"] == 1
    assert data["errors"] == [
        {
            "ref": "mem0:c4d5e6f7-0a1b-4c2d-9e3f-405162738404",
            "reason": "item has no text ('memory' is missing or empty)",
        }
    ]
    assert any("has no text" in w for w in env["warnings"])
    mems = memories(ws)
    oat = mems["Prefers oat milk in coffee"]
    assert oat["created_at"] == "2024-07-20T17:15:30.123Z"  # -07:00 kept as the same instant in UTC
    assert oat["updated_at"] == "2024-08-02T16:01:12.000Z"
    # A user's own memory (user_id, no agent_id) is not written as if an agent named "alice" did.
    assert "agent" not in oat and oat["tags"] == ["preferences"]
    assert oat["sources"][0]["ref"] == "mem0:0b9d4a2e-6c1f-4f7e-9a51-3f2d8c7e1a01"
    assert oat["sources"][0]["hash"] == "5b1e0b6fdc0a4c6e1b5f8d2a9c3e7f10"
    assert oat["sources"][0]["user_id"] == "alice"
    assert oat["sources"][0]["metadata"] == {"category": "preferences"}
    peanuts = mems["Is allergic to peanuts and carries an epinephrine pen"]
    assert peanuts["agent"] == "travel-planner"  # agent_id wins over user_id
    assert peanuts["tags"] == ["health", "food"]
    assert peanuts["sources"][0]["run_id"] == "trip-2024-09"
    assert peanuts["updated_at"] == peanuts["created_at"] == "2024-07-22T01:40:00.000Z"
    work = next(m for t, m in mems.items() if t.startswith("Works at Acme"))
    assert work["tags"] == ["work"]
    # mem0's promoted session keys and the caller's metadata are all kept in the source entry.
    src0 = work["sources"][0]
    assert (src0["actor_id"], src0["role"], src0["user_id"]) == ("alice", "user", "alice")
    assert src0["metadata"] == {"source": "onboarding-chat", "tags": ["work"]}
    assert "agent" not in work
    check_idempotent_and_untouched(cli, ws, src, before, 3)


def test_invalid_json_imports_nothing_and_exits_1(cli, ws: Path, tmp_path: Path, snap) -> None:
    src = copy_source(tmp_path, "mem0/broken.json")
    ws_before = snap(ws)
    env = do_import(cli, ws, str(src), "--from", "mem0", code=1)
    assert env["status"] == "error" and env["data"]["errors"][0]["reason"].startswith("invalid JSON")
    assert snap(ws) == ws_before


def test_markdown_folder_reports_bad_files_and_imports_the_rest(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "markdown/notes")
    before = snapshot(src)
    env = do_import(cli, ws, str(src))
    data = env["data"]
    assert data["format"] == "markdown" and data["imported"] == 3 and data["failed"] == 2
    reasons = {Path(e["ref"]).name: e["reason"] for e in data["errors"]}
    assert reasons == {"empty.md": "content is empty", "latin1.txt": "not UTF-8 text"}
    assert len(env["warnings"]) == 2
    mems = memories(ws)
    assert set(mems) == {"Deploy window", "key rotation", "on call"}
    assert mems["key rotation"]["kind"] == "task"
    assert mems["Deploy window"]["related"] == ["[[Release checklist]]"]
    check_idempotent_and_untouched(cli, ws, src, before, 3)


def test_dry_run_writes_nothing_and_reports_counts(cli, ws: Path, tmp_path: Path, snap) -> None:
    src = copy_source(tmp_path, "claude-code/project")
    ws_before = snap(ws)
    data = do_import(cli, ws, str(src), "--dry-run")["data"]
    assert snap(ws) == ws_before
    assert data["dry_run"] is True and data["imported"] == 0 and data["would_import"] == 7
    assert data["by_kind"] == {"decision": 1, "note": 5, "task": 1}
    assert data["first_titles"][0] == "project CLAUDE.local.md - Local notes"
    human = cli("import", str(src), "--dry-run", "-w", str(ws))
    assert human.exit_code == 0 and "would import 7 of 7" in human.stdout
    assert snap(ws) == ws_before


def test_from_and_team(cli, ws: Path, tmp_path: Path) -> None:
    cli.json("team", "create", "research", "-w", str(ws))
    src = copy_source(tmp_path, "basic-memory/project")
    # Read as plain markdown instead: frontmatter keys become the memory's own (title, tags).
    data = do_import(cli, ws, str(src), "--from", "markdown", "--team", "research")["data"]
    assert data["format"] == "markdown" and data["detected"] is None and data["imported"] == 4
    mems = memories(ws, "teams/research/memories")
    assert mems["Search Design"]["team"] == "research"
    assert mems["Search Design"]["sources"][0]["type"] == "markdown"
    assert not list((ws / "memories").glob("*__*.md"))


def test_bad_source_and_format_are_usage_errors(cli, ws: Path, tmp_path: Path, snap) -> None:
    before = snap(ws)
    env = do_import(cli, ws, str(tmp_path / "missing"), code=1)
    assert env["errors"][0]["code"] == "not_found"
    env = do_import(cli, ws, str(FIXTURES / "markdown"), "--from", "evernote", code=2)
    assert "unknown import format" in env["errors"][0]["message"]
    env = do_import(cli, ws, str(FIXTURES / "markdown"), "--team", "nope", code=2)
    assert "unknown team" in env["errors"][0]["message"]
    assert snap(ws) == before


def test_imported_memories_are_indexed_like_writes(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "mem0/get_all.json")
    do_import(cli, ws, str(src))
    hits = cli.json("recall", "oat milk", "-w", str(ws))["data"]["hits"]
    assert hits and hits[0]["title"] == "Prefers oat milk in coffee"
    check = cli.json("index-rebuild", "--check", "-w", str(ws))
    assert check["exit_code"] == 0  # the indexes the import wrote match the files exactly


def test_local_import_stays_off_the_network_stack(ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "basic-memory/project")
    res, mods = imported_by(tmp_path, "import", str(src), "-w", str(ws), "--json")
    assert json.loads(res.stdout)["data"]["imported"] == 4
    assert not mods & NETWORK, mods


def test_progress_bar_only_on_a_terminal(cli, ws: Path, tmp_path: Path) -> None:
    """stderr on a pty shows the bar; piped stderr never does (both with the bar's delay at 0)."""
    pty = pytest.importorskip("pty")
    src = copy_source(tmp_path, "markdown/notes")
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm", "BOX_MEMORY_PROGRESS_AFTER_S": "0"}
    piped_ws = tmp_path / "piped"
    cli.json("init", "--path", str(piped_ws))
    piped = subprocess.run(
        [sys.executable, "-m", "box_memory", "import", str(src), "-w", str(piped_ws)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert piped.returncode == 0 and "Imported 3 of 5" in piped.stdout
    assert "Importing" not in piped.stderr and "\x1b[" not in piped.stderr
    master, slave = pty.openpty()
    try:
        res = subprocess.run(
            [sys.executable, "-m", "box_memory", "import", str(src), "-w", str(ws)],
            stdout=subprocess.PIPE,
            stderr=slave,
            timeout=120,
            check=False,
            env=env,
        )
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert res.returncode == 0
    assert "Importing" in err and "3/3" in err


def test_unreadable_file_is_reported_by_name(cli, ws: Path, tmp_path: Path) -> None:
    """A file that cannot be opened (here a dangling symlink inside the source: root ignores
    permission bits) is one reported item; the others import."""
    src = copy_source(tmp_path, "markdown/notes")
    (src / "gone.md").symlink_to(src / "nowhere.md")
    data = do_import(cli, ws, str(src), "--from", "markdown")["data"]
    reasons = {Path(e["ref"]).name: e["reason"] for e in data["errors"]}
    assert reasons["gone.md"].startswith("unreadable (")
    assert data["imported"] == 3


@pytest.mark.parametrize("how", [(), ("--from", "markdown")], ids=["detected", "from"])
def test_a_fifo_in_the_source_is_reported_not_waited_on(
    ws: Path, tmp_path: Path, how: tuple[str, ...]
) -> None:
    """A named pipe among the notes (shared folders hold anything) is one reported item: format
    detection and the read both skip it instead of blocking forever. Run in a subprocess under a
    timeout so a regression fails instead of hanging the suite."""
    src = copy_source(tmp_path, "markdown/notes")
    os.mkfifo(src / "pipe.md")
    res = subprocess.run(
        [sys.executable, "-m", "box_memory", "import", str(src), *how, "-w", str(ws), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    env = json.loads(res.stdout)
    assert res.returncode == 0, env
    reasons = {Path(e["ref"]).name: e["reason"] for e in env["data"]["errors"]}
    assert "FIFO" in reasons["pipe.md"]
    assert env["data"]["imported"] == 3


def test_basic_memory_keeps_folders_times_and_its_own_keys(cli, ws: Path, tmp_path: Path) -> None:
    src = copy_source(tmp_path, "basic-memory/custom")
    data = do_import(cli, ws, str(src), "--from", "basic-memory")["data"]
    assert data["imported"] == 2 and data["failed"] == 0
    mems = memories(ws)
    road = mems["Q3 Roadmap"]
    assert road["status"] == "draft"  # `status: draft` arrives as a draft, not active
    assert road["priority"] == "high" and road["due"] == "2026-09-30"
    assert road["owner"] == {"team": "platform", "reviewers": ["ada", "grace"]}
    assert road["sources"][0]["folder"] == "plans/2026"  # the note's folder in the project
    # One heading: the line above the title stays, the title is not written twice.
    assert road["body"].count("# Q3 Roadmap") == 1
    assert "> Draft: numbers still moving." in road["body"]
    assert "- [goal] Ship the sync protocol v2 #sync" in road["body"]
    search = mems["Search Design"]
    assert search["created_at"] == "2024-03-01T08:30:00.000Z"
    assert search["updated_at"] == "2024-06-12T15:05:00.000Z"
    assert "folder" not in search["sources"][0]  # at the project's top


def test_basic_memory_created_is_not_the_modification_time(cli, ws: Path, tmp_path: Path) -> None:
    """A note without `created`: basic-memory takes the file's creation (status change) time;
    the import does too instead of copying the modification time into both."""
    src = copy_source(tmp_path, "basic-memory/project")
    later = 4_000_000_000  # 2096: the file was modified after it was made (now)
    os.utime(src / "search-design.md", (later, later))
    do_import(cli, ws, str(src))
    search = memories(ws)["Search Design"]
    assert search["updated_at"] == "2096-10-02T07:06:40.000Z"
    assert search["created_at"] < search["updated_at"]


def test_claude_code_parent_files_imports_and_rule_scope(cli, ws: Path, tmp_path: Path) -> None:
    """What Claude Code loads for a project beyond its own tree: the parent folders' CLAUDE.md and
    the `@path` imports; each file read from outside the source is listed."""
    mono = copy_source(tmp_path, "claude-code/monorepo")
    src = mono / "apps" / "web"
    before = snapshot(mono)
    env = do_import(cli, ws, str(src))
    data = env["data"]
    assert data["read_outside_source"] == [str(mono / "CLAUDE.md"), str(mono / "docs" / "style.md")]
    mems = memories(ws)
    assert set(mems) == {
        "monorepo CLAUDE.md - Shared rules",
        "web CLAUDE.md - Web app",
        "web import style.md - Style guide",
        "web import setup.md - Setup",
        "web import deploy.md - Deploys",  # an import at the start of a line
        "web rule frontend - Frontend rules",
    }
    style = mems["web import style.md - Style guide"]["sources"][0]
    assert style["imported_by"] == str(src / "CLAUDE.md")
    assert style["path"] == str(mono / "docs" / "style.md")
    # A conditional rule keeps its scope; its frontmatter is not part of the text.
    rule = mems["web rule frontend - Frontend rules"]
    assert rule["sources"][0]["paths"] == ["src/**/*.tsx", "src/**/*.css"]
    assert "paths:" not in rule["body"] and "function components" in rule["body"]
    # `@package.json` is no markdown file: named in a warning, not read.
    assert any("package.json" in w and "not a markdown file" in w for w in env["warnings"])
    human = cli("import", str(src), "--dry-run", "-w", str(ws))
    assert f"read from outside the source: {mono / 'CLAUDE.md'}" in human.stdout
    ws_before = snapshot(ws / "memories")
    again = do_import(cli, ws, str(src))["data"]
    assert again["imported"] == 0 and again["already_imported"] == 6
    assert snapshot(ws / "memories") == ws_before and snapshot(mono) == before


def test_a_mem0_export_past_8_mib_imports(cli, ws: Path, tmp_path: Path) -> None:
    """mem0's get_all is a whole store, read with the export cap, not the 8 MiB of one note."""
    shape = json.loads((FIXTURES / "mem0" / "get_all.json").read_text())["results"][0]
    items = [
        {**shape, "id": f"0b9d4a2e-6c1f-4f7e-9a51-3f2d8c7e1a{i:02d}", "memory": f"{i} " + "word " * 200_000}
        for i in range(9)
    ]
    src = tmp_path / "get_all.json"
    src.write_text(json.dumps({"results": items}))
    assert src.stat().st_size > 8 * 1024 * 1024
    data = do_import(cli, ws, str(src))["data"]
    assert data["imported"] == 9 and data["failed"] == 0
