"""Talking to the emulator the way box-memory does: the real mcp client over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from box_memory.emulator import Emulator


@asynccontextmanager
async def connect(
    emu: Emulator,
    token: str | None = None,
    *,
    statuses: list[tuple[int, str | None]] | None = None,
    mode: str = "auto",
) -> AsyncIterator[Client]:
    """A connected client; `statuses` collects (HTTP status, retry-after) of every response."""

    async def hook(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append((response.status_code, response.headers.get("retry-after")))

    headers = {"Authorization": f"Bearer {token or emu.token}"}
    http = httpx2.AsyncClient(headers=headers, event_hooks={"response": [hook]}, timeout=10)
    async with http, Client(streamable_http_client(emu.url, http_client=http), mode=mode) as client:
        yield client


def payload(result: Any) -> Any:
    """The tool payload, wherever the shape put it."""
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


async def call(client: Client, tool: str, /, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return payload(result)


async def call_error(client: Client, tool: str, /, **arguments: Any) -> Any:
    """The Box error JSON of a failing call."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    assert result.structured_content is None
    return json.loads(result.content[0].text)


def populate(root: Path) -> None:
    """A small Box tree: two folders, a nested note, a binary, a few files at the top."""
    (root / "Projects" / "alpha").mkdir(parents=True)
    (root / "archive").mkdir()
    (root / "Projects" / "alpha" / "plan.md").write_text(
        "---\nstatus: active\nowner: Ada\n---\n# Plan\n\nWe ship the alpha in March. "
        "The launch needs a signed contract.\n\nBudget: 1200 EUR\n",
        encoding="utf-8",
    )
    (root / "notes.md").write_text(
        "Cats sleep most of the day. Dogs bark at the mail carrier. The weather is mild.\n", encoding="utf-8"
    )
    (root / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (root / "readme.txt").write_text("hello box\n", encoding="utf-8")
