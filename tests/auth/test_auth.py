"""Box OAuth end to end against the local fake authorization server (tests/auth/fakeoauth.py)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

import httpx2
import pytest

from box_memory.box import auth, credentials, oauth
from box_memory.errors import AuthError, InvalidInput
from box_memory.paths import user_dirs
from tests.auth.fakeoauth import FakeBoxOAuth

REPO = Path(__file__).resolve().parents[2]


class Browser:
    """Plays the user's browser: follows the authorize redirect to the loopback callback."""

    def __init__(self, *, first_get: str | None = None) -> None:
        self.url: str | None = None
        self.final: httpx2.Response | None = None
        self.first_get = first_get

    def __call__(self, url: str) -> None:
        self.url = url
        if self.first_get:
            redirect = self.params["redirect_uri"]
            stray = urllib.parse.urljoin(redirect, self.first_get)
            assert httpx2.get(stray).status_code == 404
        self.final = httpx2.get(url, follow_redirects=True, timeout=10)

    @property
    def params(self) -> dict[str, str]:
        assert self.url
        return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.url).query))


def do_login(fake: FakeBoxOAuth, browser: Browser | None = None, **kw) -> credentials.AuthStatus:
    return oauth.login(
        fake.client_id, fake.client_secret, port=0, open_browser=False, on_url=browser or Browser(), **kw
    )


def assert_clean(exc: BaseException, *secrets: str | None) -> None:
    """The error says nothing secret, in its message or its repr, and chains nothing."""
    for s in secrets:
        if s:
            assert s not in str(exc)
            assert s not in repr(exc)
    assert exc.__cause__ is None


def creds_file() -> Path:
    return user_dirs().credentials_file


def stored() -> dict:
    return json.loads(creds_file().read_text())


def fake_secrets(fake: FakeBoxOAuth) -> list[str]:
    return [fake.client_secret, *fake.issued_codes, *fake.refresh_tokens, *fake.access_tokens]


# --------------------------------------------------------------------------- login


def test_login_happy_path(fake: FakeBoxOAuth) -> None:
    browser = Browser(first_get="/favicon.ico")  # a stray request is ignored, the login goes on
    st = do_login(fake, browser)

    q = browser.params
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43
    assert q["state"] and q["scope"] == "root_readwrite ai.readwrite"
    port = urllib.parse.urlsplit(q["redirect_uri"]).port
    assert q["redirect_uri"] == f"http://127.0.0.1:{port}/oauth/callback" and port

    assert browser.final is not None and browser.final.status_code == 200
    page = browser.final.text
    assert "close this tab" in page
    assert fake.issued_codes[0] not in page

    # the token request carried the PKCE verifier and the same redirect URI
    (req,) = fake.token_requests
    assert req["grant_type"] == "authorization_code" and req["redirect_uri"] == q["redirect_uri"]
    assert 43 <= len(req["code_verifier"]) <= 128

    path = creds_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    data = stored()
    assert data["access_token"] in fake.access_tokens
    assert data["refresh_token"] in fake.refresh_tokens
    assert data["client_id"] == fake.client_id and data["client_secret"] == fake.client_secret
    assert data["token_url"] == fake.base_url + "/token"
    assert data["expires_at"].endswith("Z")
    assert not list(path.parent.glob("*.tmp"))

    assert st.logged_in and st.source == "store" and st.has_refresh and st.expired is False
    assert st.client_id == fake.client_id[:4] + "…"
    assert st.scopes == ["root_readwrite", "ai.readwrite"]
    dumped = json.dumps(st.to_dict()) + repr(st)
    for s in [*fake_secrets(fake), fake.client_id, req["code_verifier"]]:
        assert s not in dumped


def test_login_reads_client_from_env(fake: FakeBoxOAuth, monkeypatch) -> None:
    monkeypatch.setenv("BOX_CLIENT_ID", fake.client_id)
    monkeypatch.setenv("BOX_CLIENT_SECRET", fake.client_secret)
    st = oauth.login(port=0, open_browser=False, on_url=Browser())
    assert st.logged_in and stored()["client_id"] == fake.client_id


def test_login_without_client_is_a_usage_error() -> None:
    with pytest.raises(InvalidInput):
        oauth.login(port=0, open_browser=False, on_url=Browser())


def test_state_mismatch_is_refused_without_exchange(fake: FakeBoxOAuth) -> None:
    fake.authorize_mode = "wrong_state"
    browser = Browser()
    with pytest.raises(AuthError) as ei:
        do_login(fake, browser)
    assert ei.value.code == "auth_state_mismatch"
    assert fake.token_requests == []
    assert not creds_file().exists()
    assert browser.final is not None and "close this tab" in browser.final.text
    assert fake.issued_codes[0] not in browser.final.text
    assert_clean(ei.value, *fake_secrets(fake), browser.params["state"])


def test_access_denied(fake: FakeBoxOAuth) -> None:
    fake.authorize_mode = "deny"
    with pytest.raises(AuthError) as ei:
        do_login(fake)
    assert ei.value.code == "auth_denied" and "denied" in str(ei.value)
    assert fake.token_requests == [] and not creds_file().exists()
    assert ei.value.exit_code == 4


def test_pkce_verifier_mismatch_is_rejected(fake: FakeBoxOAuth) -> None:
    fake.authorize_mode = "tamper_challenge"
    with pytest.raises(AuthError) as ei:
        do_login(fake)
    assert ei.value.code == "auth_token_refused"
    assert "invalid_grant" in str(ei.value) and "PKCE" in str(ei.value)
    (req,) = fake.token_requests
    assert_clean(ei.value, *fake_secrets(fake), req["code_verifier"], req["code"])
    assert not creds_file().exists()


def test_login_times_out_and_frees_the_port(fake: FakeBoxOAuth) -> None:
    seen: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(AuthError) as ei:
        oauth.login(
            fake.client_id, fake.client_secret, port=0, open_browser=False, timeout=0.3, on_url=seen.append
        )
    assert ei.value.code == "auth_timeout"
    assert time.monotonic() - t0 < 5
    redirect = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(seen[0]).query))["redirect_uri"]
    port = urllib.parse.urlsplit(redirect).port
    with socket.socket() as s:  # the callback server is gone
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
    assert_clean(ei.value, fake.client_secret)


def test_busy_callback_port_is_a_clear_error(fake: FakeBoxOAuth) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(AuthError) as ei:
            oauth.login(fake.client_id, fake.client_secret, port=port, open_browser=False, timeout=1)
    assert ei.value.code == "auth_callback_port" and str(port) in str(ei.value)


def test_callback_server_binds_loopback_only(fake: FakeBoxOAuth, monkeypatch) -> None:
    addresses: list[tuple] = []
    real = oauth._callback_server

    def spy(port, state):
        server, result = real(port, state)
        addresses.append(server.server_address)
        return server, result

    monkeypatch.setattr(oauth, "_callback_server", spy)
    do_login(fake)
    assert addresses and addresses[0][0] == "127.0.0.1"


def test_fake_server_codes_are_single_use(fake: FakeBoxOAuth) -> None:
    do_login(fake)
    replay = dict(fake.token_requests[0])
    r = httpx2.post(fake.base_url + "/token", data=replay)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


# --------------------------------------------------------------------------- refresh


def test_refresh_before_expiry_rotates_and_persists(fake: FakeBoxOAuth) -> None:
    fake.expires_in = 60  # inside the 5-minute margin
    do_login(fake)
    first = stored()
    src = auth.TokenSource()
    token = src.access_token()
    after = stored()
    assert token == after["access_token"] != first["access_token"]
    assert after["refresh_token"] != first["refresh_token"]
    assert fake.refresh_tokens[first["refresh_token"]] is True  # the old one is spent
    assert fake.refresh_tokens[after["refresh_token"]] is False
    assert stat.S_IMODE(creds_file().stat().st_mode) == 0o600
    assert len(fake.refresh_requests()) == 1
    req = fake.refresh_requests()[0]
    assert req["client_id"] == fake.client_id and req["client_secret"] == fake.client_secret


def test_fresh_token_is_not_refreshed(fake: FakeBoxOAuth) -> None:
    do_login(fake)
    token = auth.TokenSource().access_token()
    assert token == stored()["access_token"] and fake.refresh_requests() == []


def test_reused_refresh_token_is_rejected_cleanly(fake: FakeBoxOAuth) -> None:
    fake.expires_in = 60
    fake.echo_token_in_errors = True  # a server that echoes the token must not leak it through us
    do_login(fake)
    stale_copy = creds_file().read_text()
    old = json.loads(stale_copy)
    auth.TokenSource().access_token()  # rotates: the old refresh token is now spent
    creds_file().write_text(stale_copy)  # e.g. a restored backup holding the spent token
    with pytest.raises(AuthError) as ei:
        auth.TokenSource().access_token()
    assert ei.value.code == "auth_refresh_rejected"
    assert "Box refresh token rejected - run `box-memory auth login`" in str(ei.value)
    assert_clean(ei.value, *fake_secrets(fake), old["refresh_token"], old["access_token"])


def test_refresh_after_401_and_a_second_client_reuses_it(fake: FakeBoxOAuth) -> None:
    do_login(fake)
    a, b = auth.TokenSource(), auth.TokenSource()
    t1 = a.access_token()
    assert b.access_token() == t1
    t2 = a.refresh()  # Box said 401 to a
    assert t2 != t1 and len(fake.refresh_requests()) == 1
    assert b.refresh() == t2  # b got a 401 for t1 too, but a already rotated
    assert len(fake.refresh_requests()) == 1


def test_concurrent_refresh_threads_spend_one_refresh_token(fake: FakeBoxOAuth) -> None:
    fake.expires_in = 60
    fake.refresh_delay = 0.3
    do_login(fake)
    fake.expires_in = 3600
    barrier = threading.Barrier(4)
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        src = auth.TokenSource()
        barrier.wait()
        try:
            results.append(src.access_token())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert errors == []
    assert len(fake.refresh_requests()) == 1
    assert len(set(results)) == 1 and results[0] == stored()["access_token"]


def test_concurrent_refresh_processes_spend_one_refresh_token(fake: FakeBoxOAuth) -> None:
    fake.expires_in = 60
    fake.refresh_delay = 0.5
    do_login(fake)
    fake.expires_in = 3600
    go = time.time() + 1.5  # both processes start refreshing at the same instant
    code = (
        "import time,sys;from box_memory.box.auth import TokenSource;"
        f"time.sleep(max(0,{go}-time.time()));sys.stdout.write(TokenSource().access_token())"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=30) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    tokens = {o[0].decode() for o in outs}
    assert len(fake.refresh_requests()) == 1
    assert tokens == {stored()["access_token"]}


def test_unpersisted_pair_is_never_used(fake: FakeBoxOAuth, monkeypatch) -> None:
    fake.expires_in = 60
    do_login(fake)
    before = stored()

    def broken(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(auth, "save_credentials", broken)
    with pytest.raises(AuthError) as ei:
        auth.TokenSource().access_token()
    assert ei.value.code == "credentials_unwritable" and "auth login" in str(ei.value)
    assert_clean(ei.value, *fake_secrets(fake))
    assert stored() == before


def test_manual_token_without_refresh_expires(fake: FakeBoxOAuth) -> None:
    st = oauth.store_token("manual-token-value-1234", expires_in=3600)
    assert st.logged_in and not st.has_refresh and st.source == "store"
    assert auth.TokenSource().access_token() == "manual-token-value-1234"
    with pytest.raises(AuthError) as ei:
        auth.TokenSource().refresh()
    assert_clean(ei.value, "manual-token-value-1234")

    oauth.store_token("expired-token-value-5678", expires_in=0)
    assert credentials.status().expired is True and not credentials.status().logged_in
    with pytest.raises(AuthError) as ei:
        auth.TokenSource().access_token()
    assert ei.value.code == "auth_expired"
    assert_clean(ei.value, "expired-token-value-5678")
    with pytest.raises(InvalidInput):
        oauth.store_token("two words")
    with pytest.raises(InvalidInput):
        oauth.store_token("")


def test_not_logged_in(fake: FakeBoxOAuth) -> None:
    st = credentials.status()
    assert not st.logged_in and st.source == "none"
    with pytest.raises(AuthError) as ei:
        auth.TokenSource().access_token()
    assert ei.value.code == "not_logged_in" and "auth login" in str(ei.value)


# --------------------------------------------------------------------------- env override


def test_env_access_token_overrides_store(fake: FakeBoxOAuth, monkeypatch) -> None:
    do_login(fake)
    monkeypatch.setenv("BOX_ACCESS_TOKEN", "env-token-abcdef")
    src = auth.TokenSource()
    assert src.access_token() == "env-token-abcdef" and src.source == "env"
    st = credentials.status()
    assert st.source == "env" and st.logged_in and "env-token-abcdef" not in repr(st)
    with pytest.raises(AuthError) as ei:
        src.refresh()
    assert ei.value.code == "auth_env_token_rejected" and "BOX_ACCESS_TOKEN" in str(ei.value)
    assert_clean(ei.value, "env-token-abcdef")
    assert fake.refresh_requests() == []


def test_env_access_token_needs_no_store(monkeypatch) -> None:
    monkeypatch.setenv("BOX_ACCESS_TOKEN", "env-only-token-1")
    assert auth.TokenSource().access_token() == "env-only-token-1"
    assert not creds_file().exists()


# --------------------------------------------------------------------------- logout


def test_logout_revokes_and_deletes(fake: FakeBoxOAuth) -> None:
    do_login(fake)
    data = stored()
    res = oauth.logout()
    assert res.removed and res.warnings == []
    assert res.revoked == ["refresh_token", "access_token"]
    assert [r["token"] for r in fake.revoked] == [data["refresh_token"], data["access_token"]]
    assert all(r["client_id"] == fake.client_id for r in fake.revoked)
    assert not creds_file().exists()
    assert credentials.status().source == "none"


def test_logout_survives_network_failure(fake: FakeBoxOAuth, monkeypatch) -> None:
    do_login(fake)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]  # nothing listens here once the socket closes
    monkeypatch.setenv("BOX_OAUTH_REVOKE_URL", f"http://127.0.0.1:{dead}/revoke")
    res = oauth.logout()
    assert res.removed and res.revoked == [] and len(res.warnings) == 2
    assert not creds_file().exists()
    text = " ".join(res.warnings)
    for s in fake_secrets(fake):
        assert s not in text


def test_logout_without_revoke_and_when_logged_out(fake: FakeBoxOAuth) -> None:
    do_login(fake)
    res = oauth.logout(revoke=False)
    assert res.removed and fake.revoked == []
    assert oauth.logout().removed is False


# --------------------------------------------------------------------------- store and secrets


def test_load_tightens_file_mode_and_accepts_epoch(fake: FakeBoxOAuth) -> None:
    path = creds_file()
    path.parent.mkdir(parents=True)
    exp = time.time() + 7200
    path.write_text(json.dumps({"access_token": "tok-abcdef", "expires_at": exp, "scope": "root_readwrite"}))
    path.chmod(0o644)
    creds = credentials.load_credentials()
    assert creds is not None and abs(creds.expires_at - exp) < 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert credentials.status().expires_at.endswith("Z")


def test_corrupt_store_is_a_clean_error(fake: FakeBoxOAuth) -> None:
    path = creds_file()
    path.parent.mkdir(parents=True)
    path.write_text('{"access_token": "secret-in-a-broken-file"')
    with pytest.raises(AuthError) as ei:
        credentials.status()
    assert ei.value.code == "credentials_unreadable"
    assert_clean(ei.value, "secret-in-a-broken-file")
    assert oauth.logout().removed  # logout still cleans it up


def test_credentials_repr_hides_secrets() -> None:
    c = credentials.Credentials(
        access_token="AT-supersecret",
        refresh_token="RT-supersecret",
        client_id="abcdefgh",
        client_secret="CS-supersecret",
        expires_at=0,
    )
    for text in (repr(c), str(c), f"{c}", repr([c])):
        assert "supersecret" not in text and "abcdefgh" not in text


def test_redact() -> None:
    text = (
        'failed: {"access_token": "xyz987", "refresh_token":"rt111"} '
        "url=https://x/cb?code=c0de5&state=s Bearer abc.def-ghi and MYSECRETVALUE"
    )
    out = oauth.redact(text, "MYSECRETVALUE", None, "", "ab")
    for s in ("xyz987", "rt111", "c0de5", "abc.def-ghi", "MYSECRETVALUE"):
        assert s not in out
    assert "state=s" in out and "failed" in out and "error_code=" in oauth.redact("error_code=x")


def test_fallback_lock_is_exclusive_and_takes_over_stale(tmp_path) -> None:
    path = tmp_path / "creds.lock"
    first = credentials.FileLock(path, use_flock=False)
    first.acquire()
    with pytest.raises(AuthError) as ei:
        credentials.FileLock(path, timeout=0.1, use_flock=False).acquire()
    assert ei.value.code == "auth_lock_busy"
    old = time.time() - 600
    os.utime(path, (old, old))  # holder presumed dead
    second = credentials.FileLock(path, timeout=1, use_flock=False)
    second.acquire()
    second.release()
    assert not path.exists()


def test_flock_is_exclusive(tmp_path) -> None:
    path = tmp_path / "creds.lock"
    with credentials.FileLock(path, use_flock=True), pytest.raises(AuthError):
        credentials.FileLock(path, timeout=0.1, use_flock=True).acquire()
    with credentials.FileLock(path, timeout=0.1, use_flock=True):
        pass


def test_import_does_not_pull_in_httpx() -> None:
    code = "import sys, box_memory.box.auth; print(bool({'httpx', 'httpx2'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert out.stdout.strip() == "False"
