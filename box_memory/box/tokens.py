"""Where the Box MCP client's bearer token comes from: the `TokenSource` protocol (box/auth.py's
credentials store is one) and a plain token string."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from box_memory.errors import AuthError

__all__ = ["AUTH_HINT", "StaticToken", "TokenSource"]

AUTH_HINT = "Box rejected the access token (401) - run `box-memory auth login`"


@runtime_checkable
class TokenSource(Protocol):
    """Where the bearer token comes from; `refresh()` is called once after a 401."""

    def access_token(self) -> str: ...

    def refresh(self) -> str: ...


class StaticToken:
    """A plain token string: nothing to refresh, so a 401 is final."""

    def __init__(self, token: str) -> None:
        self._token = token

    def access_token(self) -> str:
        return self._token

    def refresh(self) -> str:
        raise AuthError(AUTH_HINT)

    def __repr__(self) -> str:
        return "StaticToken(***)"
