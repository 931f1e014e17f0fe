"""A companion is read as what it is: `get`, `recall` and plain `status` say when its binary changed
since the pin (or is gone), cheaply: a binary whose size and mtime are unchanged is not re-hashed."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from tests.conftest import Cli

PLUGIN_FIXTURE = Path(__file__).parent.parent / "fixtures" / "plugin_workspace"
PDF = b"%PDF-1.7\n" + bytes(range(256)) * 40


def _flip(p: Path, *, keep_mtime: bool) -> None:
    st = p.stat()
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0x01
    p.write_bytes(bytes(data))
    if keep_mtime:
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _companion(cli: Cli, ws: Path) -> str:
    (ws / "files").mkdir(exist_ok=True)
    (ws / "files" / "budget.pdf").write_bytes(PDF)
    env = cli.json("companion", "files/budget.pdf", "--body", "Budget for the launch.", "-w", str(ws))
    mem_id: str = env["data"]["id"]
    return mem_id


def _hit(cli: Cli, ws: Path) -> tuple[dict, list[str]]:
    env = cli.json("recall", "budget", "--kind", "companion", "-w", str(ws))
    return env["data"]["hits"][0], env["warnings"]


def test_recall_and_get_flag_a_stale_companion(cli: Cli, ws: Path) -> None:
    mem_id = _companion(cli, ws)
    hit, warnings = _hit(cli, ws)
    assert hit["id"] == mem_id and hit["stale"] is False and hit["companion_state"] == "current"
    assert not any("stale" in w for w in warnings)
    got = cli.json("get", mem_id, "-w", str(ws))
    assert got["data"]["stale"] is False

    _flip(ws / "files" / "budget.pdf", keep_mtime=False)
    hit, warnings = _hit(cli, ws)
    assert hit["stale"] is True and hit["companion_state"] == "stale"
    assert any("stale" in w and "budget.pdf" in w for w in warnings)
    got = cli.json("get", mem_id, "-w", str(ws))
    assert got["data"]["stale"] is True
    assert any("stale" in w for w in got["warnings"])

    (ws / "files" / "budget.pdf").unlink()
    hit, warnings = _hit(cli, ws)
    assert hit["stale"] is False and hit["companion_state"] == "orphaned"
    assert any("orphaned" in w for w in warnings)


def test_unchanged_size_and_mtime_are_not_hashed_again(cli: Cli, ws: Path) -> None:
    """The cheap check: same size and mtime as when last hashed -> the recorded hash is trusted;
    a changed mtime (or size) -> the binary is hashed again."""
    _companion(cli, ws)
    assert _hit(cli, ws)[0]["stale"] is False  # hashed once and recorded
    _flip(ws / "files" / "budget.pdf", keep_mtime=True)
    assert _hit(cli, ws)[0]["stale"] is False  # not re-hashed: stat unchanged
    os.utime(ws / "files" / "budget.pdf")
    assert _hit(cli, ws)[0]["stale"] is True


def test_plain_status_counts_stale_and_orphaned_companions(cli: Cli, ws: Path) -> None:
    _companion(cli, ws)
    (ws / "files" / "gone.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"x" * 100)
    cli.json("companion", "files/gone.png", "--body", "A chart.", "-w", str(ws))
    comp = cli.json("status", "-w", str(ws))["data"]["companions"]
    assert (comp["checked"], comp["stale"], comp["orphaned"]) == (2, 0, 0)

    _flip(ws / "files" / "budget.pdf", keep_mtime=False)
    (ws / "files" / "gone.png").unlink()
    env = cli.json("status", "-w", str(ws))
    comp = env["data"]["companions"]
    assert (comp["checked"], comp["stale"], comp["orphaned"]) == (2, 1, 1)
    assert {(i["binary"], i["state"]) for i in comp["items"]} == {
        ("files/budget.pdf", "stale"),
        ("files/gone.png", "orphaned"),
    }
    assert any("1 stale and 1 orphaned companion" in w for w in env["warnings"])
    assert any("companion --stale" in n for n in env["data"]["next"])


def test_plugin_companion_with_only_a_box_file_id_is_found_under_files(cli: Cli, tmp_path: Path) -> None:
    """Box Drive keeps a Box file under its relative path: a plugin companion that holds only the
    file id and name is resolved by name anywhere under files/, not called orphaned."""
    root = tmp_path / "plugin"
    shutil.copytree(PLUGIN_FIXTURE, root)
    data = b"PK\x03\x04 quarterly capacity"
    (root / "files" / "planning").mkdir(parents=True)
    (root / "files" / "planning" / "capacity-plan.xlsx").write_bytes(data)
    comp = root / "memories" / "companion__capacity-plan-xlsx-companion.md"
    text = comp.read_text("utf-8")
    pinned = text.split("sha256: ", 1)[1].split("\n", 1)[0]
    text = text.replace(pinned, hashlib.sha256(data).hexdigest()).replace(
        "size_bytes: 48211", f"size_bytes: {len(data)}"
    )
    comp.write_text(text, "utf-8")

    assert cli.json("companion", "--stale", "-w", str(root))["data"]["stale"] == []
    health = cli.json("status", "-w", str(root))["data"]["companions"]
    assert (health["checked"], health["stale"], health["orphaned"]) == (1, 0, 0)
    got = cli.json("get", "mem_01JAAAA1B2C3D4E5F6G7H8J9L5", "-w", str(root))["data"]
    assert got["companion_state"] == "current"

    (root / "files" / "planning" / "capacity-plan.xlsx").write_bytes(data + b"more")
    got = cli.json("get", "mem_01JAAAA1B2C3D4E5F6G7H8J9L5", "-w", str(root))["data"]
    assert got["stale"] is True
