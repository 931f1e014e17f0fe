"""`mcp-check --deep` (+ `--write-test FOLDER_ID`) through the real CLI against the emulator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from box_memory.emulator import Emulator, catalogue
from tests.cloud.conftest import TOKEN
from tests.conftest import Cli


def _features(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["feature"]: f for f in data["features"]}


def test_deep_check_passes_on_todays_catalogue(emu: Emulator, cli: Cli) -> None:
    res = cli("mcp-check", "--deep", "--json")
    assert res.exit_code == 0
    data = json.loads(res.stdout)["data"]
    assert data["verdict"] == "PASS"
    feats = _features(data)
    assert {"read workspace", "write memories", "Box AI Q&A", "folder moves"} <= set(feats)
    assert all(f["verdict"] == "PASS" for f in feats.values())
    assert TOKEN not in res.stdout


def test_deep_check_on_the_older_catalogue_says_what_is_lost_and_what_is_renamed(
    emu: Emulator, cli: Cli
) -> None:
    emu.configure(catalogue="older")
    data = cli.json("mcp-check", "--deep")["data"]
    assert data["verdict"] == "DEGRADED"
    feats = _features(data)
    assert feats["write memories"]["verdict"] == "PASS"
    mkdir = next(c for c in feats["write memories"]["calls"] if c["tool"] == "create_folder")
    assert mkdir["renamed"] == {"parent_folder_id": "parent_id"}
    qa = next(c for c in feats["Box AI Q&A"]["calls"] if c["tool"] == "ai_qa_single_file")
    assert qa["renamed"] == {"question": "prompt"}
    for name in ("verified content fallback", "folder moves", "Box AI extraction"):
        assert feats[name]["verdict"] == "DEGRADED" and feats[name]["lost"], name
    assert feats["folder moves"]["problem"].startswith("move_folder: not offered")


def test_deep_check_names_the_exact_mismatch_and_exits_4(emu: Emulator, cli: Cli, tmp_path: Path) -> None:
    doc = json.loads(catalogue.catalogue_path("today").read_text())
    for tool in doc["tools"]:
        if tool["name"] == "upload_file":
            tool["inputSchema"]["properties"]["folder_path"] = {"type": "string"}
            tool["inputSchema"]["required"].append("folder_path")
    custom = tmp_path / "catalogue.json"
    custom.write_text(json.dumps(doc))
    emu.configure(catalogue=str(custom))
    env = cli.json("mcp-check", "--deep", code=4)
    feats = _features(env["data"])
    assert feats["write memories"]["verdict"] == "INCOMPATIBLE"
    assert (
        "upload_file" in feats["write memories"]["problem"]
        and "'folder_path'" in feats["write memories"]["problem"]
    )
    assert "write memories" in env["errors"][0]["message"]


def test_write_test_round_trip_in_a_scratch_folder(emu: Emulator, cli: Cli) -> None:
    (emu.fs.root / "sandbox").mkdir()
    folder = emu.fs.id_for_path("sandbox")
    res = cli("mcp-check", "--write-test", folder, "--json")
    assert res.exit_code == 0, res.stdout
    data = json.loads(res.stdout)["data"]
    wt = data["write_test"]
    assert wt["verdict"] == "PASS" and data["verdict"] == "PASS"
    assert [s["step"] for s in wt["steps"]] == [
        "create scratch folder",
        "upload",
        "upload new version",
        "read back, sha1 verified",
        "move to archive subfolder",
    ]
    scratch = emu.fs.root / "sandbox" / wt["scratch_folder"]
    assert (scratch / "_archive" / "check.md").read_bytes().endswith(b"second version\n")
    assert not (scratch / "check.md").exists()
    names = [c.name for c in emu.calls]
    assert "upload_file_version" in names and "move_file" in names
    assert "second version" not in res.stdout and TOKEN not in res.stdout  # no contents, no token


def test_write_test_reports_a_refused_write_as_incompatible(emu: Emulator, cli: Cli) -> None:
    (emu.fs.root / "shared").mkdir()
    folder = emu.fs.id_for_path("shared")
    emu.configure(shared_links={folder})
    env = cli.json("mcp-check", "--write-test", folder, code=4)
    wt = env["data"]["write_test"]
    failed = [s for s in wt["steps"] if not s["ok"]]
    assert len(failed) == 1 and "shared link" in failed[0]["error"]
    assert "write test failed" in env["errors"][0]["message"]


def test_write_test_needs_a_folder_id(emu: Emulator, cli: Cli) -> None:
    env = cli.json("mcp-check", "--write-test", "my-folder", code=2)
    assert "--write-test" in env["errors"][0]["message"]
