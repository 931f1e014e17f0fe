"""Every auth test runs against the local fake authorization server with its own BOX_MEMORY_HOME."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.auth.fakeoauth import FakeBoxOAuth


@pytest.fixture
def fake() -> Iterator[FakeBoxOAuth]:
    server = FakeBoxOAuth().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch, fake: FakeBoxOAuth) -> None:
    monkeypatch.setenv("BOX_MEMORY_HOME", str(tmp_path / "home"))
    for name in ("BOX_ACCESS_TOKEN", "BOX_CLIENT_ID", "BOX_CLIENT_SECRET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BOX_OAUTH_AUTHORIZE_URL", fake.base_url + "/authorize")
    monkeypatch.setenv("BOX_OAUTH_TOKEN_URL", fake.base_url + "/token")
    monkeypatch.setenv("BOX_OAUTH_REVOKE_URL", fake.base_url + "/revoke")
