"""Box OAuth 2.0: the endpoints, login by authorization code + PKCE through a loopback redirect,
an access token stored as given (`auth token`), the token endpoint (also for refreshes) and
logout with revocation at Box.

httpx2 (the HTTP stack the mcp SDK itself uses) is imported inside the functions that talk to Box
so that importing this module stays cheap.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import math
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from box_memory import settings
from box_memory.box.credentials import (
    LOGIN_HINT,
    AuthStatus,
    Credentials,
    auth_error,
    credentials_path,
    delete_credentials,
    load_credentials,
    save_credentials,
    status,
    valid_time,
)
from box_memory.errors import AuthError, InvalidInput
from box_memory.redaction import redact
from box_memory.result import Result

__all__ = [
    "DEFAULT_AUTHORIZE_URL",
    "DEFAULT_REVOKE_URL",
    "DEFAULT_SCOPES",
    "DEFAULT_TOKEN_URL",
    "LogoutResult",
    "credentials_from_response",
    "login",
    "login_result",
    "logout",
    "revoke_url",
    "store_token",
    "token_request",
    "token_url",
]

DEFAULT_AUTHORIZE_URL = "https://account.box.com/api/oauth2/authorize"
DEFAULT_TOKEN_URL = "https://api.box.com/oauth2/token"  # noqa: S105 - names and URLs, not secrets
DEFAULT_REVOKE_URL = "https://api.box.com/oauth2/revoke"
DEFAULT_SCOPES = "root_readwrite ai.readwrite"
DEFAULT_PORT = 18765
CALLBACK_PATH = "/oauth/callback"

ENV_ACCESS_TOKEN = settings.ACCESS_TOKEN
ENV_CLIENT_ID = settings.CLIENT_ID
ENV_CLIENT_SECRET = settings.CLIENT_SECRET

HTTP_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class LogoutResult:
    removed: bool
    revoked: list[str] = field(default_factory=list)  # "refresh_token", "access_token"
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def result(self) -> Result:
        """The `auth logout` service result: the data without the warnings, which it reports."""
        return Result({"removed": self.removed, "revoked": list(self.revoked)}, warnings=list(self.warnings))


ARGV_SECRET_WARNING = (
    "--client-secret on the command line is visible to other processes and kept in shell "  # noqa: S105 - a warning text
    "history; set BOX_CLIENT_SECRET or let auth login prompt for it"
)


def login_result(status: AuthStatus, *, secret_on_command_line: bool) -> Result:
    """The `auth login` service result: the new status, and a warning when the client secret came
    as a command-line argument (other users see it in `ps` and /proc, shells keep it in history)."""
    return Result(status.to_dict(), warnings=[ARGV_SECRET_WARNING] if secret_on_command_line else [])


# --------------------------------------------------------------------------- endpoints


def authorize_url() -> str:
    return settings.oauth_authorize_url() or DEFAULT_AUTHORIZE_URL


def token_url(creds: Credentials | None = None) -> str:
    """Env override first (tests, proxies), then the endpoint the tokens came from."""
    return settings.oauth_token_url() or (creds.token_url if creds else None) or DEFAULT_TOKEN_URL


def revoke_url(creds: Credentials | None = None) -> str:
    return settings.oauth_revoke_url() or (creds.revoke_url if creds else None) or DEFAULT_REVOKE_URL


# --------------------------------------------------------------------------- token endpoint


def token_request(url: str, form: dict[str, str], *, what: str) -> dict[str, Any]:
    """POST a form to the token endpoint; return the JSON answer or raise a redacted AuthError."""
    import httpx2

    hide = tuple(v for k, v in form.items() if k != "grant_type")
    try:
        resp = httpx2.post(url, data=form, headers={"Accept": "application/json"}, timeout=HTTP_TIMEOUT_S)
    except httpx2.HTTPError as exc:
        raise auth_error(
            f"Cannot reach the Box token endpoint {url} for {what}: {type(exc).__name__}: {exc}",
            *hide,
            code="auth_network",
        ) from None
    try:
        body = resp.json()
    except ValueError:
        body = None
    if resp.status_code != 200 or not isinstance(body, dict) or "error" in body:
        err = body.get("error") if isinstance(body, dict) else None
        desc = body.get("error_description") if isinstance(body, dict) else None
        detail = f"{err}: {desc}" if err and desc else (err or f"HTTP {resp.status_code}")
        if err == "invalid_grant" and form.get("grant_type") == "refresh_token":
            raise auth_error(
                f"Box refresh token rejected - {LOGIN_HINT} ({detail})", *hide, code="auth_refresh_rejected"
            )
        raise auth_error(f"Box token endpoint refused {what}: {detail}", *hide, code="auth_token_refused")
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        raise auth_error(
            f"Box token endpoint answered {what} without an access token", *hide, code="auth_token_refused"
        )
    return body


def _expiry(now: float, expires_in: Any) -> float | None:
    """`now + expires_in` when that is a time `_iso` can write; None (unknown) for anything else
    the token endpoint may answer (NaN, 1e308, a negative or non-numeric value): the token is then
    used until Box refuses it, and refreshed after that 401."""
    if expires_in is None or isinstance(expires_in, bool):
        return None
    try:
        at = now + float(expires_in)
    except (TypeError, ValueError, OverflowError):
        return None
    return at if valid_time(at) and at >= now else None


def credentials_from_response(
    body: dict[str, Any],
    *,
    client_id: str | None,
    client_secret: str | None,
    token_url_: str,
    revoke_url_: str,
    scope: str | None,
    previous_refresh: str | None = None,
) -> Credentials:
    now = time.time()
    expires_at = _expiry(now, body.get("expires_in"))
    refresh = body.get("refresh_token")
    return Credentials(
        access_token=body["access_token"],
        # Box always rotates; a server that does not keeps the old one valid, so keep it.
        refresh_token=refresh if isinstance(refresh, str) and refresh else previous_refresh,
        expires_at=expires_at,
        token_type=str(body.get("token_type") or "bearer"),
        scope=str(body["scope"]) if body.get("scope") else scope,
        client_id=client_id,
        client_secret=client_secret,
        obtained_at=now,
        token_url=token_url_,
        revoke_url=revoke_url_,
        grant="authorization_code",
    )


# --------------------------------------------------------------------------- login


def _pkce_pair() -> tuple[str, str]:
    """RFC 7636 S256: an 86-char verifier and its base64url(sha256) challenge."""
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
    return verifier, challenge


_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>box-memory</title></head>
<body style="font-family:sans-serif;margin:3em"><h2>{title}</h2><p>{detail}</p>
<p>You can close this tab and return to the terminal.</p></body></html>"""


@dataclass
class _CallbackResult:
    params: dict[str, str] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)


if TYPE_CHECKING:
    from http.server import HTTPServer


def _callback_server(port: int, expected_state: str) -> tuple[HTTPServer, _CallbackResult]:
    """Bind the loopback-only server that waits for the one redirect back from Box.

    http.server is imported here, not at module level, to keep `import box_memory` light.
    """
    from http.server import BaseHTTPRequestHandler, HTTPServer

    result = _CallbackResult()

    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a stalled connection must not pin the server

        def log_message(self, format: str, *args: Any) -> None:
            """Silence: the default logger would print the request line, which carries the code."""

        def _send(self, status: int, title: str, detail: str) -> None:
            page = _PAGE.format(title=html.escape(title), detail=html.escape(detail)).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")
            self.end_headers()
            self.wfile.write(page)

        def do_GET(self) -> None:
            parsed = urllib.parse.urlsplit(self.path)
            if parsed.path != CALLBACK_PATH:
                self._send(404, "Not found", "This address only receives the Box login redirect.")
                return
            if result.done.is_set():
                self._send(409, "Already handled", "This login has already been completed.")
                return
            query = urllib.parse.parse_qs(parsed.query, keep_blank_values=True)
            params = {k: v[0] for k, v in query.items()}
            state_ok = secrets.compare_digest(params.get("state", "").encode(), expected_state.encode())
            if not state_ok:
                title, detail = "Box login refused", "The answer did not match this login attempt."
            elif "error" in params:
                title, detail = "Box login not completed", f"Box answered: {params['error']}."
            elif params.get("code"):
                title, detail = "Box login complete", "box-memory received the authorization."
            else:
                title, detail = "Box login failed", "The answer carried no authorization code."
            try:
                self._send(200 if state_ok and params.get("code") else 400, title, detail)
            finally:
                result.params = params
                result.done.set()

    return HTTPServer(("127.0.0.1", port), Handler), result


def _resolve_client(client_id: str | None, client_secret: str | None) -> tuple[str, str]:
    cid = client_id or settings.client_id()
    secret = client_secret or settings.client_secret()
    if not cid or not secret:
        raise InvalidInput(
            "Box OAuth needs a client id and client secret (--client-id/--client-secret or "
            f"{ENV_CLIENT_ID}/{ENV_CLIENT_SECRET}); ask your Box admin for the app's credentials"
        )
    return cid, secret


def login(
    client_id: str | None = None,
    client_secret: str | None = None,
    *,
    port: int = DEFAULT_PORT,
    scopes: str = DEFAULT_SCOPES,
    open_browser: bool = True,
    timeout: float = 300.0,
    on_url: Callable[[str], None] | None = None,
) -> AuthStatus:
    """Authorization code + PKCE through a loopback redirect; stores the pair; returns the status.

    `on_url` receives the authorize URL (print it for the user; tests play the browser there).
    `port=0` picks a free port; the redirect URI always names the port actually bound.
    """
    cid, secret = _resolve_client(client_id, client_secret)
    if not 0 <= port <= 65535:
        raise InvalidInput(f"--port must be between 0 and 65535, not {port}")
    verifier, challenge = _pkce_pair()
    state = secrets.token_urlsafe(32)
    hide: tuple[str | None, ...] = (secret, verifier, state)
    try:
        server, callback = _callback_server(port, state)
    except OSError as exc:
        raise auth_error(
            f"Cannot listen on 127.0.0.1:{port} for the Box login callback ({exc.strerror or exc}); "
            "free the port or pick another with --port (it must match the app's redirect URI in Box)",
            *hide,
            code="auth_callback_port",
        ) from None
    bound_port = server.server_address[1]
    redirect_uri = f"http://127.0.0.1:{bound_port}{CALLBACK_PATH}"
    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": cid,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "scope": scopes,
        }
    )
    base = authorize_url()
    url = f"{base}{'&' if '?' in base else '?'}{query}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="box-oauth-callback", daemon=True
    )
    thread.start()
    try:
        if on_url is not None:
            on_url(url)
        if open_browser:
            import webbrowser

            with contextlib.suppress(Exception):
                webbrowser.open(url)
        if not callback.done.wait(timeout):
            raise auth_error(
                f"Timed out after {timeout:g} s waiting for the Box login redirect to {redirect_uri}",
                *hide,
                code="auth_timeout",
            )
        params = callback.params
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    code = params.get("code")
    hide = (*hide, code)
    if not secrets.compare_digest(params.get("state", "").encode(), state.encode()):
        raise auth_error(
            "Box login refused: the callback's state did not match this login attempt "
            "(possible cross-site request); nothing was exchanged - try again",
            *hide,
            code="auth_state_mismatch",
        )
    if "error" in params:
        err = params["error"]
        desc = params.get("error_description", "")
        if err == "access_denied":
            raise auth_error(
                "Box login was denied (access_denied): the app was not granted access",
                *hide,
                code="auth_denied",
            )
        raise auth_error(
            f"Box authorization failed: {err}{': ' + desc if desc else ''}", *hide, code="auth_failed"
        )
    if not code:
        raise auth_error("Box login callback carried no authorization code", *hide, code="auth_failed")

    turl, rurl = token_url(), revoke_url()
    body = token_request(
        turl,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "client_id": cid,
            "client_secret": secret,
        },
        what="the authorization code",
    )
    creds = credentials_from_response(
        body, client_id=cid, client_secret=secret, token_url_=turl, revoke_url_=rurl, scope=scopes
    )
    _persist(creds, credentials_path())
    return status()


def _persist(creds: Credentials, path: Path) -> None:
    try:
        save_credentials(creds, path)
    except OSError as exc:
        raise auth_error(
            f"Could not save Box credentials to {path} ({type(exc).__name__}: {exc.strerror or exc})",
            *creds.secrets(),
            code="credentials_unwritable",
        ) from None


def store_token(access_token: str, *, expires_in: float | None = None) -> AuthStatus:
    """Store an existing access token (`auth token`). It cannot be refreshed; it just expires."""
    token = (access_token or "").strip()
    if not token or any(ch.isspace() for ch in token) or len(token) > 4096:
        raise InvalidInput("The Box access token must be a single non-empty word")
    now = time.time()
    if expires_in is not None and not (
        math.isfinite(expires_in) and expires_in >= 0 and valid_time(now + expires_in)
    ):
        raise InvalidInput("expires_in must be zero or more seconds (and end before the year 10000)")
    creds = Credentials(
        access_token=token,
        expires_at=now + expires_in if expires_in is not None else None,
        obtained_at=now,
        token_url=token_url(),
        revoke_url=revoke_url(),
        grant="manual",
    )
    _persist(creds, credentials_path())
    return status()


# --------------------------------------------------------------------------- logout


def _revoke_one(url: str, creds: Credentials, token: str, kind: str) -> str | None:
    """Best effort; returns a warning instead of raising."""
    import httpx2

    form = {"token": token}
    if creds.client_id:
        form["client_id"] = creds.client_id
    if creds.client_secret:
        form["client_secret"] = creds.client_secret
    try:
        resp = httpx2.post(url, data=form, timeout=HTTP_TIMEOUT_S)
    except httpx2.HTTPError as exc:
        return redact(
            f"Could not revoke the {kind} at {url} ({type(exc).__name__}); removed the local copy anyway",
            *creds.secrets(),
        )
    if resp.status_code >= 400:
        return redact(
            f"Box revoke endpoint answered HTTP {resp.status_code} for the {kind}; "
            "removed the local copy anyway",
            *creds.secrets(),
        )
    return None


def logout(revoke: bool = True) -> LogoutResult:
    """Revoke at Box (best effort) and delete the local credentials."""
    path = credentials_path()
    warnings: list[str] = []
    revoked: list[str] = []
    try:
        creds = load_credentials(path)
    except AuthError as exc:
        creds = None
        warnings.append(f"{exc}; deleting it")
    if revoke and creds is not None:
        url = revoke_url(creds)
        if not creds.client_id:
            warnings.append(
                "No Box client credentials are stored for this token, so it was not revoked; "
                "it stays valid until it expires"
            )
        else:
            for kind, token in (("refresh_token", creds.refresh_token), ("access_token", creds.access_token)):
                if not token:
                    continue
                warning = _revoke_one(url, creds, token, kind.replace("_", " "))
                if warning:
                    warnings.append(warning)
                else:
                    revoked.append(kind)
    removed = delete_credentials(path)
    if settings.access_token():
        warnings.append(f"{ENV_ACCESS_TOKEN} is still set in the environment and will keep being used")
    return LogoutResult(removed=removed, revoked=revoked, warnings=warnings)
