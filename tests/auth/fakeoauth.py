"""A small, real OAuth 2.0 authorization server on 127.0.0.1 that stands in for Box's.

Box's own authorization and token servers cannot be run here, so this one implements the parts
box-memory relies on, with Box's rules: /authorize (client id, loopback redirect URI, PKCE S256,
state), /token (authorization_code with PKCE verification, codes single use and short lived;
refresh_token with rotation, each refresh token single use -> invalid_grant on reuse) and
/revoke (recorded). Switches let a test make it misbehave the way a real browser/server might.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str
    expires_at: float
    used: bool = False


@dataclass
class FakeBoxOAuth:
    client_id: str = "fakeclientid0001"
    client_secret: str = "fake-client-secret-value"
    code_ttl: float = 30.0
    expires_in: int = 3600
    refresh_delay: float = 0.0
    # Switches: "ok" | "deny" (access_denied) | "wrong_state" | "tamper_challenge"
    authorize_mode: str = "ok"
    echo_token_in_errors: bool = False

    codes: dict[str, _Code] = field(default_factory=dict)
    refresh_tokens: dict[str, bool] = field(default_factory=dict)  # token -> used
    access_tokens: set[str] = field(default_factory=set)
    issued_codes: list[str] = field(default_factory=list)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    revoked: list[dict[str, str]] = field(default_factory=list)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeBoxOAuth:
        fake = self

        class Handler(_Handler):
            server_state = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ------------------------------------------------------------------ helpers for tests
    def issue_pair(self) -> dict[str, Any]:
        """Mint a token pair directly (as if a login had happened earlier)."""
        with self._lock:
            return self._new_pair()

    def refresh_requests(self) -> list[dict[str, str]]:
        return [r for r in self.token_requests if r.get("grant_type") == "refresh_token"]

    def _new_pair(self) -> dict[str, Any]:
        access = "AT-" + secrets.token_urlsafe(24)
        refresh = "RT-" + secrets.token_urlsafe(24)
        self.access_tokens.add(access)
        self.refresh_tokens[refresh] = False
        return {
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": self.expires_in,
            "token_type": "bearer",
            "restricted_to": [],
        }

    # ------------------------------------------------------------------ endpoints
    def authorize(self, q: dict[str, str]) -> tuple[int, dict[str, str], str]:
        self.authorize_requests.append(q)
        redirect_uri = q.get("redirect_uri", "")
        parts = urllib.parse.urlsplit(redirect_uri)
        problems = []
        if q.get("response_type") != "code":
            problems.append("response_type")
        if q.get("client_id") != self.client_id:
            problems.append("client_id")
        if parts.scheme != "http" or parts.hostname != "127.0.0.1" or parts.path != "/oauth/callback":
            problems.append("redirect_uri")
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            problems.append("pkce")
        if not q.get("state"):
            problems.append("state")
        if problems:
            return 400, {}, "bad authorize request: " + ", ".join(problems)
        state = q["state"]
        if self.authorize_mode == "deny":
            params = {"error": "access_denied", "error_description": "The user denied access", "state": state}
        else:
            code = secrets.token_urlsafe(16)
            challenge = q["code_challenge"]
            if self.authorize_mode == "tamper_challenge":
                challenge = challenge[::-1]  # as if the challenge were swapped in transit
            with self._lock:
                self.codes[code] = _Code(self.client_id, redirect_uri, challenge, time.time() + self.code_ttl)
                self.issued_codes.append(code)
            if self.authorize_mode == "wrong_state":
                state = "not-" + state
            params = {"code": code, "state": state}
        return 302, {"Location": f"{redirect_uri}?{urllib.parse.urlencode(params)}"}, ""

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.token_requests.append(form)
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return 400, {"error": "invalid_client", "error_description": "The client credentials are invalid"}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            with self._lock:
                code = self.codes.get(form.get("code", ""))
                if code is None or code.used:
                    return 400, {
                        "error": "invalid_grant",
                        "error_description": "Auth code doesn't exist or is invalid for the client",
                    }
                code.used = True  # single use, even when the rest of the request is wrong
                if time.time() > code.expires_at:
                    return 400, {
                        "error": "invalid_grant",
                        "error_description": "The authorization code has expired",
                    }
                if form.get("redirect_uri") != code.redirect_uri:
                    return 400, {"error": "invalid_grant", "error_description": "redirect_uri mismatch"}
                verifier = form.get("code_verifier", "")
                digest = hashlib.sha256(verifier.encode()).digest()
                expected = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
                if not secrets.compare_digest(expected, code.challenge):
                    return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
                return 200, self._new_pair()
        if grant == "refresh_token":
            token = form.get("refresh_token", "")
            with self._lock:
                used = self.refresh_tokens.get(token)
                if used is None or used:
                    desc = "Refresh token has expired"
                    if self.echo_token_in_errors:
                        desc += f" (refresh_token {token})"
                    return 400, {"error": "invalid_grant", "error_description": desc}
                self.refresh_tokens[token] = True
            if self.refresh_delay:
                time.sleep(self.refresh_delay)  # widen the window in which a racing refresh would collide
            with self._lock:
                return 200, self._new_pair()
        return 400, {"error": "unsupported_grant_type", "error_description": str(grant)}

    def revoke(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.revoked.append(form)
            self.refresh_tokens.pop(form.get("token", ""), None)
            self.access_tokens.discard(form.get("token", ""))
        return 200, {}


class _Handler(BaseHTTPRequestHandler):
    server_state: FakeBoxOAuth

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(
        self, status: int, body: bytes, headers: dict[str, str] | None = None, ctype: str = "application/json"
    ) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        return {k: v[0] for k, v in urllib.parse.parse_qs(raw, keep_blank_values=True).items()}

    def do_GET(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        if parts.path != "/authorize":
            self._reply(404, b"{}")
            return
        q = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
        status, headers, text = self.server_state.authorize(q)
        self._reply(status, text.encode(), headers, "text/plain")

    def do_POST(self) -> None:
        parts = urllib.parse.urlsplit(self.path)
        form = self._form()
        if parts.path == "/token":
            status, body = self.server_state.token(form)
        elif parts.path == "/revoke":
            status, body = self.server_state.revoke(form)
        else:
            status, body = 404, {}
        self._reply(status, json.dumps(body).encode())
