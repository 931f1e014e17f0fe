"""Box tokens in the system keychain where there is one, the 0600 file where there is none.

This machine (headless Linux) has no keychain, so the keychain is keyring's own extension point:
a backend subclassing `keyring.backend.KeyringBackend`, installed with `keyring.set_keyring` -
keyring's documented way to add a store, holding the secrets in this process. The code under test
calls keyring's public API exactly as it would call the macOS Keychain. The fallback runs with
keyring's own "no backend" (`keyring.backends.fail.Keyring`), what keyring finds here by itself.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

keyring = pytest.importorskip("keyring")
from keyring.backend import KeyringBackend  # noqa: E402
from keyring.backends import fail  # noqa: E402
from keyring.errors import PasswordDeleteError  # noqa: E402

from box_memory.box import auth  # noqa: E402
from box_memory.paths import user_dirs  # noqa: E402
from tests.auth.fakeoauth import FakeBoxOAuth  # noqa: E402
from tests.auth.test_auth import do_login  # noqa: E402
from tests.recall.test_imports import _modules  # noqa: E402

TOKEN = "kc-access-token-0123456789"


class InProcessKeychain(KeyringBackend):
    """A keyring backend keeping its secrets in a dict (keyring's extension point)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError("not found")


@pytest.fixture
def auto_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default choice: keychain where keyring finds one, else the file."""
    monkeypatch.delenv("BOX_MEMORY_CREDENTIALS_STORE", raising=False)


@pytest.fixture
def keychain(auto_store: None) -> Iterator[InProcessKeychain]:
    before = keyring.get_keyring()
    backend = InProcessKeychain()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(before)


@pytest.fixture
def no_keychain(auto_store: None) -> Iterator[None]:
    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(before)


def creds_file() -> Path:
    return user_dirs().credentials_file


def test_a_token_goes_to_the_keychain_and_status_says_so(cli: Any, keychain: InProcessKeychain) -> None:
    stored = cli.json("auth", "token", "--token-stdin", input=TOKEN + "\n")
    assert TOKEN not in json.dumps(stored)
    assert not creds_file().exists()  # nothing in plain text on disk
    [(service, _account)] = keychain.entries
    assert service == "box-memory"
    assert json.loads(next(iter(keychain.entries.values())))["access_token"] == TOKEN

    st = cli.json("auth", "status")["data"]
    assert st["store"] == "keychain" and st["keychain"] == InProcessKeychain.name
    assert st["credentials_file"] is None and st["logged_in"] is True
    text = cli("auth", "status").stdout
    assert "system keychain" in text and TOKEN not in text
    assert auth.TokenSource().access_token() == TOKEN
    assert auth.TokenSource().source == "store"

    out = cli.json("auth", "logout", "--no-revoke")["data"]
    assert out["removed"] is True and keychain.entries == {}
    assert cli.json("auth", "status")["data"]["logged_in"] is False


def test_a_refreshed_pair_is_saved_back_to_the_keychain(
    fake: FakeBoxOAuth, keychain: InProcessKeychain
) -> None:
    fake.expires_in = 60  # inside the refresh margin
    do_login(fake)
    assert not creds_file().exists()
    first = json.loads(next(iter(keychain.entries.values())))
    token = auth.TokenSource().access_token()
    after = json.loads(next(iter(keychain.entries.values())))
    assert token == after["access_token"] != first["access_token"]
    assert after["refresh_token"] != first["refresh_token"]
    assert not creds_file().exists()


def test_without_a_keychain_the_token_stays_in_the_0600_file(cli: Any, no_keychain: None) -> None:
    cli.json("auth", "token", "--token-stdin", input=TOKEN + "\n")
    path = creds_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["access_token"] == TOKEN
    st = cli.json("auth", "status")["data"]
    assert st["store"] == "file" and st["keychain"] is None and st["credentials_file"] == str(path)
    assert "no system keychain here" in cli("auth", "status").stdout


def test_a_file_from_before_moves_into_the_keychain(
    cli: Any, monkeypatch: pytest.MonkeyPatch, keychain: InProcessKeychain
) -> None:
    monkeypatch.setenv("BOX_MEMORY_CREDENTIALS_STORE", "file")
    cli.json("auth", "token", "--token-stdin", input=TOKEN + "\n")
    assert creds_file().exists() and keychain.entries == {}
    monkeypatch.delenv("BOX_MEMORY_CREDENTIALS_STORE")
    assert auth.TokenSource().access_token() == TOKEN  # read once: moved
    assert not creds_file().exists()
    assert cli.json("auth", "status")["data"]["store"] == "keychain"


def test_asking_for_a_keychain_where_there_is_none_is_one_clear_line(
    cli: Any, monkeypatch: pytest.MonkeyPatch, no_keychain: None
) -> None:
    monkeypatch.setenv("BOX_MEMORY_CREDENTIALS_STORE", "keychain")
    env = cli.json("auth", "token", "--token-stdin", input=TOKEN + "\n", code=4)
    assert "no system keychain" in env["errors"][0]["message"]
    assert not creds_file().exists()
    monkeypatch.setenv("BOX_MEMORY_CREDENTIALS_STORE", "vault")
    env = cli.json("auth", "status", code=2)
    assert "BOX_MEMORY_CREDENTIALS_STORE must be keychain or file" in env["errors"][0]["message"]


def test_local_recall_and_write_never_import_keyring(ws: Path, tmp_path: Path, auto_store: None) -> None:
    wrote = _modules(tmp_path, "write", "Tokens expire hourly.", "--title", "Expiry", "-w", str(ws), "--json")
    found = _modules(tmp_path, "recall", "tokens", "-w", str(ws), "--json")
    assert "keyring" not in wrote | found
