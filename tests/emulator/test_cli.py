"""The one-command start: a subprocess announces its URL, serves, and logs calls to JSONL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from box_memory.emulator import Emulator
from tests.emulator.helpers import call, connect


class _Remote(Emulator):
    """Just enough of an Emulator for `connect` to reach a server run by another process."""

    def __init__(self, url: str, token: str) -> None:  # no super(): nothing local is served
        self._url, self._token = url, token

    @property
    def url(self) -> str:
        return self._url

    @property
    def token(self) -> str:
        return self._token


@pytest.mark.anyio
async def test_cli_announces_serves_and_logs(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    argv = [sys.executable, "-m", "box_memory.emulator", "--root", str(root), "--port", "0"]
    argv += ["--token", "t1", "--token", "t2", "--paging", "offset", "--disable-tool", "upload_file"]
    argv += ["--call-log", str(log)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            prefix = "box-mcp emulator listening on http://127.0.0.1:"
            assert line.startswith(prefix) and line.endswith("/"), line
            url = line.removeprefix("box-mcp emulator listening on ")
            async with connect(_Remote(url, "t2")) as client:
                listing = await call(client, "list_folder_content_by_folder_id", folder_id="0")
                disabled = await client.call_tool("upload_file", {"file_name": "x.md", "file_content": "x"})
            assert "total_count" in listing
            assert disabled.is_error
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(x["name"], x["outcome"]) for x in lines] == [
        ("list_folder_content_by_folder_id", "ok"),
        ("upload_file", "disabled"),
    ]
    assert (root.parent / "box.box-emulator-state").is_dir()


def test_cli_requires_a_token(root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "box_memory.emulator", "--root", str(root)],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--token" in done.stderr
