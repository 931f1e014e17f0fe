"""Box's API vocabulary in the emulator: user, enterprise, error JSON, names, markers, `Item`.

The emulated user and enterprise, the error JSON, item names, listing markers, timestamps, and
the record kept per file or folder.

Guess about the real service (not confirmed by Box documentation): timestamps are rendered with a
fixed -08:00 offset (Box answers in the enterprise's zone, which is usually US Pacific), at second
precision.
"""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

ROOT_ID = "0"
ROOT_NAME = "All Files"
BOX_TZ = timezone(timedelta(hours=-8))
MAX_NAME_LENGTH = 255
USER_ID = "31415926535"
ENTERPRISE_ID = "27182818"
USER = {"type": "user", "id": USER_ID, "name": "Emulator User", "login": "emulator.user@example.com"}


def rfc3339(ts: float | None) -> str | None:
    """Box renders timestamps as RFC 3339 with an explicit offset and no fractional seconds."""
    if ts is None:
        return None
    return datetime.fromtimestamp(int(ts), BOX_TZ).isoformat()


def new_request_id() -> str:
    return secrets.token_hex(8)[:15]


class BoxApiError(Exception):
    """A Box REST error, relayed by the MCP tools as the Box error JSON."""

    def __init__(
        self, status: int, code: str, message: str, *, context_info: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.context_info = context_info

    def body(self) -> dict[str, Any]:
        """The JSON body in the key order Box uses (spec section 3)."""
        out: dict[str, Any] = {
            "type": "error",
            "status": self.status,
            "code": self.code,
            "message": self.message,
        }
        if self.context_info is not None:
            out["context_info"] = self.context_info
        out["request_id"] = new_request_id()
        return out


def not_found() -> BoxApiError:
    return BoxApiError(404, "not_found", "Not Found")


def bad_request(message: str = "Bad Request", code: str = "bad_request") -> BoxApiError:
    return BoxApiError(400, code, message)


def validate_name(name: Any) -> str:
    """Box's item name rules (spec section 3); violations are 400s."""
    if not isinstance(name, str) or name == "":
        raise bad_request("Item name invalid", "item_name_invalid")
    if len(name) > MAX_NAME_LENGTH:
        raise bad_request("Item name too long", "item_name_too_long")
    if "/" in name or "\\" in name or name in (".", "..") or name != name.strip(" "):
        raise bad_request("Item name invalid", "item_name_invalid")
    if any(ord(ch) < 32 for ch in name):
        raise bad_request("Item name invalid", "item_name_invalid")
    return name


def sort_key(item: Item) -> tuple[int, str, str]:
    """Folders first, then files; by name, case-insensitively, ties broken by exact name."""
    return (0 if item.type == "folder" else 1, item.name.casefold(), item.name)


def encode_marker(item: Item) -> str:
    raw = json.dumps(list(sort_key(item)), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_marker(marker: str) -> tuple[int, str, str]:
    try:
        raw = base64.urlsafe_b64decode(marker + "=" * (-len(marker) % 4))
        rank, folded, name = json.loads(raw)
        return (int(rank), str(folded), str(name))
    except (ValueError, TypeError) as exc:
        raise bad_request("Invalid marker", "invalid_parameter") from exc


@dataclass
class Item:
    """What the emulator remembers about one file or folder (times are epoch seconds)."""

    id: str
    type: str
    path: str
    created_at: float | None = None
    modified_at: float | None = None
    content_modified_at: float | None = None
    changed_at: float = 0.0
    etag: int = 0
    sequence_id: int = 0
    version_id: str = ""
    version_number: int = 0
    sha1: str = ""
    size: int = 0
    mtime_ns: int = 0
    description: str = ""
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1] if self.path else ROOT_NAME

    @property
    def parent_path(self) -> str | None:
        if not self.path:
            return None
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""

    @property
    def is_root(self) -> bool:
        return self.id == ROOT_ID
