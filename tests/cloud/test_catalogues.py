"""Calls follow the server's catalogue: aliases, dropped optionals, and INCOMPATIBLE (exit 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from box_memory.emulator import Emulator, catalogue
from tests.cloud.conftest import Backend


def test_older_catalogue_gets_its_own_argument_names(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud-older")
    cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens")
    calls = [c for c in emu.calls if c.name == "create_folder"]
    assert calls and all("parent_id" in c.arguments and "parent_folder_id" not in c.arguments for c in calls)
    listings = [c.arguments for c in emu.calls if c.name == "list_folder_content_by_folder_id"]
    assert listings and not any("offset" in a for a in listings)  # not in that schema: never sent
    assert all(c.outcome == "ok" for c in emu.calls if c.name != "upload_file"), [
        (c.name, c.code) for c in emu.calls if not c.ok
    ]


def test_newer_catalogue_moves_with_destination_names(make: Any, emu: Emulator) -> None:
    cloud: Backend = make("cloud-newer")
    cloud.data("team", "create", "legal")
    cloud.data("write", "NDA terms.", "--title", "NDA", "--team", "legal")
    emu.reset_calls()
    cloud.data("team", "remove", "legal", "--yes")
    moves = [c for c in emu.calls if c.name == "move_folder"]
    assert len(moves) == 1 and moves[0].ok
    assert "destination_parent_folder_id" in moves[0].arguments
    assert not [
        c for c in emu.calls if c.name == "list_folder_content_by_folder_id" and "marker" in c.arguments
    ]


def test_a_required_argument_box_memory_cannot_send_exits_4_in_one_line(
    make: Any, emu: Emulator, tmp_path: Path
) -> None:
    cloud: Backend = make("cloud")
    doc = json.loads(catalogue.catalogue_path("today").read_text())
    for tool in doc["tools"]:
        if tool["name"] == "upload_file_version":
            tool["inputSchema"]["properties"]["change_note"] = {"type": "string"}
            tool["inputSchema"]["required"].append("change_note")
    custom = tmp_path / "catalogue.json"
    custom.write_text(json.dumps(doc))
    emu.configure(catalogue=str(custom))
    emu.reset_calls()
    env = cloud.run("write", "We decided to use JWT.", "--title", "Auth tokens", code=4)
    err = env["errors"][0]
    assert err["code"] == "incompatible"
    assert "upload_file_version" in err["message"] and "'change_note'" in err["message"]
    assert "\n" not in err["message"]
    # The cached catalogue sent one call the server refused (a schema error), which made the
    # client re-read the catalogue; with the new schema the call is refused before it is sent.
    versions = [c for c in emu.calls if c.name == "upload_file_version"]
    assert len(versions) == 1 and versions[0].outcome == "error"
    assert emu.counters.get("rpc:tools/list", 0) == 1
