"""The Box MCP tool catalogue kept on disk: each session start and tools/list is a billed call
under custom credentials (DOC2 in CONNECTORS.md), so the tool list is kept per server URL and
credentials for a day and re-read when a call meets an unknown tool or a schema error."""

from __future__ import annotations

import contextlib
import os
import re
import time
from typing import Any

from box_memory.errors import BoxToolError

__all__ = ["CATALOGUE_TTL_S", "catalogue_file", "read_catalogue", "schema_error", "write_catalogue"]

CATALOGUE_TTL_S = 24 * 3600.0
_SCHEMA_ERROR_RE = re.compile(
    r"(input validation|validation error|unexpected argument|invalid (param|argument))", re.I
)


def schema_error(exc: BaseException) -> bool:
    return (
        isinstance(exc, BoxToolError)
        and exc.status in (None, 400, 422)
        and bool(_SCHEMA_ERROR_RE.search(str(exc)))
    )


def catalogue_file(url: str) -> Any:
    import hashlib

    from box_memory.paths import user_dirs

    key = hashlib.sha256(url.encode()).hexdigest()[:24]
    return user_dirs().cache / "catalogue" / f"{key}.json"


def _credential_key(url: str, token: str) -> str:
    import hashlib

    return hashlib.sha256(f"{url}\0{token}".encode()).hexdigest()  # the token itself is never stored


def read_catalogue(url: str, token: str) -> dict[str, dict[str, Any]] | None:
    import json

    from box_memory.format.safeio import UnreadableFile, read_regular

    try:  # bounded, regular files only: a FIFO or /dev/zero there is a cache miss, not a hang
        data = json.loads(read_regular(catalogue_file(url), "index").decode("utf-8"))
    except (OSError, ValueError, UnreadableFile):
        return None
    if not isinstance(data, dict) or data.get("credentials") != _credential_key(url, token):
        return None
    saved = data.get("saved_at")
    if not isinstance(saved, int | float) or not 0 <= time.time() - saved < CATALOGUE_TTL_S:
        return None
    tools = data.get("tools")
    return tools if isinstance(tools, dict) and tools else None


def write_catalogue(url: str, token: str, tools: dict[str, dict[str, Any]]) -> None:
    import json
    import secrets

    path = catalogue_file(url)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(f".tmp-{secrets.token_hex(6)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(
                {"credentials": _credential_key(url, token), "saved_at": time.time(), "tools": tools}, fh
            )
        tmp.replace(path)
