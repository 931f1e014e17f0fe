"""The storage port and the factories that open its two implementations.

Code outside `store/` names only what is exported here (the `Store` protocol, its capabilities,
the path helpers and these factories), never a concrete store. The cloud store - and with it the
network stack - is imported only when a Box workspace is opened: recall and write on a local
workspace never load it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from box_memory.store.base import (
    AlreadyExists,
    BoxTools,
    Entry,
    MetadataSearch,
    Store,
    TierDetection,
    UnlistedReads,
    WorkspaceBuilders,
    as_box_tools,
    as_metadata_search,
    as_tier_detection,
    as_unlisted_reads,
    clean_path,
    join,
    logical_folder_paths,
)

if TYPE_CHECKING:
    from box_memory.store.cloud import CloudStore

__all__ = [
    "AlreadyExists",
    "BoxTools",
    "Entry",
    "MetadataSearch",
    "Store",
    "TierDetection",
    "UnlistedReads",
    "WorkspaceBuilders",
    "as_box_tools",
    "as_metadata_search",
    "as_tier_detection",
    "as_unlisted_reads",
    "clean_path",
    "close_cloud_sessions",
    "init_cloud_workspace",
    "join",
    "logical_folder_paths",
    "open_cloud",
    "open_local",
]

_CLOUD = "box_memory.store.cloud.state"  # where close_all and the open stores live


def open_local(root: Path) -> Store:
    """The store of a folder on this machine (a Box Drive folder or any folder)."""
    from box_memory.store.local import LocalStore

    return LocalStore(root)


def open_cloud(folder_id: str, *, client: Any = None, cache_dir: Path | None = None) -> CloudStore:
    """The store of the Box folder `folder_id` (`--workspace box:<id>`). With `client`, that MCP
    session is used and left open; otherwise the process's shared session opens on first use.
    With `cache_dir`, file text is cached there instead of the user's cache (a check that must
    read Box, not an earlier command's copy)."""
    from box_memory.store.cloud import CloudStore, open_cloud_store

    if client is None and cache_dir is None:
        return open_cloud_store(folder_id)
    return CloudStore(str(folder_id), client=client, own_client=False, cache_dir=cache_dir)


def init_cloud_workspace(
    name: str, *, parent: str, teams: list[str], layout: str, reinit: bool, builders: WorkspaceBuilders[Any]
) -> tuple[dict[str, Any], list[str]]:
    """Create (or reuse) folder NAME under Box folder `parent` as a workspace (idempotent): the
    report and its warnings."""
    from box_memory.store.cloud import init_cloud_workspace as provision

    return provision(name, parent=parent, teams=teams, layout=layout, reinit=reinit, builders=builders)


def close_cloud_sessions() -> list[str]:
    """End every Box session this process opened and return the warnings the cloud stores
    collected; nothing (and no import) when no cloud store was opened."""
    cloud = sys.modules.get(_CLOUD)
    return list(cloud.close_all()) if cloud is not None else []
