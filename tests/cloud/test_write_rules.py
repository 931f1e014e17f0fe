"""Writes Box refuses say why; folder moves use move_folder; tier detection without `enterprise`.

Box's published material: write tools refuse items with a shared link or an external collaborator
on the item or any parent folder, and `upload_file` takes text types only. The emulator enforces
each rule behind a switch (the refusal's wording is not published, so the emulator's is assumed).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend


def _ids(emu: Emulator, cloud: Backend, rel: str) -> str:
    return emu.fs.id_for_path(f"{cloud.name}/{rel}" if rel else cloud.name)


def _files(cloud: Backend) -> dict[str, bytes]:
    return {
        p.relative_to(cloud.root).as_posix(): p.read_bytes()
        for p in sorted(cloud.root.rglob("*"))
        if p.is_file() and not p.name.startswith("_box-memory.lock")
    }


def test_a_shared_link_above_the_memory_refuses_the_write_in_one_line(make: Any, emu: Emulator) -> None:
    cloud = make("cloud")
    emu.configure(shared_links={_ids(emu, cloud, "memories")})
    before = _files(cloud)
    env = cloud.run("write", "We use JWT.", "--title", "Auth tokens", code=1)
    err = env["errors"][0]
    assert err["code"] == "write_refused"
    assert "shared link" in err["message"] and "memories/" in err["message"]
    assert "\n" not in err["message"]
    assert _files(cloud) == before
    emu.configure(shared_links=())
    assert cloud.data("write", "We use JWT.", "--title", "Auth tokens")["id"]


def test_an_external_collaborator_on_the_workspace_refuses_the_lock(make: Any, emu: Emulator) -> None:
    cloud = make("cloud")
    emu.configure(external_collaborators={_ids(emu, cloud, "")})
    env = cloud.run("write", "We use JWT.", "--title", "Auth tokens", code=1)
    err = env["errors"][0]
    assert err["code"] == "write_refused"
    assert "external collaborator" in err["message"] and "_box-memory.lock" in err["message"]


def test_a_refused_lock_name_falls_back_to_a_text_type_recorded_in_the_config(
    make: Any, emu: Emulator
) -> None:
    emu.configure(upload_text_only=True)
    cloud = make("cloud")
    config = json.loads(cloud.path("_box-memory.json").read_text())
    assert config["lock_name"] == "_box-memory.lock.json"
    assert cloud.path("_box-memory.lock.json").is_file()
    assert not cloud.path("_box-memory.lock").exists()
    emu.reset_calls()
    cloud.data("write", "We use JWT.", "--title", "Auth tokens")
    uploads = [c.arguments.get("file_name") for c in emu.calls if c.name == "upload_file"]
    assert "_box-memory.lock" not in uploads  # the config said which name: no refused attempt
    assert not cloud.path("_box-memory.lock").exists()
    lock = json.loads(cloud.path("_box-memory.lock.json").read_text())
    assert lock["state"] == "released"


def test_the_plugin_lock_name_is_kept_where_box_accepts_it(make: Any) -> None:
    cloud = make("cloud")
    assert "lock_name" not in json.loads(cloud.path("_box-memory.json").read_text())
    assert cloud.path("_box-memory.lock").is_file()


def test_team_remove_moves_the_folder_in_one_call(make: Any, emu: Emulator) -> None:
    cloud = make("cloud")
    cloud.data("team", "create", "legal")
    cloud.data("write", "NDA terms.", "--title", "NDA", "--team", "legal")
    emu.reset_calls()
    env = cloud.data("team", "remove", "legal", "--yes")
    assert env["archived_to"] == "_archive/teams/legal/"
    names = Counter(c.name for c in emu.calls)
    assert names["move_folder"] == 1 and names["move_file"] == 0, names
    assert not cloud.path("teams/legal").exists()  # no empty folders left behind
    assert any(cloud.path("_archive/teams/legal/memories").glob("*.md"))


def test_team_remove_without_move_folder_moves_file_by_file(make: Any, emu: Emulator) -> None:
    cloud = make("cloud")
    cloud.data("team", "create", "legal")
    cloud.data("write", "NDA terms.", "--title", "NDA", "--team", "legal")
    emu.configure(hidden_tools={"move_folder"})
    emu.reset_calls()
    cloud.data("team", "remove", "legal", "--yes")
    assert Counter(c.name for c in emu.calls)["move_file"] >= 2
    assert any(cloud.path("_archive/teams/legal/memories").glob("*.md"))


def test_tier_is_detected_from_the_catalogue_when_who_am_i_has_no_enterprise(
    make: Any, emu: Emulator
) -> None:
    emu.configure(user="mini")
    cloud = make("cloud")
    assert cloud.init_data["tier"] == "enterprise_plus"
    assert cloud.init_data["capabilities"]["custom_metadata_templates"] is True
    emu.configure(hidden_tools={"list_metadata_templates"})
    other = make("cloud")
    assert other.init_data["tier"] == "personal"
    assert other.init_data["capabilities"]["custom_metadata_templates"] is False
