"""Cloud folder indexes and the rollup's child_indexes carry the real Box folder_id and
index_file_id (format spec sections 5 and 6), from init on and after every write."""

from __future__ import annotations

import json
from typing import Any

from tests.cloud.conftest import Backend


def _check(b: Backend, teams: tuple[str, ...] = ()) -> None:
    assert b.emu is not None
    roll = json.loads(b.path("_index.json").read_bytes())
    children = {c["folder_path"]: c for c in roll["child_indexes"]}
    folders = ["memories", "files", *(f"teams/{t}/{k}" for t in teams for k in ("memories", "files"))]
    for folder in folders:
        idx = json.loads(b.path(f"{folder}/_index.json").read_bytes())
        want_folder = b.emu.fs.id_for_path(f"{b.name}/{folder}")
        want_file = b.emu.fs.id_for_path(f"{b.name}/{folder}/_index.json")
        assert (idx["folder_id"], idx["index_file_id"]) == (want_folder, want_file), folder
        child = children[folder + "/"]
        assert (child["folder_id"], child["index_file_id"]) == (want_folder, want_file), folder


def test_fresh_cloud_workspace_indexes_carry_real_box_ids(make: Any) -> None:
    b: Backend = make("cloud", "--team", "ops")
    _check(b, ("ops",))
    b.run("write", "Box ids in every index.", "--title", "Ids everywhere")
    b.run("write", "And in team indexes.", "--title", "Team ids", "--team", "ops")
    _check(b, ("ops",))
    b.run("index-rebuild")
    _check(b, ("ops",))


def test_a_plugin_companion_holding_only_a_box_file_id_is_resolved_by_id(make: Any) -> None:
    """On Box the binary is found by the companion's file_id, wherever it sits under files/ and
    whatever it is called now; not called orphaned."""
    import hashlib

    b: Backend = make("cloud")
    assert b.emu is not None
    data = b"PK\x03\x04 capacity numbers"
    b.put("files/planning/capacity-2026.xlsx", data)
    fid = b.emu.fs.id_for_path(f"{b.name}/files/planning/capacity-2026.xlsx")
    companion = f"""---
id: mem_01JAAAA1B2C3D4E5F6G7H8J9L5
slug: capacity-plan-xlsx-companion
title: Companion - capacity-plan.xlsx
kind: companion
status: active
created_at: 2026-06-01T09:40:00Z
updated_at: 2026-06-01T09:40:00Z
companion_for:
  file_id: "{fid}"
  filename: capacity-plan.xlsx
  sha256: {hashlib.sha256(data).hexdigest()}
  hash_algo: sha256
  size_bytes: {len(data)}
tags: [companion, office]
---

# Companion - capacity-plan.xlsx
"""
    b.put("memories/companion__capacity-plan-xlsx-companion.md", companion.encode())
    b.run("index-rebuild")
    assert b.data("companion", "--stale")["stale"] == []
    health = b.data("status")["companions"]
    assert (health["checked"], health["stale"], health["orphaned"]) == (1, 0, 0)
