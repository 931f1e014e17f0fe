"""A corrupt user config is reported as what it is, and never overwritten without a .bak copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from box_memory.paths import user_dirs


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]"])
def test_corrupt_user_config_is_reported_and_kept(cli, tmp_path: Path, content: bytes) -> None:
    cfg = user_dirs().user_config_file
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_bytes(content)
    env = cli.json("status", code=1)
    msg = env["errors"][0]["message"]
    assert env["errors"][0]["code"] == "invalid_file" and str(cfg) in msg
    assert "No box-memory workspace" not in msg
    assert cfg.read_bytes() == content  # reading never changes it
    res = cli("status")
    assert res.exit_code == 1 and len(res.stderr.strip().splitlines()) == 1 and str(cfg) in res.stderr

    # init replaces it, but keeps the corrupt file as config.json.bak and says so.
    env = cli.json("init", "--path", str(tmp_path / "w"))
    bak = cfg.with_name("config.json.bak")
    assert bak.read_bytes() == content
    assert any(str(bak) in w for w in env["warnings"])
    assert json.loads(cfg.read_bytes())["default_workspace"] == str((tmp_path / "w").resolve())
    assert cli.json("status")["data"]["workspace"]["root"] == str((tmp_path / "w").resolve())
