"""Tier and capabilities follow the Box plan: a downgrade signal on a write re-detects them (saved,
with a warning); an upgrade is picked up by `status --refresh` and by `init --reinit`."""

from __future__ import annotations

import json
from typing import Any

from box_memory.emulator import Emulator
from tests.cloud.conftest import Backend

TEMPLATE_TOOLS = ("set_file_metadata", "list_metadata_templates", "create_metadata_template")


def _config(b: Backend) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads(b.path("_box-memory.json").read_bytes())
    return cfg


def test_a_downgrade_on_write_is_detected_and_saved(make: Any, emu: Emulator) -> None:
    b: Backend = make("cloud")
    before = _config(b)
    assert before["capabilities"]["custom_metadata_templates"] is True
    emu.configure(hidden_tools=TEMPLATE_TOOLS)  # the plan lost metadata templates
    env = b.run("write", "Still written.", "--title", "After the downgrade")
    assert any("re-detected as business" in w for w in env["warnings"]), env["warnings"]
    after = _config(b)
    assert after["tier"] == "business" and after["tier"] != before["tier"]
    assert after["capabilities"]["custom_metadata_templates"] is False
    assert after["tier_detected_at"] != before["tier_detected_at"]
    # Saved: the next write neither re-detects nor tries metadata.
    again = b.run("write", "Once more.", "--title", "Second write")
    assert not any("re-detected" in w for w in again["warnings"])
    assert b.data("status")["workspace"]["tier"] == "business"


def test_an_upgrade_is_picked_up_by_status_refresh_and_init_reinit(make: Any, emu: Emulator) -> None:
    emu.configure(hidden_tools=TEMPLATE_TOOLS)
    b: Backend = make("cloud")
    assert b.init_data["tier"] == "business"
    emu.configure(hidden_tools=())  # the plan now has metadata templates
    plain = b.data("status")
    assert plain["workspace"]["tier"] == "business" and "tier_refresh" not in plain
    env = b.run("status", "--refresh")
    assert env["data"]["tier_refresh"]["changed"] is True
    assert env["data"]["workspace"]["tier"] in ("enterprise", "enterprise_plus")
    assert _config(b)["capabilities"]["custom_metadata_templates"] is True
    assert any("Box tier now" in w for w in env["warnings"])
    emu.configure(hidden_tools=TEMPLATE_TOOLS)
    b.cli.json("init", b.name, "--parent", "0", "--reinit")
    assert _config(b)["tier"] == "business"


def test_status_refresh_on_a_local_workspace_says_there_is_no_tier(make: Any) -> None:
    b: Backend = make("local")
    env = b.run("status", "--refresh")
    assert "tier_refresh" not in env["data"]
    assert any("local workspace" in w for w in env["warnings"])
