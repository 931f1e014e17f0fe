"""HTTP-level behaviour: Box's exact 401, 405 on GET, the protected-resource document, tokens."""

from __future__ import annotations

import httpx2
import pytest

from box_memory.emulator import Emulator
from tests.emulator.helpers import call, connect
from tests.helpers.net import INITIALIZE, MCP_HEADERS


def test_missing_token_is_an_exact_box_401(emu: Emulator) -> None:
    r = httpx2.post(emu.url, json=INITIALIZE, headers=MCP_HEADERS)
    assert r.status_code == 401
    assert r.content == b""
    assert r.headers["www-authenticate"] == (
        'Bearer realm="Service", error="invalid_request", '
        'error_description="The access token was not found.", '
        f'resource_metadata="{emu.base_url}/.well-known/oauth-protected-resource"'
    )


def test_wrong_token_is_invalid_token(emu: Emulator) -> None:
    r = httpx2.post(emu.url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": "Bearer nope"})
    assert r.status_code == 401
    assert r.content == b""
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="Service", error="invalid_token", error_description="')
    assert challenge.endswith(f'resource_metadata="{emu.base_url}/.well-known/oauth-protected-resource"')


def test_non_bearer_authorization_counts_as_missing(emu: Emulator) -> None:
    r = httpx2.post(emu.url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": f"Basic {emu.token}"})
    assert r.status_code == 401
    assert 'error="invalid_request"' in r.headers["www-authenticate"]


def test_valid_token_initializes(emu: Emulator) -> None:
    r = httpx2.post(emu.url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": f"Bearer {emu.token}"})
    assert r.status_code == 200
    assert r.json()["result"]["serverInfo"]["name"]


def test_get_root_is_405(emu: Emulator) -> None:
    r = httpx2.get(emu.url, headers={"authorization": f"Bearer {emu.token}", "accept": "text/event-stream"})
    assert r.status_code == 405


def test_protected_resource_document_needs_no_auth(emu: Emulator) -> None:
    r = httpx2.get(f"{emu.base_url}/.well-known/oauth-protected-resource")
    assert r.status_code == 200
    assert r.json() == {
        "resource": emu.base_url,
        "resource_name": "Box MCP Server",
        "authorization_servers": ["https://api.box.com/"],
        "bearer_methods_supported": ["header"],
    }


def test_unknown_path_is_404(emu: Emulator) -> None:
    assert httpx2.get(f"{emu.base_url}/nowhere").status_code == 404


@pytest.mark.anyio
async def test_tokens_rotate_and_revoke_at_runtime(emu: Emulator) -> None:
    emu.set_tokens(["old", "new"])
    async with connect(emu, "old") as client:
        assert (await call(client, "who_am_i"))["type"] == "user"
    emu.set_tokens(["new"])
    statuses: list[tuple[int, str | None]] = []
    async with connect(emu, "new", statuses=statuses) as client:
        await call(client, "who_am_i")
    assert all(s != 401 for s, _ in statuses)
    r = httpx2.post(emu.url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": "Bearer old"})
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert emu.token == "new"
    emu.set_tokens([])
    assert (
        httpx2.post(
            emu.url, json=INITIALIZE, headers={**MCP_HEADERS, "authorization": "Bearer new"}
        ).status_code
        == 401
    )


@pytest.mark.anyio
async def test_unauthorized_tool_calls_are_logged(emu: Emulator) -> None:
    async with connect(emu) as client:
        emu.set_tokens(["rotated"])
        with pytest.raises(Exception):  # noqa: B017 - the SDK reports a 401 in its own way
            await client.call_tool("who_am_i", {})
    assert emu.calls[-1].outcome == "unauthorized"
    assert emu.calls[-1].status == 401
    assert emu.counters["http_401"] >= 1


@pytest.mark.anyio
async def test_the_importable_fixture_serves_an_empty_box(emulator: Emulator) -> None:
    assert emulator.running and emulator.url.startswith("http://127.0.0.1:")
    assert emulator.token == "test-token"
    async with connect(emulator) as client:
        listing = await call(client, "list_folder_content_by_folder_id", folder_id="0")
    assert listing == {"entries": [], "limit": 100, "next_marker": None}
    assert [(c.name, c.ok) for c in emulator.calls] == [("list_folder_content_by_folder_id", True)]
