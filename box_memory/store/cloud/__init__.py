"""Box cloud through Box MCP: the store (store.py, built on state.py, folders.py, reading.py,
metadata.py and writing.py), its content cache (cache.py) and kept listings (listings.py), the
write lease (lease.py), tier detection and the metadata template (tier.py), Box items (items.py),
and provisioning a new workspace (provision.py). Imported only when a Box workspace is opened
(`box_memory.store.open_cloud`)."""

from __future__ import annotations

from box_memory.store.cloud.cache import ContentCache
from box_memory.store.cloud.lease import Lease
from box_memory.store.cloud.provision import init_cloud_workspace
from box_memory.store.cloud.state import close_all
from box_memory.store.cloud.store import CloudStore, open_cloud_store
from box_memory.store.cloud.tier import TEMPLATE_FIELDS, TEMPLATE_KEY, detect_tier

__all__ = [
    "TEMPLATE_FIELDS",
    "TEMPLATE_KEY",
    "CloudStore",
    "ContentCache",
    "Lease",
    "close_all",
    "detect_tier",
    "init_cloud_workspace",
    "open_cloud_store",
]
