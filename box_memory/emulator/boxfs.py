"""A Box-shaped view of a local folder (`BoxFS`): its Box bookkeeping and Box's JSON for items.

The bookkeeping is `boxstate`'s; this adds the representations Box gives its items (reference,
mini, standard, `fields` selections).
"""

from __future__ import annotations

from typing import Any

from box_memory.emulator.boxapi import ENTERPRISE_ID, ROOT_ID, ROOT_NAME, USER, Item, rfc3339
from box_memory.emulator.boxstate import BoxState


class BoxFS(BoxState):
    """The folder plus its Box bookkeeping, answering in Box's JSON shapes."""

    # -- Box JSON shapes ---------------------------------------------------------------------

    def ref(self, item: Item) -> dict[str, Any]:
        """Folder reference as used in parent and path_collection entries."""
        if item.is_root:
            return {"type": "folder", "id": ROOT_ID, "sequence_id": None, "etag": None, "name": ROOT_NAME}
        return {
            "type": item.type,
            "id": item.id,
            "sequence_id": str(item.sequence_id),
            "etag": str(item.etag),
            "name": item.name,
        }

    def mini(self, item: Item) -> dict[str, Any]:
        """The REST "mini" representation Box uses for folder listings by default."""
        out = self.ref(item)
        if item.type == "file":
            out = {
                "type": "file",
                "id": item.id,
                "file_version": self._version(item),
                "sequence_id": str(item.sequence_id),
                "etag": str(item.etag),
                "sha1": item.sha1,
                "name": item.name,
            }
        return out

    def _version(self, item: Item) -> dict[str, Any]:
        return {"type": "file_version", "id": item.version_id, "sha1": item.sha1}

    def full(self, item: Item) -> dict[str, Any]:
        """The standard representation of GET /files/:id and GET /folders/:id."""
        with self._lock:
            chain = self._ancestors(item)
        path_collection = {"total_count": len(chain), "entries": [self.ref(a) for a in chain]}
        parent = self.ref(chain[-1]) if chain else None
        if item.is_root:
            return {
                "type": "folder",
                "id": ROOT_ID,
                "sequence_id": None,
                "etag": None,
                "name": ROOT_NAME,
                "created_at": None,
                "modified_at": None,
                "description": "",
                "size": self.folder_size(item),
                "path_collection": path_collection,
                "created_by": {"type": "user", "id": "", "name": "", "login": ""},
                "modified_by": dict(USER),
                "trashed_at": None,
                "purged_at": None,
                "content_created_at": None,
                "content_modified_at": None,
                "owned_by": dict(USER),
                "shared_link": None,
                "folder_upload_email": None,
                "parent": None,
                "item_status": "active",
            }
        common: dict[str, Any] = {
            "type": item.type,
            "id": item.id,
            "sequence_id": str(item.sequence_id),
            "etag": str(item.etag),
            "name": item.name,
        }
        if item.type == "file":
            common.update({"sha1": item.sha1, "file_version": self._version(item)})
        common.update(
            {
                "description": item.description,
                "size": item.size if item.type == "file" else self.folder_size(item),
                "path_collection": path_collection,
                "created_at": rfc3339(item.created_at),
                "modified_at": rfc3339(item.modified_at),
                "trashed_at": None,
                "purged_at": None,
                "content_created_at": rfc3339(item.created_at),
                "content_modified_at": rfc3339(item.content_modified_at),
                "created_by": dict(USER),
                "modified_by": dict(USER),
                "owned_by": dict(USER),
                "shared_link": None,
                "parent": parent,
                "item_status": "active",
                "tags": list(item.tags),
            }
        )
        if item.type == "file":
            ext = item.name.rsplit(".", 1)[-1] if "." in item.name else ""
            common.update({"extension": ext, "version_number": str(item.version_number)})
        else:
            common["folder_upload_email"] = None
        return common

    def select(self, item: Item, fields: list[str] | None, *, default: str = "full") -> dict[str, Any]:
        """REST `fields` semantics: type, id and etag always, plus exactly the fields asked for."""
        if not fields:
            return self.mini(item) if default == "mini" else self.full(item)
        full = self.full(item)
        out: dict[str, Any] = {k: full[k] for k in ("type", "id", "etag") if k in full}
        for name in fields:
            if name in full:
                out[name] = full[name]
            elif name.startswith("metadata."):
                out.setdefault("metadata", {}).update(self._metadata_field(item, name))
        return out

    def _metadata_field(self, item: Item, spec: str) -> dict[str, Any]:
        # fields=metadata.<scope>.<templateKey> -> {"<scope>": {"<templateKey>": instance}}
        parts = spec.split(".", 2)
        if len(parts) != 3:
            return {}
        scope, key = parts[1], parts[2]
        full_scope = f"enterprise_{ENTERPRISE_ID}" if scope == "enterprise" else scope
        instance = item.metadata.get(f"{full_scope}.{key}")
        return {scope: {key: instance}} if instance is not None else {}
