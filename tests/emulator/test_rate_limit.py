"""The `rate_limit` switch: Box's per-user budgets, 429 with Retry-After past them, the window frees."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from box_memory.emulator import Emulator
from box_memory.emulator.ratelimit import RateLimiter, kinds_of, rules
from box_memory.emulator.switches import Switches
from box_memory.emulator.testing import running_emulator

HEADERS = {"accept": "application/json, text/event-stream"}


def _post(emu: Emulator, tool: str, args: dict[str, Any] | None = None, token: str | None = None) -> Any:
    return httpx2.post(
        emu.url,
        headers={**HEADERS, "authorization": f"Bearer {token or emu.token}"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args or {}},
        },
        timeout=10,
    )


def test_defaults_are_boxs_published_figures() -> None:
    sw = Switches()
    assert not sw.rate_limit
    assert (sw.calls_per_minute, sw.uploads_per_minute, sw.searches_per_minute) == (1000, 240, 60)
    assert (sw.searches_per_second, sw.rate_window_s) == (6, 60.0)
    assert kinds_of("upload_file") == ("calls", "uploads")
    assert kinds_of("search_files_keyword") == ("calls", "searches", "searches_per_second")
    assert kinds_of("get_file_content") == ("calls",)


def test_budget_admits_exactly_n_then_429_with_retry_after_then_the_window_frees(root: Path) -> None:
    with running_emulator(root, rate_limit=True, calls_per_minute=5, rate_window_s=2) as emu:
        started = time.monotonic()
        assert [_post(emu, "who_am_i").status_code for _ in range(5)] == [200] * 5
        refused = _post(emu, "who_am_i")
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limit_exceeded"
        retry_after = int(refused.headers["retry-after"])
        left = 2 - (time.monotonic() - started)
        assert retry_after >= left and retry_after <= 2  # whole seconds until the window frees
        assert emu.calls[-1].outcome == "rate_limited" and emu.calls[-1].status == 429
        assert emu.counters["rate_limited"] == 1 and emu.counters["ok"] == 5
        time.sleep(retry_after)
        assert _post(emu, "who_am_i").status_code == 200  # waiting Retry-After is enough
        # Another user (token) has a budget of its own.
        emu.configure(tokens=[emu.token, "other-user"])
        assert _post(emu, "who_am_i", token="other-user").status_code == 200


def test_handshake_and_tools_list_are_not_counted(root: Path) -> None:
    with running_emulator(root, rate_limit=True, calls_per_minute=1, rate_window_s=30) as emu:
        headers = {**HEADERS, "authorization": f"Bearer {emu.token}"}
        for method in ("initialize", "tools/list"):
            params = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            }
            body = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": method,
                "params": params if method == "initialize" else {},
            }
            assert httpx2.post(emu.url, headers=headers, json=body, timeout=10).status_code == 200
        assert _post(emu, "who_am_i").status_code == 200
        assert _post(emu, "who_am_i").status_code == 429


def test_uploads_and_searches_have_budgets_of_their_own(root: Path) -> None:
    with running_emulator(
        root,
        rate_limit=True,
        calls_per_minute=100,
        uploads_per_minute=2,
        searches_per_minute=3,
        searches_per_second=100,
        rate_window_s=30,
    ) as emu:
        for n in range(2):
            args = {"folder_id": "0", "file_name": f"u{n}.md", "file_content": "x"}
            assert _post(emu, "upload_file", args).status_code == 200
        assert (
            _post(
                emu, "upload_file", {"folder_id": "0", "file_name": "u9.md", "file_content": "x"}
            ).status_code
            == 429
        )
        for _ in range(3):
            assert _post(emu, "search_files_keyword", {"query": "plan"}).status_code == 200
        assert _post(emu, "search_files_keyword", {"query": "plan"}).status_code == 429
        assert _post(emu, "get_file_details", {"file_id": "1"}).status_code == 200  # calls left


def test_limiter_on_a_deterministic_clock() -> None:
    now = [100.0]
    limiter = RateLimiter(clock=lambda: now[0])
    budget = rules(3, 0, 0, 0, 60.0)
    for t in (0.0, 10.0, 20.0):
        now[0] = 100.0 + t
        assert limiter.admit("u", "x", budget) is None
    now[0] = 130.5
    assert limiter.admit("u", "x", budget) == 30  # the call at 100.0 leaves at 160.0: 29.5 -> 30
    now[0] = 160.0
    assert limiter.admit("u", "x", budget) is None  # exactly when it leaves
    assert limiter.admit("u", "x", budget) == 10  # next leaves at 170.0
    # The per-second search rule scales with the window: 6 per (60 / 60) s.
    search = rules(1000, 0, 60, 6, 60.0)
    now[0] = 500.0
    assert all(limiter.admit("s", "search_files_keyword", search) is None for _ in range(6))
    assert limiter.admit("s", "search_files_keyword", search) == 1
    now[0] = 501.0
    assert limiter.admit("s", "search_files_keyword", search) is None


def test_rate_switches_are_validated(emu: Emulator) -> None:
    with pytest.raises(ValueError):
        emu.configure(calls_per_minute=-1)
    with pytest.raises(ValueError):
        emu.configure(rate_window_s=0)
    assert emu.configure(rate_limit="1", calls_per_minute="7").calls_per_minute == 7
