"""Cost per command: every session start and tools/list is a billed call under custom credentials.

The emulator counts each JSON-RPC method it receives (`rpc:initialize`, `rpc:tools/list`,
`rpc:tools/call`), so these tests see exactly what a command would be billed.
"""

from __future__ import annotations

from typing import Any

import pytest

from box_memory.emulator import Emulator
from box_memory.store.cloud import Lease, close_all, open_cloud_store
from tests.cloud.conftest import TOKEN, Backend


def _billed(emu: Emulator) -> dict[str, int]:
    c = emu.counters
    return {k: c.get(f"rpc:{k}", 0) for k in ("initialize", "tools/list", "tools/call")}


def test_the_catalogue_is_read_once_per_url_and_credentials(
    make: Any, emu: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    cloud: Backend = make("cloud")
    cloud.data("write", "We decided to use JWT.", "--title", "Auth tokens")
    emu.reset_calls()
    cloud.data("recall", "JWT")
    assert _billed(emu)["tools/list"] == 0
    assert _billed(emu)["initialize"] == 1  # one session for the whole command
    emu.set_tokens([TOKEN, "another-user-token"])
    monkeypatch.setenv("BOX_ACCESS_TOKEN", "another-user-token")
    emu.reset_calls()
    cloud.data("recall", "JWT")
    assert _billed(emu)["tools/list"] == 1  # other credentials: their own catalogue
    monkeypatch.setenv("BOX_MEMORY_CATALOGUE_CACHE", "0")
    emu.reset_calls()
    cloud.data("recall", "JWT")
    assert _billed(emu)["tools/list"] == 1


def test_every_command_opens_one_session(make: Any, emu: Emulator) -> None:
    emu.reset_calls()
    cloud: Backend = make("cloud")  # init: folders, config, template, rollup
    assert _billed(emu)["initialize"] == 1
    for args in (
        ("write", "Redis caches sessions.", "--title", "Session cache"),
        ("status",),
        ("recall", "Redis"),
    ):
        emu.reset_calls()
        cloud.data(*args)
        assert _billed(emu)["initialize"] == 1, args


def test_the_lease_renews_at_half_its_stale_time(make: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cloud: Backend = make("cloud")
    monkeypatch.setenv("BOX_MEMORY_LOCK_STALE_S", "30")
    monkeypatch.delenv("BOX_MEMORY_LOCK_RENEW_S", raising=False)
    store = open_cloud_store(cloud.spec.removeprefix("box:"))
    try:
        assert Lease(store, writer="t", skill="t").renew_every == 15.0  # was 10 s: a Box version each
        monkeypatch.setenv("BOX_MEMORY_LOCK_RENEW_S", "2")
        assert Lease(store, writer="t", skill="t").renew_every == 2.0  # an explicit setting wins
    finally:
        close_all()
