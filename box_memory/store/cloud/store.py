"""The Box cloud store: the Store port over Box MCP tools (docs/spec/box-mcp.md), one session per command.

Workspace-relative paths map to Box ids through `folder_ids` in `_box-memory.json` and folder
listings. Each folder is listed at most once per command (with the fields box-memory needs: id,
name, etag, sha1, size, modified_at); our own writes update that listing in place from the object
Box returns, and taking the write lock drops every listing so other writers' changes become
visible exactly when they matter. File text is cached on disk under `user_dirs().cache`, keyed by
Box file id and sha1 (revalidated by the listing), so a warm command reads nothing but listings.

The store is built in layers (state.py, folders.py, reading.py, metadata.py, writing.py, each a
class over the one before); this module adds the store's lifecycle and the write lock, a lease on
`_box-memory.lock` (lease.py). The content cache is cache.py, tier detection and the metadata
template are tier.py, and provisioning a new workspace is provision.py.

Tier-aware, never tier-gated: when the workspace says `custom_metadata_templates` and the tools
exist, every memory file written also gets the `boxMemory` metadata instance (a failure is a
warning), and `metadata_search` can answer structured filters through `search_files_keyword` +
`mdfilters` once the template is older than Box's search lag.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from box_memory import settings
from box_memory.errors import InvalidInput
from box_memory.format.model import LOCK_NAME
from box_memory.store.cloud.items import as_object, item_sha1
from box_memory.store.cloud.lease import FALLBACK_LOCK_NAME, Lease
from box_memory.store.cloud.writing import Writing

__all__ = ["CloudStore", "open_cloud_store"]


class CloudStore(Writing):
    """A workspace rooted at one Box folder. Not thread-safe (one command, one thread)."""

    def close(self) -> None:
        kept = self._keep()
        if kept is not None and settings.listing_trust_s() > 0:
            self._snapshot.save(kept)
        self._end_session()

    def collected_warnings(self) -> list[str]:
        return list(self.warnings)

    def describe(self) -> str:
        return f"box:{self.root_id}"

    @property
    def local_root(self) -> Path | None:
        return None  # nothing of the workspace is on this machine (the text cache is private)

    def batch(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()  # every upload is durable when Box answers

    def checkpoint(self) -> None:
        pass

    def lock_state(self) -> dict[str, Any] | None:
        return None  # `status` reports the local lock file only, not the Box lease

    def lock_name(self) -> str:
        """The lease file's name: the plugins' `_box-memory.lock`, or the recorded fallback."""
        if self.lock_name_used:
            return self.lock_name_used
        name = self._config_data().get("lock_name")
        return FALLBACK_LOCK_NAME if name == FALLBACK_LOCK_NAME else LOCK_NAME

    def record_lock_name(self, name: str) -> None:
        """Remember (in the config, under the lock) that this workspace's lease uses `name`."""
        self.lock_name_used = name
        cfg = self._config_data()
        if cfg and cfg.get("lock_name") != name:
            self._write_config({**cfg, "lock_name": name})

    def current_sha1(self, file_id: str) -> str | None:
        """The sha1 Box reports for the file now (a fresh details call, never a listing)."""
        return self.current_version(file_id)[0]

    def current_version(self, file_id: str) -> tuple[str | None, str | None]:
        """(sha1, etag) Box reports for the file now (a fresh details call, never a listing)."""
        args = {"file_id": file_id, "fields": ["sha1", "etag"]}
        details = as_object(self.call("get_file_details", args)) or {}
        etag = details.get("etag")
        return item_sha1(details), None if etag is None else str(etag)

    def root_listing_age(self) -> float | None:
        """Seconds since this command listed the workspace root (None: it holds no root listing)."""
        at = self._listed_at.get(self.root_id)
        return None if at is None or self.root_id not in self._listings else time.time() - at

    def current_text(self, file_id: str) -> str:
        """The file's text as Box serves it now (not verified, not cached)."""
        return str(self.box.call_text("get_file_content", {"file_id": file_id}))

    @contextlib.contextmanager
    def lock(self, *, writer: str = "box-memory", skill: str = "") -> Iterator[object]:
        lease = Lease(self, writer=writer, skill=skill)
        lease.acquire()
        try:
            yield lease
        finally:
            lease.release()


def open_cloud_store(folder_id: str) -> CloudStore:
    """The store behind `--workspace box:<folder_id>` (the session opens on first use)."""
    fid = str(folder_id).strip()
    if not fid.isdigit():
        raise InvalidInput(f"box:{folder_id} is not a Box folder id (digits expected)")
    return CloudStore(fid)
