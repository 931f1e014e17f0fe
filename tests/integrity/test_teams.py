"""team create|ls|inspect|conflicts|remove: structure only, config under the lock, nothing deleted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integrity.util import entry_ids


def config(ws: Path) -> dict:
    return json.loads((ws / "_box-memory.json").read_bytes())


def test_create_makes_folders_empty_indexes_and_config_entry(cli, ws: Path) -> None:
    env = cli.json("team", "create", "platform-eng", "-w", str(ws))["data"]
    assert env["existed"] is False and "platform-eng" in env["teams"]
    for sub in ("memories", "files"):
        idx = json.loads((ws / "teams" / "platform-eng" / sub / "_index.json").read_bytes())
        assert (
            idx["entries"] == []
            and idx["entry_count"] == 0
            and idx["folder_path"] == f"teams/platform-eng/{sub}/"
        )
    assert not (ws / "teams" / "platform-eng" / "companions").exists()  # sibling layout
    assert config(ws)["teams"] == ["default", "platform-eng"]
    assert "ACL" in env["note"]
    roll = json.loads((ws / "_index.json").read_bytes())
    assert "teams/platform-eng/memories/" in {c["folder_path"] for c in roll["child_indexes"]}
    # Idempotent: a second create is reported, changes nothing, keeps the config as it was.
    cfg = config(ws)
    again = cli.json("team", "create", "platform-eng", "-w", str(ws))["data"]
    assert again["existed"] is True and again["created"] == []
    assert config(ws)["teams"] == cfg["teams"]
    # The team is usable at once.
    mid = cli.json("write", "x", "--title", "Eng note", "--team", "platform-eng", "-w", str(ws))["data"]["id"]
    assert entry_ids(ws, "teams/platform-eng/memories") == [mid]


def test_folder_layout_team_gets_companions_folder(cli, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    cli.json("init", "--path", str(root), "--layout", "folder")
    cli.json("team", "create", "ops", "-w", str(root))
    assert json.loads((root / "teams" / "ops" / "companions" / "_index.json").read_bytes())["entries"] == []


@pytest.mark.parametrize("bad", ["Eng", "eng team", "../x", "eng/ops", "eng-", "eng--ops", "eng_", "", "é"])
def test_invalid_team_names_are_refused_and_nothing_written(cli, ws: Path, snap, bad: str) -> None:
    before = snap(ws)
    env = cli.json("team", "create", bad, "-w", str(ws), code=2)
    assert env["errors"][0]["code"] == "invalid_input"
    assert snap(ws) == before


def test_ls_and_inspect_report_counts(cli, ws: Path) -> None:
    cli.json("team", "create", "ops", "-w", str(ws))
    for i in range(3):
        cli.json(
            "write", f"ops {i}", "--title", f"Ops {i}", "--tag", "oncall", "--team", "ops", "-w", str(ws)
        )
    cli.json("write", "root", "--title", "Root one", "-w", str(ws))
    (ws / "teams" / "ops" / "files" / "runbook.pdf").write_bytes(b"%PDF-1.4 x")
    (ws / "teams" / "orphan-dir" / "memories").mkdir(parents=True)
    (ws / "teams" / "orphan-dir" / "memories" / "_index.json").write_bytes(b'{"entries": []}')
    (ws / "teams" / "empty-leftover" / "memories").mkdir(parents=True)  # nothing to report
    ls = cli.json("team", "ls", "-w", str(ws))
    rows = {r["team"]: r for r in ls["data"]["teams"]}
    assert rows["ops"]["memories"] == 3 and rows["ops"]["files"] == 1
    assert rows["default"]["memories"] == 1 and rows["default"]["default"] is True
    assert ls["data"]["untracked_folders"] == ["teams/orphan-dir/"]
    assert any("orphan-dir" in w for w in ls["warnings"])
    ins = cli.json("team", "inspect", "ops", "-w", str(ws))["data"]
    assert ins["by_status"] == {"active": 3} and ins["by_kind"] == {"note": 3}
    assert ins["top_tags"] == [{"tag": "oncall", "count": 3}]
    assert [r["title"] for r in ins["recent"]] == ["Ops 2", "Ops 1", "Ops 0"]
    assert ins["files_list"] == [{"path": "teams/ops/files/runbook.pdf", "companion": False}]
    assert cli.json("team", "inspect", "ghost", "-w", str(ws), code=1)["errors"][0]["code"] == "not_found"


def test_conflicts_lists_slugs_and_titles_in_several_teams(cli, ws: Path) -> None:
    for t in ("eng", "ops"):
        cli.json("team", "create", t, "-w", str(ws))
        cli.json("write", f"{t} view", "--title", "Auth Strategy", "--team", t, "-w", str(ws))
    cli.json("write", "eng only", "--title", "Eng Only", "--team", "eng", "-w", str(ws))
    cli.json("write", "root", "--title", "Deploy: Policy", "-w", str(ws))
    cli.json("write", "ops", "--title", "deploy policy", "--team", "ops", "-w", str(ws))
    env = cli.json("team", "conflicts", "-w", str(ws))["data"]
    slugs = {c["slug"]: c for c in env["slugs"]}
    assert set(slugs) == {"auth-strategy", "deploy-policy"}
    assert {m["team"] for m in slugs["auth-strategy"]["memories"]} == {"eng", "ops"}
    assert {m["team"] for m in slugs["deploy-policy"]["memories"]} == {"default", "ops"}
    assert env["titles"] == []  # same-title pairs here are already flagged by slug
    assert cli.json("team", "conflicts", "--all", "-w", str(ws))["exit_code"] == 0


def test_remove_archives_every_file_and_drops_the_config_entry(cli, ws: Path, snap) -> None:
    cli.json("team", "create", "legal", "-w", str(ws))
    for i in range(2):
        cli.json("write", f"l{i}", "--title", f"Legal {i}", "--team", "legal", "-w", str(ws))
    (ws / "teams" / "legal" / "files" / "contract.pdf").write_bytes(b"%PDF-1.4 contract")
    cli.json("companion", "teams/legal/files/contract.pdf", "--team", "legal", "-w", str(ws))
    before = snap(ws)
    team_files = {k: v for k, v in before.items() if k.startswith("teams/legal/")}
    assert len(team_files) >= 6

    refused = cli.json("team", "remove", "legal", "-w", str(ws), code=2)  # needs --yes
    assert "--yes" in refused["errors"][0]["message"] and snap(ws) == before
    env = cli.json("team", "remove", "legal", "--yes", "-w", str(ws))["data"]
    assert env["archived_to"] == "_archive/teams/legal/"
    after = snap(ws)
    for rel, raw in team_files.items():  # every file kept, byte for byte, under _archive/teams/
        assert after["_archive/" + rel] == raw
    assert not (ws / "teams" / "legal").exists()
    assert "legal" not in config(ws)["teams"]
    roll = json.loads((ws / "_index.json").read_bytes())
    assert not any(e["folder_path"].startswith("teams/legal/") for e in roll["entries"])
    # Everything else is untouched (config and rollup aside).
    for rel, raw in before.items():
        if not rel.startswith("teams/legal/") and rel not in ("_box-memory.json", "_index.json"):
            assert after[rel] == raw, rel
    assert (
        cli.json("team", "remove", "legal", "--yes", "-w", str(ws), code=1)["errors"][0]["code"]
        == "not_found"
    )
    # A team of the same name can be created again; a second removal archives beside the first.
    cli.json("team", "create", "legal", "-w", str(ws))
    again = cli.json("team", "remove", "legal", "--yes", "-w", str(ws))["data"]
    assert again["archived_to"].startswith("_archive/teams/legal.") and (ws / "_archive/teams/legal").is_dir()
    assert cli.json("index-rebuild", "--check", "-w", str(ws))["data"]["drift"] is False


def test_default_team_cannot_be_removed(cli, ws: Path, snap) -> None:
    before = snap(ws)
    env = cli.json("team", "remove", "default", "--yes", "-w", str(ws), code=2)
    assert "default team" in env["errors"][0]["message"]
    assert snap(ws) == before


def test_remove_finishes_an_interrupted_removal(cli, ws: Path) -> None:
    """Config already updated but the folder not yet moved: a second remove archives it."""
    cli.json("team", "create", "tmp", "-w", str(ws))
    cfg = config(ws)
    cfg["teams"] = [t for t in cfg["teams"] if t != "tmp"]
    (ws / "_box-memory.json").write_bytes(json.dumps(cfg).encode())
    env = cli.json("team", "remove", "tmp", "--yes", "-w", str(ws))["data"]
    assert env["was_tracked"] is False and env["archived_to"] == "_archive/teams/tmp/"
    assert (ws / "_archive" / "teams" / "tmp" / "memories" / "_index.json").is_file()


def test_team_create_keeps_unknown_config_keys_and_folder_ids(cli, ws: Path) -> None:
    cfg = config(ws)
    cfg["custom_key"] = {"kept": True}
    cfg["folder_ids"] = {"root": None, "team_x_memories": "123"}
    (ws / "_box-memory.json").write_bytes(json.dumps(cfg).encode())
    cli.json("team", "create", "x", "-w", str(ws))
    cli.json("team", "create", "y", "-w", str(ws))
    new = config(ws)
    assert new["custom_key"] == {"kept": True} and new["teams"] == ["default", "x", "y"]
    env = cli.json("team", "remove", "x", "--yes", "-w", str(ws))["data"]
    assert env["dropped_folder_ids"] == {"team_x_memories": "123"}
    assert config(ws)["folder_ids"] == {"root": None}
