"""Box metadata on the cloud store (Business+ tiers): the `boxMemory` instance set on every memory
file written when the workspace says `custom_metadata_templates`, structured filters answered by
`search_files_keyword` + `mdfilters` once the template is older than Box's search lag, and the
tier detected again (written to the config) when Box signals a lower one or `status --refresh`
asks.
"""

from __future__ import annotations

import time
from typing import Any

from box_memory.box.payload import listing
from box_memory.errors import BoxMemoryError, BoxToolError, ToolMissing
from box_memory.format.model import CONFIG_NAME, now_iso, parse_time
from box_memory.store.cloud.pins import Pins
from box_memory.store.cloud.tier import TEMPLATE_SCOPE, detect_tier, metadata_fields

__all__ = ["SEARCH_LAG_S", "Metadata"]

SEARCH_LAG_S = 600.0  # Box's search index lags ~10 minutes: no mdfilters before that


class Metadata(Pins):
    """Box metadata and tier re-detection over the cloud store's reads."""

    def _template_key(self) -> str | None:
        cfg = self._config_data()
        caps = cfg.get("capabilities") if isinstance(cfg.get("capabilities"), dict) else {}
        key = cfg.get("metadata_template_key")
        if not (isinstance(caps, dict) and caps.get("custom_metadata_templates")) or not key:
            return None
        return str(key)

    def _apply_metadata(self, path: str, file_id: str, data: bytes) -> None:
        key = self._template_key()
        if key is None:
            return
        if not self.has_tool("set_file_metadata"):
            # The config says metadata templates, the catalogue no longer offers the tool.
            self._downgraded("the set_file_metadata tool is no longer offered")
            return
        fields = metadata_fields(data)
        if fields is None:
            return
        try:
            self.call(
                "set_file_metadata",
                {"file_id": file_id, "scope": TEMPLATE_SCOPE, "template_key": key, "metadata_fields": fields},
            )
        except BoxMemoryError as e:
            self.warnings.append(f"Box metadata not applied to {path} (the memory is written): {e}")
            if isinstance(e, ToolMissing):
                self._downgraded("the set_file_metadata tool is no longer offered", tool_gone=True)
            elif isinstance(e, BoxToolError) and e.status in (403, 404):
                self._downgraded(f"Box refused the metadata ({e.status})")

    def _downgraded(self, why: str, *, tool_gone: bool = False) -> None:
        """A Box answer that signals a lower tier: detect tier and capabilities again (once per
        command) and write them back to the config, with a warning. The caller holds the lock."""
        if self._redetected:
            return
        self._redetected = True
        try:
            found = self.redetect_tier(metadata_tool=not tool_gone)
        except BoxMemoryError as e:
            self.warnings.append(f"{why}; re-detecting the Box tier failed: {e}")
            return
        if found is not None:
            self.warnings.append(
                f"{why}: Box tier re-detected as {found['tier']} (was {found['previous_tier']}); "
                f"capabilities updated in {CONFIG_NAME}"
            )

    def redetect_tier(self, *, metadata_tool: bool = True) -> dict[str, Any] | None:
        """Tier and capabilities detected now (who_am_i, catalogue) and written to the config.

        Used after a downgrade signal and by `status --refresh` (an upgrade); the caller holds
        the workspace lock. Returns {tier, previous_tier, capabilities, changed} or None when
        the workspace has no config.
        """
        cfg = self._config_data()
        if not cfg:
            return None
        reload = getattr(self.box, "reload_catalogue", None)
        if reload is not None:
            reload()  # the cached tool list may predate the plan change
        tier, caps, _template = detect_tier(self.box)
        before = cfg.get("capabilities")
        merged: dict[str, Any] = {**(before if isinstance(before, dict) else {}), **caps}
        if not metadata_tool or not self.has_tool("set_file_metadata"):
            merged["custom_metadata_templates"] = False  # templates listable, but nothing to apply them
        changed = cfg.get("tier") != tier or cfg.get("capabilities") != merged
        new = {**cfg, "tier": tier, "tier_detected_at": now_iso(), "capabilities": merged}
        self._write_config(new)
        return {"tier": tier, "previous_tier": cfg.get("tier"), "capabilities": merged, "changed": changed}

    def metadata_search(
        self, *, kind: str | None = None, status: str | None = None, team: str | None = None, limit: int = 200
    ) -> list[dict[str, Any]] | None:
        """Memory files matching a structured filter through Box metadata search, or None when
        this workspace cannot use it (no template, template younger than the search lag, tool
        missing, or the search failed). Callers always fall back to the indexes."""
        key = self._template_key()
        created = parse_time(self._config_data().get("metadata_template_created_at"))
        if key is None or created is None or time.time() - created.timestamp() < SEARCH_LAG_S:
            return None
        if not self.has_tool("search_files_keyword"):
            return None
        filters = {k: v for k, v in (("kind", kind), ("status", status), ("team", team)) if v}
        try:
            payload = self.call(
                "search_files_keyword",
                {
                    "query": "the",
                    "ancestor_folder_id": self.root_id,
                    "file_extensions": ["md"],
                    "mdfilters": [{"scope": TEMPLATE_SCOPE, "templateKey": key, "filters": filters}],
                    "fields": ["name", "parent", "sha1", "modified_at", f"metadata.{TEMPLATE_SCOPE}.{key}"],
                    "limit": limit,
                },
            )
            return listing(payload, tool="search_files_keyword").entries
        except BoxMemoryError as e:
            self.warnings.append(f"Box metadata search failed, answered from the indexes: {e}")
            return None
