"""Fault switches (seeded), latency, dropped connections, the call log, stop/start on the same port."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import httpx2
import pytest
from mcp import MCPError

from box_memory.emulator import Emulator
from box_memory.emulator.testing import running_emulator
from tests.emulator.helpers import call, connect


async def _outcomes(emu: Emulator, n: int) -> list[str]:
    statuses: list[tuple[int, str | None]] = []
    async with connect(emu, statuses=statuses) as client:
        for _ in range(n):
            with contextlib.suppress(MCPError):
                await client.call_tool("who_am_i", {})
    return [c.outcome for c in emu.calls]


@pytest.mark.anyio
async def test_seeded_error_injection_is_reproducible(root: Path) -> None:
    runs = []
    for _ in range(2):
        with running_emulator(root, error_rate=0.5, seed=7) as emu:
            runs.append(await _outcomes(emu, 12))
    assert runs[0] == runs[1]
    assert {"ok", "http_429", "http_500"} <= set(runs[0])
    with running_emulator(root, error_rate=0.5, seed=8) as emu:
        assert await _outcomes(emu, 12) != runs[0]


@pytest.mark.anyio
async def test_http_429_carries_retry_after_and_spares_the_handshake(root: Path) -> None:
    with running_emulator(root, error_rate=1.0, error_kinds=["429"], retry_after_s=3) as emu:
        statuses: list[tuple[int, str | None]] = []
        async with connect(emu, statuses=statuses) as client:
            assert len((await client.list_tools()).tools) > 10
            with pytest.raises(MCPError):
                await client.call_tool("who_am_i", {})
        assert (429, "3") in statuses
        assert emu.calls[-1].outcome == "http_429" and emu.calls[-1].status == 429
        raw = httpx2.post(
            emu.url,
            headers={"authorization": f"Bearer {emu.token}", "accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "who_am_i", "arguments": {}},
            },
        )
        assert raw.status_code == 429 and raw.headers["retry-after"] == "3"
        assert raw.json()["code"] == "rate_limit_exceeded"


@pytest.mark.anyio
async def test_fault_all_also_hits_the_handshake(root: Path) -> None:
    with running_emulator(root, error_rate=1.0, error_kinds=["500"], fault_all=True) as emu:
        with pytest.raises(BaseException):  # noqa: B017 - the SDK cannot even connect
            async with connect(emu):
                pass
        assert emu.counters["http_500"] >= 1


@pytest.mark.anyio
async def test_tool_level_429_is_relayed_as_is_error(root: Path) -> None:
    with running_emulator(root, error_rate=1.0, error_kinds=["tool429"]) as emu:
        async with connect(emu) as client:
            result = await client.call_tool("who_am_i", {})
    assert result.is_error
    body = json.loads(result.content[0].text)
    assert (body["status"], body["code"]) == (429, "rate_limit_exceeded")


@pytest.mark.anyio
async def test_dropped_connection_fails_the_call(root: Path) -> None:
    with running_emulator(root, drop_rate=1.0) as emu:
        with pytest.raises(BaseException):  # noqa: B017 - the SDK surfaces a transport failure
            async with connect(emu) as client:
                await client.call_tool("who_am_i", {})
        emu.configure(drop_rate=0.0)
        async with connect(emu) as client:
            assert (await call(client, "who_am_i"))["type"] == "user"
    assert [c.outcome for c in emu.calls] == ["dropped", "ok"]


@pytest.mark.anyio
async def test_latency_is_added_to_tool_calls_only(emu: Emulator) -> None:
    emu.configure(latency_ms=150)
    async with connect(emu) as client:
        t0 = time.perf_counter()
        await client.list_tools()
        listed = time.perf_counter() - t0
        t0 = time.perf_counter()
        await call(client, "who_am_i")
        called = time.perf_counter() - t0
    assert called >= 0.15
    assert listed < 0.15


@pytest.mark.anyio
async def test_call_log_in_memory_jsonl_and_counters(root: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    with running_emulator(root, call_log=log) as emu:
        async with connect(emu) as client:
            await call(client, "list_folder_content_by_folder_id", folder_id="0", limit=2)
            await client.call_tool("get_file_details", {"file_id": "42"})
        calls = emu.calls
        counters = emu.counters
        emu.reset_calls()
        assert emu.calls == [] and emu.counters == {}
    assert [(c.name, c.ok, c.outcome) for c in calls] == [
        ("list_folder_content_by_folder_id", True, "ok"),
        ("get_file_details", False, "error"),
    ]
    assert calls[0].arguments == {"folder_id": "0", "limit": 2}
    assert calls[1].status == 404 and calls[1].code == "not_found"
    assert counters["tool_calls"] == 2 and counters["tool_calls:get_file_details"] == 1
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(x["name"], x["ok"], x["outcome"], x["status"]) for x in lines] == [
        ("list_folder_content_by_folder_id", True, "ok", None),
        ("get_file_details", False, "error", 404),
    ]
    assert lines[0]["arguments"] == {"folder_id": "0", "limit": 2} and lines[0]["time"].endswith("+00:00")


@pytest.mark.anyio
async def test_stop_and_start_on_the_same_port(emu: Emulator) -> None:
    url = emu.url
    async with connect(emu) as client:
        before = await call(client, "list_folder_content_by_folder_id", folder_id="0")
        emu.stop()
        assert not emu.running
        with pytest.raises(httpx2.ConnectError):
            httpx2.get(f"{emu.base_url}/.well-known/oauth-protected-resource")
        emu.start()
        assert emu.url == url
        after = await call(client, "list_folder_content_by_folder_id", folder_id="0")  # stateless: carries on
    assert after == before


@pytest.mark.anyio
async def test_eras_and_sessions(root: Path) -> None:
    with running_emulator(root) as emu:
        async with connect(emu) as client:
            assert client.protocol_version == "2025-11-25"
        with pytest.raises(BaseException):  # noqa: B017 - a legacy server refuses a pinned 2026 client
            async with connect(emu, mode="2026-07-28") as client:
                await client.list_tools()
        emu.configure(era="dual")
        async with connect(emu) as client:
            assert client.protocol_version == "2026-07-28"
            assert (await call(client, "who_am_i"))["type"] == "user"
    with running_emulator(root, sessions="stateful") as emu:
        async with connect(emu) as client:
            assert (await call(client, "who_am_i"))["type"] == "user"
            emu.stop()
            emu.start()
            with pytest.raises(MCPError):  # the session died with the server
                await client.call_tool("who_am_i", {})


def test_switches_are_validated(emu: Emulator) -> None:
    with pytest.raises(ValueError, match="paging"):
        emu.configure(paging="cursor")
    with pytest.raises(ValueError, match="error_kinds"):
        emu.configure(error_kinds=["418"])
    with pytest.raises(TypeError, match="unknown"):
        emu.configure(colour="blue")
    assert emu.configure(error_kinds="429,tool500").error_kinds == ("429", "tool500")
