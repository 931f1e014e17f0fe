"""Small things a first user reported: each is a real report with the output it gave."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from box_memory.recall.excerpt import excerpt

FIXTURE = Path(__file__).parent.parent / "fixtures" / "plugin_workspace"


def test_recall_of_an_old_id_names_it_once(cli, ws: Path) -> None:
    a = cli.json("write", "one", "--title", "Deploy window", "-w", str(ws))["data"]
    b = cli.json("write", "two", "--supersedes", a["id"], "-w", str(ws))["data"]
    env = cli.json("recall", a["id"], "-w", str(ws))
    assert [h["id"] for h in env["data"]["hits"]] == [b["id"]]
    [w] = [w for w in env["warnings"] if "superseded" in w]
    assert w.count(a["id"]) == 1, w


def test_companion_outside_the_workspace_says_how_to_bring_it_in(cli, ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "report.pdf"
    outside.parent.mkdir()
    outside.write_bytes(b"%PDF-1.4 x")
    env = cli.json("companion", str(outside), "-w", str(ws), code=2)
    msg = env["errors"][0]["message"]
    assert "outside the workspace" in msg and "copy it in" in msg and str(ws.resolve() / "files") in msg


def test_plain_recall_labels_scores(cli, ws: Path) -> None:
    cli.json("write", "body", "--title", "Auth strategy", "-w", str(ws))
    out = cli("recall", "auth strategy", "-w", str(ws)).stdout
    assert "score 10 (title)" in out


def test_highlight_marks_whole_tokens_only() -> None:
    text, marks = excerpt("We use it for user-facing pages; use counts.", "T", ["use"])
    assert [text[a:b] for a, b in marks] == ["use", "use"]
    assert all(text[b : b + 1] in (" ", "") for _, b in marks)


def test_plugin_made_local_folder_is_a_local_backend(cli, tmp_path: Path) -> None:
    root = tmp_path / "plugin"
    shutil.copytree(FIXTURE, root)  # its config has the workspace_root_id of the Box folder
    env = cli.json("status", "-w", str(root))
    assert env["data"]["workspace"]["backend"] == "local"


def test_not_logged_in_is_said_before_loading_the_network_stack(tmp_path: Path) -> None:
    ws = tmp_path / "ws"  # a Box Brain source belongs to a workspace
    code = (
        "import sys\n"
        "from box_memory.cli.app import main\n"
        f"for argv in (['mcp-check', '--json'], ['brain-sync', '--folder-id', '5', '-w', {str(ws)!r}, "
        "'--json']):\n"
        "    sys.argv = ['box-memory', *argv]\n"
        "    try:\n        main()\n    except SystemExit as e:\n        assert e.code == 4, e.code\n"
        "bad = [m for m in ('mcp', 'mcp_types', 'httpx', 'httpx2', 'anyio') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {"BOX_MEMORY_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    made = [sys.executable, "-m", "box_memory", "init", "--path", str(ws), "--json"]
    subprocess.run(made, capture_output=True, env=env, check=True)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert res.returncode == 0, res.stderr
    envelopes = [json.loads(line) for line in res.stdout.splitlines()]
    assert [e["errors"][0]["code"] for e in envelopes] == ["not_logged_in", "not_logged_in"]
