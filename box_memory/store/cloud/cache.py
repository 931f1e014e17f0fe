"""The cloud store's on-disk content cache: file text by Box file id and sha1 (or etag).

Derived and private (under `user_dirs().cache`), safe to delete at any time: a warm command reads
nothing but listings, and a cache that cannot be written only costs a download next time.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from box_memory.format.safeio import UnreadableFile, read_regular

__all__ = ["ContentCache"]


class ContentCache:
    """File text by (Box file id, sha1 or etag): derived, private, safe to delete at any time."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, file_id: str, key: str) -> Path:
        return self.folder / f"{file_id}.{key}"

    def has(self, file_id: str, key: str | None) -> bool:
        return bool(key) and self._path(file_id, str(key)).is_file()

    def get(self, file_id: str, key: str | None) -> bytes | None:
        if not key:
            return None
        try:  # bounded, regular files only: a FIFO or /dev/zero there is a miss, not a hang
            return read_regular(self._path(file_id, key), "index")
        except (OSError, UnreadableFile):
            return None

    def put(self, file_id: str, key: str | None, data: bytes) -> None:
        if not key:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            for old in self.folder.glob(f"{file_id}.*"):
                if old.name != f"{file_id}.{key}":
                    old.unlink(missing_ok=True)
            tmp = self.folder / f".tmp-{secrets.token_hex(6)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            tmp.replace(self._path(file_id, key))
        except OSError:
            pass  # a cache that cannot be written only costs a download next time
