"""Faults: flaky Box (429/500), Box down, a wrong token, an expired token that must be refreshed."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from box_memory.box import credentials
from box_memory.emulator import Emulator
from tests.auth.fakeoauth import FakeBoxOAuth
from tests.cloud.conftest import Backend
from tests.conftest import Cli


@pytest.mark.slow
def test_writes_and_recalls_ride_out_a_fifth_of_calls_failing(cloud: Backend, emu: Emulator) -> None:
    emu.configure(error_rate=0.2, error_kinds=("429", "500", "tool429", "tool500"), retry_after_s=0, seed=11)
    ids = [
        cloud.data("write", f"We decided on option {n}.", "--title", f"Option {n}", "--tag", "flaky")["id"]
        for n in range(2)
    ]
    sup = cloud.data(
        "write", "We decided on option 3.", "--title", "Option 0", "--supersedes", ids[0], "--tag", "flaky"
    )
    hits = cloud.data("recall", "tag:flaky")["hits"]
    assert sorted(h["id"] for h in hits) == sorted([sup["id"], *ids[1:]])
    assert cloud.data("recall", ids[1])["hits"][0]["title"] == "Option 1"
    assert cloud.data("get", ids[0], "--history")["current_id"] == sup["id"]
    assert cloud.run("index-rebuild", "--check")["data"]["drift"] is False
    outcomes = Counter(c.outcome for c in emu.calls)
    faults = sum(n for o, n in outcomes.items() if o != "ok")
    assert faults >= 5, outcomes  # the faults really happened, and were retried
    assert outcomes["ok"] > faults


COMMANDS: list[tuple[str, ...]] = [
    ("recall", "anything"),
    ("write", "text", "--title", "Down"),
    ("get", "some-slug"),
    ("status",),
    ("index-rebuild",),
    ("index-rebuild", "--check"),
    ("companion", "files/report.pdf", "--check"),
    ("companion", "--stale"),
    ("team", "ls"),
    ("team", "create", "ops"),
]


def test_box_down_every_command_exits_4_with_one_line(cloud: Backend, emu: Emulator, cli: Cli) -> None:
    emu.stop()
    runs = [cli(*args, "-w", cloud.spec) for args in COMMANDS]
    runs.append(cli("mcp-check"))
    runs.append(cli("init", "again", "--parent", "0"))
    for args, res in zip([*COMMANDS, ("mcp-check",), ("init",)], runs, strict=True):
        assert res.exit_code == 4, (args, res.exit_code, res.output)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, (args, res.stderr)
        assert "not reachable" in lines[0] and emu.url in lines[0], (args, lines)
        assert "Traceback" not in res.output
    env = cloud.run("recall", "x", code=4)
    assert env["errors"][0]["code"] == "backend_unavailable"


def test_wrong_token_exits_4_and_is_never_printed(
    cloud: Backend, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "wrong-token-Zq83kLm29xPq"  # the point of the test
    monkeypatch.setenv("BOX_ACCESS_TOKEN", secret)
    seen = []
    for args in (("recall", "x", "-w", cloud.spec), ("write", "t", "--title", "T", "-w", cloud.spec)):
        for extra in ((), ("--json",)):
            res = cli(*args, *extra)
            assert res.exit_code == 4, res.output
            seen.append(res.stdout + res.stderr)
    for extra in ((), ("--json",)):
        res = cli("mcp-check", *extra)
        assert res.exit_code == 4
        seen.append(res.stdout + res.stderr)
    assert json.loads(seen[1])["errors"][0]["code"] in ("auth_failed", "auth_env_token_rejected")
    for text in seen:
        assert secret not in text and "Zq83kLm29xPq" not in text
    assert "401" in seen[0] or "rejected" in seen[0]


@pytest.fixture
def oauth(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBoxOAuth]:
    server = FakeBoxOAuth().start()
    monkeypatch.delenv("BOX_ACCESS_TOKEN", raising=False)
    monkeypatch.setenv("BOX_OAUTH_TOKEN_URL", server.base_url + "/token")
    monkeypatch.setenv("BOX_OAUTH_REVOKE_URL", server.base_url + "/revoke")
    try:
        yield server
    finally:
        server.stop()


def _login(oauth: FakeBoxOAuth, emu: Emulator, *, expired: bool) -> dict[str, Any]:
    """Store a pair as a login would; the emulator accepts only tokens minted by a later refresh."""
    pair = oauth.issue_pair()
    credentials.save_credentials(
        credentials.Credentials(
            access_token=pair["access_token"],
            refresh_token=pair["refresh_token"],
            expires_at=time.time() + (-60 if expired else 3600),
            client_id=oauth.client_id,
            client_secret=oauth.client_secret,
            token_url=oauth.base_url + "/token",
        )
    )
    mint = oauth._new_pair

    def mint_and_accept() -> dict[str, Any]:
        fresh = mint()
        emu.set_tokens([fresh["access_token"]])
        return fresh

    oauth._new_pair = mint_and_accept  # type: ignore[method-assign]
    emu.set_tokens(["not-yet-issued"])
    return pair


@pytest.mark.parametrize("expired", [True, False], ids=["expired-by-clock", "rejected-with-401"])
def test_expired_token_is_refreshed_once_and_the_rotation_persisted(
    cloud: Backend, emu: Emulator, oauth: FakeBoxOAuth, expired: bool
) -> None:
    old = _login(oauth, emu, expired=expired)
    res = cloud.run("recall", "anything")
    assert res["exit_code"] == 0
    assert len(oauth.refresh_requests()) == 1
    assert oauth.refresh_requests()[0]["refresh_token"] == old["refresh_token"]
    saved = credentials.load_credentials()
    assert saved is not None
    assert saved.refresh_token != old["refresh_token"] and saved.access_token in emu.tokens
    assert oauth.refresh_tokens[old["refresh_token"]] is True  # spent: single use
    cloud.data("write", "after the refresh", "--title", "Refreshed")
    assert len(oauth.refresh_requests()) == 1  # the new token is simply used
    status = cloud.cli.json("auth", "status")["data"]
    assert status["logged_in"] is True and status["has_refresh"] is True
    blob = json.dumps(status)
    assert saved.access_token not in blob and str(saved.refresh_token) not in blob
