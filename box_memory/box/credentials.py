"""The Box credentials and where they are kept: the operating system's keychain through `keyring`
when it is installed (the `keychain` extra) and finds one, else a JSON file at mode 0600 (headless
Linux); the lock around a refresh of the stored pair, and what `auth status` shows.

keyring is imported only here, only when credentials are read or written;
`BOX_MEMORY_CREDENTIALS_STORE` (`keychain` or `file`) picks one explicitly. Secrets never appear
in messages, reprs or status output: every AuthError is built by `auth_error`.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from box_memory import locks, settings
from box_memory.errors import AuthError, InvalidInput
from box_memory.format.safeio import UnreadableFile, make_private, read_regular
from box_memory.paths import user_dirs
from box_memory.redaction import redact

__all__ = [
    "LOGIN_HINT",
    "AuthStatus",
    "Credentials",
    "FileLock",
    "auth_error",
    "credentials_path",
    "delete_credentials",
    "load_credentials",
    "lock_path",
    "save_credentials",
    "status",
    "stored_in",
    "valid_time",
]

FILE_FORMAT_VERSION = 1
LOGIN_HINT = "run `box-memory auth login`"

Source = Literal["env", "store", "none"]
StoreKind = Literal["keychain", "file"]
KEYCHAIN_SERVICE = "box-memory"


# --------------------------------------------------------------------------- redaction


def auth_error(message: str, *secrets_: str | None, code: str | None = None) -> AuthError:
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


def valid_time(ts: float) -> bool:
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
    if ts is None or not valid_time(ts):
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


# --------------------------------------------------------------------------- the store


def credentials_path() -> Path:
    return user_dirs().credentials_file


def lock_path(path: Path) -> Path:
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
        raise auth_error(
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
        raise auth_error(
            f"The system keychain ({_keychain_name(backend)}) refused to give the Box credentials "
            f"({type(exc).__name__}) - unlock it, or {LOGIN_HINT}",
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
                raise auth_error(
                    f"Box credentials in the system keychain ({_keychain_name(backend)}) are unreadable "
                    f"- {LOGIN_HINT}",
                    code="credentials_unreadable",
                ) from None
    creds = _load_file(path)
    if creds is not None and backend is not None and migrate:
        _move_to_keychain(path)
    return creds


def _move_to_keychain(path: Path) -> None:
    """The file's credentials into the keychain, then the file removed; nothing when the refresh
    lock is busy (the holder saves the pair it refreshes into the keychain anyway)."""
    lock = locks.FileLock(lock_path(path), kernel=locks.KERNEL_LOCKS, wait=0.0, stale_after=120.0)
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
        raise auth_error(f"{exc} - {LOGIN_HINT}", code="credentials_unreadable") from None
    except OSError as exc:
        raise auth_error(
            f"{label} is unreadable ({exc.strerror or type(exc).__name__}) - {LOGIN_HINT}",
            code="credentials_unreadable",
        ) from None
    if os.name == "posix":
        make_private(path)  # through the descriptor: a link to a device is never chmod-ed
    try:
        return Credentials.from_json(json.loads(raw.decode("utf-8")))
    except ValueError as exc:  # JSON, UTF-8, or a field that is not what it must be
        # The message names the file and the field, never its content (which is full of secrets).
        why = str(exc) if isinstance(exc, _FieldProblem) else type(exc).__name__
        raise auth_error(
            f"{label} is unreadable ({why}) - {LOGIN_HINT}", code="credentials_unreadable"
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
            raise auth_error(
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


class FileLock:
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
            raise auth_error(
                f"Another box-memory process is refreshing the Box token (lock {self.path}); try again",
                code="auth_lock_busy",
            )

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# --------------------------------------------------------------------------- status


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
