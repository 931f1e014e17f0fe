"""The Box access token a command uses: `BOX_ACCESS_TOKEN`, else the stored one (credentials.py),
refreshed when it is about to expire or Box refused it.

Box refresh tokens are single use, so every refresh is serialised by a file lock and the new
pair is written to disk before the new access token is handed out: losing a rotated pair would
force the user to log in again. Logging in and out is oauth.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from box_memory import settings
from box_memory.box.credentials import (
    LOGIN_HINT,
    Credentials,
    FileLock,
    Source,
    auth_error,
    credentials_path,
    load_credentials,
    lock_path,
    save_credentials,
    stored_in,
)
from box_memory.box.oauth import credentials_from_response, revoke_url, token_request, token_url

__all__ = ["REFRESH_MARGIN_S", "TokenSource"]

ENV_ACCESS_TOKEN = settings.ACCESS_TOKEN

#: Refresh when the access token has less than this many seconds left.
REFRESH_MARGIN_S = 300.0


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
                raise auth_error(
                    f"The stored Box access token has expired - {LOGIN_HINT} or `box-memory auth token`",
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
            raise auth_error(
                f"Box rejected the access token from {ENV_ACCESS_TOKEN} (it cannot be refreshed); "
                f"set a fresh one or unset it and {LOGIN_HINT}",
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
            raise auth_error(
                f"Not logged in to Box - {LOGIN_HINT} (or set {ENV_ACCESS_TOKEN})", code="not_logged_in"
            )
        return creds

    def _refresh_locked(self, needed: Callable[[Credentials], bool]) -> str:
        path = self.path
        with self._mutex, FileLock(lock_path(path), timeout=self.lock_timeout):
            creds = self._load_required(migrate=False)
            if not needed(creds):
                return creds.access_token  # someone else refreshed while we waited
            if not creds.refresh_token:
                raise auth_error(
                    f"Box rejected the stored access token and no refresh token is stored - {LOGIN_HINT}",
                    *creds.secrets(),
                    code="auth_expired",
                )
            turl = token_url(creds)
            form = {"grant_type": "refresh_token", "refresh_token": creds.refresh_token}
            if creds.client_id:
                form["client_id"] = creds.client_id
            if creds.client_secret:
                form["client_secret"] = creds.client_secret
            body = token_request(turl, form, what="the refresh token")
            new = credentials_from_response(
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
                raise auth_error(
                    f"Box token refreshed but saving it to {path} failed ({type(exc).__name__}: "
                    f"{exc.strerror or exc}); the previous refresh token is used up - {LOGIN_HINT}",
                    *new.secrets(),
                    *creds.secrets(),
                    code="credentials_unwritable",
                ) from None
            return new.access_token
