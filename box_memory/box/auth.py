"""Box OAuth 2.0 (authorization code + PKCE) and the local credentials store.

Box refresh tokens are single use, so every refresh is serialised by a file lock and the new
pair is written to disk before the new access token is handed out: losing a rotated pair would
force the user to log in again. Secrets never appear in messages, reprs or status output.

httpx2 (the HTTP stack the mcp SDK itself uses) is imported inside the functions that talk to Box
so that importing this module stays cheap.

Where the credentials live: the operating system's keychain (macOS Keychain, Windows Credential
Manager, the Secret Service on a Linux desktop) through `keyring` when it is installed (the
`keychain` extra) and finds one, else a JSON file at mode 0600 (headless Linux). keyring is
imported only here, only when credentials are read or written; `BOX_MEMORY_CREDENTIALS_STORE`
(`keychain` or `file`) picks one explicitly.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import json
import math
import os
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from box_memory import locks, settings
from box_memory.errors import AuthError, InvalidInput
from box_memory.format.safeio import UnreadableFile, make_private, read_regular
from box_memory.paths import user_dirs
from box_memory.redaction import redact
from box_memory.result import Result

__all__ = [
    "DEFAULT_AUTHORIZE_URL",
    "DEFAULT_REVOKE_URL",
    "DEFAULT_SCOPES",
    "DEFAULT_TOKEN_URL",
    "AuthStatus",
    "Credentials",
    "LogoutResult",
    "TokenSource",
    "credentials_path",
    "delete_credentials",
    "load_credentials",
    "login",
    "logout",
    "redact",
    "save_credentials",
    "status",
    "store_token",
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

#: Refresh when the access token has less than this many seconds left.
REFRESH_MARGIN_S = 300.0
HTTP_TIMEOUT_S = 30.0
FILE_FORMAT_VERSION = 1
_LOGIN_HINT = "run `box-memory auth login`"

Source = Literal["env", "store", "none"]
StoreKind = Literal["keychain", "file"]
KEYCHAIN_SERVICE = "box-memory"


# --------------------------------------------------------------------------- redaction


def _auth_error(message: str, *secrets_: str | None, code: str | None = None) -> AuthError:
    """Every AuthError is built here so that no message can carry a secret."""
    return AuthError(redact(message, *secrets_), code=code)


# --------------------------------------------------------------------------- time helpers


# The times a credentials file may hold: from the epoch to the end of year 9999 (what `_iso` can
# write back). Anything else - NaN, 1e30, a negative number, an unparsable string - is a damaged
# file, never a token that "never expires".
_MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(int(ts), UTC).isoformat().replace("+00:00", "Z")


class _FieldProblem(ValueError):
    """A credentials field that is missing or not what it must be; the message names the field
    only, so it may be shown."""


def _valid_time(ts: float) -> bool:
    return math.isfinite(ts) and 0 <= ts <= _MAX_TIME


def _parse_time(value: Any, name: str = "time") -> float | None:
    """Accept epoch seconds or ISO-8601 (a hand-edited or older file may hold either); None when
    absent. A value that is present but not such a time raises ValueError naming `name` (never
    the value: the file it comes from holds secrets)."""
    if value is None or value == "":
        return None
    ts: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        ts = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            ts = float(text)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                parsed = None
            if parsed is not None:
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=UTC)
                try:
                    ts = parsed.timestamp()
                except (OverflowError, ValueError):  # pragma: no cover - platform time_t limits
                    ts = None
    if ts is None or not _valid_time(ts):
        raise _FieldProblem(f"{name} is not a time between 1970 and 9999")
    return ts


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, repr=False)
class Credentials:
    """What the credentials file holds. `repr` hides every secret so a log line cannot leak one."""

    access_token: str
    refresh_token: str | None = None
    expires_at: float | None = None  # epoch seconds
    token_type: str = "bearer"  # noqa: S105 - names and URLs, not secrets
    scope: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    obtained_at: float | None = None
    token_url: str | None = None
    revoke_url: str | None = None
    grant: str = "authorization_code"  # or "manual" for `auth token`

    def __repr__(self) -> str:
        return (
            f"Credentials(access_token=<hidden>, refresh_token={'<hidden>' if self.refresh_token else None},"
            f" expires_at={_iso(self.expires_at)!r}, token_type={self.token_type!r}, scope={self.scope!r},"
            f" client_id={_partial(self.client_id)!r}, client_secret="
            f"{'<hidden>' if self.client_secret else None}, grant={self.grant!r})"
        )

    __str__ = __repr__

    def secrets(self) -> tuple[str | None, ...]:
        """The values `redact` must remove from anything said about these credentials."""
        return (self.access_token, self.refresh_token, self.client_secret)

    def expires_within(self, seconds: float, *, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return self.expires_at - (time.time() if now is None else now) <= seconds

    @property
    def expired(self) -> bool:
        return self.expires_within(0)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": FILE_FORMAT_VERSION,
            "grant": self.grant,
            "token_type": self.token_type,
            "access_token": self.access_token,
            "refresh_token": self.refresh_token,
            "expires_at": _iso(self.expires_at),
            "scope": self.scope,
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "obtained_at": _iso(self.obtained_at),
            "token_url": self.token_url,
            "revoke_url": self.revoke_url,
        }

    @classmethod
    def from_json(cls, data: Any) -> Credentials:
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("access_token"), str)
            or not (data["access_token"])
        ):
            raise _FieldProblem("no access_token")

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) and value else None

        return cls(
            access_token=data["access_token"],
            refresh_token=text("refresh_token"),
            expires_at=_parse_time(data.get("expires_at"), "expires_at"),
            token_type=text("token_type") or "bearer",
            scope=text("scope"),
            client_id=text("client_id"),
            client_secret=text("client_secret"),
            obtained_at=_parse_time(data.get("obtained_at"), "obtained_at"),
            token_url=text("token_url"),
            revoke_url=text("revoke_url"),
            grant=text("grant") or "authorization_code",
        )


def _partial(client_id: str | None) -> str | None:
    """Enough of the client id to recognise it, not enough to reuse it."""
    if not client_id:
        return None
    return client_id[:4] + "…"


@dataclass(frozen=True)
class AuthStatus:
    """What `auth status` shows. Holds no token, secret or full client id."""

    logged_in: bool
    source: Source
    expires_at: str | None = None
    expired: bool | None = None
    has_refresh: bool = False
    scopes: list[str] = field(default_factory=list)
    client_id: str | None = None
    obtained_at: str | None = None
    credentials_file: str | None = None
    #: Which store holds the stored token: "keychain" or "file" (None when nothing is stored).
    store: StoreKind | None = None
    #: The keychain keyring found here (its backend's name), when that is the store.
    keychain: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


# --------------------------------------------------------------------------- the store


def credentials_path() -> Path:
    return user_dirs().credentials_file


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _keychain() -> Any | None:
    """keyring's backend when this machine has a real keychain and the settings allow it; None
    for the file. keyring is imported here only (the `keychain` extra), never on recall/write."""
    choice = settings.credentials_store()
    if choice not in ("auto", "keychain", "file"):
        raise InvalidInput(
            f"{settings.CREDENTIALS_STORE} must be keychain or file (or unset), not {choice!r}"
        )
    if choice == "file":
        return None
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:
        backend = None
    else:
        try:
            backend = keyring.get_keyring()
        except Exception:
            backend = None
        if isinstance(backend, fail.Keyring | null.Keyring):
            backend = None
    if backend is None and choice == "keychain":
        raise _auth_error(
            f"{settings.CREDENTIALS_STORE}=keychain but no system keychain is available here "
            "(install box-memory[keychain]; headless Linux has none) - unset it to use the 0600 file",
            code="keychain_unavailable",
        )
    return backend


def _keychain_name(backend: Any) -> str:
    name = getattr(backend, "name", None)
    return str(name) if name else type(backend).__name__


def _keychain_account(path: Path) -> str:
    """One keychain entry per credentials location (so BOX_MEMORY_HOME keeps users apart)."""
    return str(path.expanduser().absolute())


def _keychain_get(backend: Any, path: Path) -> str | None:
    try:
        value = backend.get_password(KEYCHAIN_SERVICE, _keychain_account(path))
    except Exception as exc:
        raise _auth_error(
            f"The system keychain ({_keychain_name(backend)}) refused to give the Box credentials "
            f"({type(exc).__name__}) - unlock it, or {_LOGIN_HINT}",
            code="credentials_unreadable",
        ) from None
    return value if isinstance(value, str) and value else None


def stored_in(path: Path | None = None) -> StoreKind | None:
    """Which store holds credentials for `path`'s location now, if any."""
    path = path or credentials_path()
    backend = _keychain()
    if backend is not None and _keychain_get(backend, path) is not None:
        return "keychain"
    return "file" if path.exists() else None


def load_credentials(path: Path | None = None, *, migrate: bool = True) -> Credentials | None:
    """Read the store (the keychain first, where there is one, then the file); None when absent.

    A file left from before the keychain was available moves into it (under the refresh lock,
    skipped when another process holds it: `migrate=False` where the caller holds it already).
    Tightens a file that someone made readable by others.
    """
    path = path or credentials_path()
    backend = _keychain()
    if backend is not None:
        text = _keychain_get(backend, path)
        if text is not None:
            try:
                return Credentials.from_json(json.loads(text))
            except ValueError:
                raise _auth_error(
                    f"Box credentials in the system keychain ({_keychain_name(backend)}) are unreadable "
                    f"- {_LOGIN_HINT}",
                    code="credentials_unreadable",
                ) from None
    creds = _load_file(path)
    if creds is not None and backend is not None and migrate:
        _move_to_keychain(path)
    return creds


def _move_to_keychain(path: Path) -> None:
    """The file's credentials into the keychain, then the file removed; nothing when the refresh
    lock is busy (the holder saves the pair it refreshes into the keychain anyway)."""
    lock = locks.FileLock(_lock_path(path), kernel=locks.KERNEL_LOCKS, wait=0.0, stale_after=120.0)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not lock.acquire():
        return
    try:
        creds = _load_file(path)
        if creds is not None:
            with contextlib.suppress(OSError):
                save_credentials(creds, path)
    finally:
        lock.release()


def _load_file(path: Path) -> Credentials | None:
    """The 0600 file, read like every other file box-memory reads (safeio.read_regular): a FIFO, a
    device or a file over the cap is refused at once instead of hanging or filling memory."""
    label = f"Box credentials file {path}"
    try:
        raw = read_regular(path, "config", label)
    except FileNotFoundError:
        return None
    except UnreadableFile as exc:
        raise _auth_error(f"{exc} - {_LOGIN_HINT}", code="credentials_unreadable") from None
    except OSError as exc:
        raise _auth_error(
            f"{label} is unreadable ({exc.strerror or type(exc).__name__}) - {_LOGIN_HINT}",
            code="credentials_unreadable",
        ) from None
    if os.name == "posix":
        make_private(path)  # through the descriptor: a link to a device is never chmod-ed
    try:
        return Credentials.from_json(json.loads(raw.decode("utf-8")))
    except ValueError as exc:  # JSON, UTF-8, or a field that is not what it must be
        # The message names the file and the field, never its content (which is full of secrets).
        why = str(exc) if isinstance(exc, _FieldProblem) else type(exc).__name__
        raise _auth_error(
            f"{label} is unreadable ({why}) - {_LOGIN_HINT}", code="credentials_unreadable"
        ) from None


def save_credentials(creds: Credentials, path: Path | None = None) -> Path:
    """Replace the stored pair: in the keychain where there is one (then any older file is
    removed), else atomically in the file. Raises OSError when the store refuses it."""
    path = path or credentials_path()
    backend = _keychain()
    if backend is None:
        return _save_file(creds, path)
    payload = json.dumps(creds.to_json(), separators=(",", ":"))
    try:
        backend.set_password(KEYCHAIN_SERVICE, _keychain_account(path), payload)
    except Exception as exc:
        name = _keychain_name(backend)
        raise OSError(f"the system keychain ({name}) refused them: {type(exc).__name__}") from None
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # the keychain holds them now: no plain copy stays on disk
    return path


def _save_file(creds: Credentials, path: Path) -> Path:
    """Atomically replace the file: temp file (0600) in the same dir, fsync, rename.

    A reader never sees a half-written file, and a crash leaves either the old or the new pair.
    """
    parent = path.parent
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if os.name == "posix":
        with contextlib.suppress(OSError):
            parent.chmod(0o700)
    payload = json.dumps(creds.to_json(), indent=2, sort_keys=False).encode("utf-8") + b"\n"
    tmp = parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if os.name == "posix":
        with contextlib.suppress(OSError):
            dfd = os.open(parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    return path


def delete_credentials(path: Path | None = None) -> bool:
    """Remove the pair from both stores; True when either held one."""
    path = path or credentials_path()
    removed = False
    backend = _keychain()
    if backend is not None and _keychain_get(backend, path) is not None:
        try:
            backend.delete_password(KEYCHAIN_SERVICE, _keychain_account(path))
        except Exception as exc:
            raise _auth_error(
                f"The system keychain ({_keychain_name(backend)}) refused to delete the Box credentials "
                f"({type(exc).__name__})",
                code="credentials_unwritable",
            ) from None
        removed = True
    try:
        path.unlink()
    except FileNotFoundError:
        return removed
    return True


# --------------------------------------------------------------------------- file lock


class _FileLock:
    """Cross-process lock around read-refresh-write of the store (locks.FileLock).

    A kernel lock where there is one (released by the OS if the holder dies); elsewhere a lock
    file whose holder is presumed dead once the file is older than `stale_after`.
    """

    def __init__(
        self,
        path: Path,
        *,
        timeout: float = 60.0,
        stale_after: float = 120.0,
        use_flock: bool | None = None,
    ) -> None:
        self.path = path
        self._lock = locks.FileLock(
            path,
            kernel=locks.KERNEL_LOCKS if use_flock is None else use_flock,
            wait=timeout,
            stale_after=stale_after,
            body={"pid": os.getpid()},
        )

    def acquire(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self._lock.acquire():
            raise _auth_error(
                f"Another box-memory process is refreshing the Box token (lock {self.path}); try again",
                code="auth_lock_busy",
            )

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> _FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# --------------------------------------------------------------------------- token endpoint


def _token_request(url: str, form: dict[str, str], *, what: str) -> dict[str, Any]:
    """POST a form to the token endpoint; return the JSON answer or raise a redacted AuthError."""
    import httpx2

    hide = tuple(v for k, v in form.items() if k != "grant_type")
    try:
        resp = httpx2.post(url, data=form, headers={"Accept": "application/json"}, timeout=HTTP_TIMEOUT_S)
    except httpx2.HTTPError as exc:
        raise _auth_error(
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
            raise _auth_error(
                f"Box refresh token rejected - {_LOGIN_HINT} ({detail})", *hide, code="auth_refresh_rejected"
            )
        raise _auth_error(f"Box token endpoint refused {what}: {detail}", *hide, code="auth_token_refused")
    if not isinstance(body.get("access_token"), str) or not body["access_token"]:
        raise _auth_error(
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
    return at if _valid_time(at) and at >= now else None


def _credentials_from_response(
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
        raise _auth_error(
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
            raise _auth_error(
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
        raise _auth_error(
            "Box login refused: the callback's state did not match this login attempt "
            "(possible cross-site request); nothing was exchanged - try again",
            *hide,
            code="auth_state_mismatch",
        )
    if "error" in params:
        err = params["error"]
        desc = params.get("error_description", "")
        if err == "access_denied":
            raise _auth_error(
                "Box login was denied (access_denied): the app was not granted access",
                *hide,
                code="auth_denied",
            )
        raise _auth_error(
            f"Box authorization failed: {err}{': ' + desc if desc else ''}", *hide, code="auth_failed"
        )
    if not code:
        raise _auth_error("Box login callback carried no authorization code", *hide, code="auth_failed")

    turl, rurl = token_url(), revoke_url()
    body = _token_request(
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
    creds = _credentials_from_response(
        body, client_id=cid, client_secret=secret, token_url_=turl, revoke_url_=rurl, scope=scopes
    )
    _persist(creds, credentials_path())
    return status()


def _persist(creds: Credentials, path: Path) -> None:
    try:
        save_credentials(creds, path)
    except OSError as exc:
        raise _auth_error(
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
        math.isfinite(expires_in) and expires_in >= 0 and _valid_time(now + expires_in)
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


# --------------------------------------------------------------------------- token source


class TokenSource:
    """Hands out a valid Box access token, refreshing (single-use refresh tokens) when needed.

    `BOX_ACCESS_TOKEN` wins over the store and is never refreshed. The store is re-read under the
    lock before refreshing, because another process may already have rotated the pair.
    """

    def __init__(
        self,
        *,
        path: Path | None = None,
        refresh_margin: float = REFRESH_MARGIN_S,
        lock_timeout: float = 60.0,
    ) -> None:
        self._path = path
        self.refresh_margin = refresh_margin
        self.lock_timeout = lock_timeout
        self._last: str | None = None
        self._mutex = threading.Lock()

    @property
    def path(self) -> Path:
        return self._path or credentials_path()

    @property
    def source(self) -> Source:
        if settings.access_token():
            return "env"
        return "store" if stored_in(self.path) is not None else "none"

    def access_token(self) -> str:
        """A token good for at least `refresh_margin` seconds when a refresh is possible."""
        env_token = settings.access_token()
        if env_token:
            self._last = env_token
            return env_token
        creds = self._load_required()
        if creds.expires_within(self.refresh_margin):
            if creds.refresh_token:
                token = self._refresh_locked(lambda c: c.expires_within(self.refresh_margin))
            elif creds.expired:
                raise _auth_error(
                    f"The stored Box access token has expired - {_LOGIN_HINT} or `box-memory auth token`",
                    *creds.secrets(),
                    code="auth_expired",
                )
            else:
                token = creds.access_token
        else:
            token = creds.access_token
        self._last = token
        return token

    def refresh(self) -> str:
        """Called once after a 401: rotate unless another process already did."""
        env_token = settings.access_token()
        if env_token:
            raise _auth_error(
                f"Box rejected the access token from {ENV_ACCESS_TOKEN} (it cannot be refreshed); "
                f"set a fresh one or unset it and {_LOGIN_HINT}",
                env_token,
                code="auth_env_token_rejected",
            )
        rejected = self._last

        def needed(c: Credentials) -> bool:
            return rejected is None or c.access_token == rejected or c.expires_within(self.refresh_margin)

        token = self._refresh_locked(needed)
        self._last = token
        return token

    def _load_required(self, *, migrate: bool = True) -> Credentials:
        creds = load_credentials(self.path, migrate=migrate)
        if creds is None:
            raise _auth_error(
                f"Not logged in to Box - {_LOGIN_HINT} (or set {ENV_ACCESS_TOKEN})", code="not_logged_in"
            )
        return creds

    def _refresh_locked(self, needed: Callable[[Credentials], bool]) -> str:
        path = self.path
        with self._mutex, _FileLock(_lock_path(path), timeout=self.lock_timeout):
            creds = self._load_required(migrate=False)
            if not needed(creds):
                return creds.access_token  # someone else refreshed while we waited
            if not creds.refresh_token:
                raise _auth_error(
                    f"Box rejected the stored access token and no refresh token is stored - {_LOGIN_HINT}",
                    *creds.secrets(),
                    code="auth_expired",
                )
            turl = token_url(creds)
            form = {"grant_type": "refresh_token", "refresh_token": creds.refresh_token}
            if creds.client_id:
                form["client_id"] = creds.client_id
            if creds.client_secret:
                form["client_secret"] = creds.client_secret
            body = _token_request(turl, form, what="the refresh token")
            new = _credentials_from_response(
                body,
                client_id=creds.client_id,
                client_secret=creds.client_secret,
                token_url_=creds.token_url or turl,
                revoke_url_=creds.revoke_url or revoke_url(creds),
                scope=creds.scope,
                previous_refresh=creds.refresh_token,
            )
            try:
                save_credentials(new, path)
            except OSError as exc:
                # The old refresh token is spent and the new one is lost: say so, never use it.
                raise _auth_error(
                    f"Box token refreshed but saving it to {path} failed ({type(exc).__name__}: "
                    f"{exc.strerror or exc}); the previous refresh token is used up - {_LOGIN_HINT}",
                    *new.secrets(),
                    *creds.secrets(),
                    code="credentials_unwritable",
                ) from None
            return new.access_token


# --------------------------------------------------------------------------- status / logout


def status() -> AuthStatus:
    """Who provides the token and until when; never the token itself."""
    path = credentials_path()
    if settings.access_token():
        return AuthStatus(logged_in=True, source="env", credentials_file=str(path))
    creds = load_credentials(path)
    if creds is None:
        return AuthStatus(logged_in=False, source="none", credentials_file=str(path))
    backend = _keychain()
    store: StoreKind = "keychain" if backend is not None and _keychain_get(backend, path) else "file"
    expired = creds.expired if creds.expires_at is not None else None
    return AuthStatus(
        logged_in=not expired or creds.refresh_token is not None,
        source="store",
        expires_at=_iso(creds.expires_at),
        expired=expired,
        has_refresh=creds.refresh_token is not None,
        scopes=(creds.scope or "").split(),
        client_id=_partial(creds.client_id),
        obtained_at=_iso(creds.obtained_at),
        credentials_file=str(path) if store == "file" else None,
        store=store,
        keychain=_keychain_name(backend) if store == "keychain" else None,
    )


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
