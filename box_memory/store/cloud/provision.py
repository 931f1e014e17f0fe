"""Provisioning a workspace on Box: its folder under a parent, config, tier and metadata template.

The workspace layout itself (config loading, scope folders and their indexes, README, rollup, the
user's default workspace) belongs to the workspace layer, which passes it in as `WorkspaceBuilders`:
nothing here imports the layers above the store.
"""

from __future__ import annotations

from typing import Any

from box_memory.box.payload import conflicts
from box_memory.errors import BoxMemoryError, BoxToolError, InvalidInput, NotFound
from box_memory.format.ids import validate_team, validate_title
from box_memory.format.model import CONFIG_NAME, WorkspaceConfig, now_iso
from box_memory.store.base import W, WorkspaceBuilders
from box_memory.store.cloud.items import as_object, is_folder, logical_keys
from box_memory.store.cloud.state import open_session
from box_memory.store.cloud.store import CloudStore
from box_memory.store.cloud.tier import detect_tier, ensure_template

__all__ = ["init_cloud_workspace"]


def init_cloud_workspace(
    name: str,
    *,
    parent: str = "0",
    teams: list[str] | None = None,
    layout: str = "sibling",
    reinit: bool = False,
    builders: WorkspaceBuilders[W],
) -> tuple[dict[str, Any], list[str]]:
    """Create (or reuse) folder NAME under Box folder `parent` as a workspace; idempotent.

    Folders via create_folder (a 409 reuses the existing one), the config with `folder_ids`, empty
    indexes, the rollup and README (the workspace layer's `builders`); tier and capabilities from
    `who_am_i` and the tool catalogue; the `boxMemory` metadata template where the tier allows it.
    Returns the report and the warnings (the init service makes them its Result).
    """

    validate_title(name)
    if name != name.strip() or name in (".", ".."):
        raise InvalidInput(f"{name!r} cannot name a Box folder (no leading/trailing spaces)")
    parent = str(parent).strip()
    if not parent.isdigit():
        raise InvalidInput(f"--parent must be a Box folder id (digits), not {parent!r}")
    if layout not in ("sibling", "folder"):
        raise InvalidInput(f"unknown layout {layout!r} (expected sibling or folder)")
    teams = list(dict.fromkeys(teams or []))
    for t in teams:
        validate_team(t)

    box = open_session()
    store: CloudStore | None = None
    warnings: list[str] = []
    try:
        root_id, created_root = _workspace_folder(box, name, parent)
        store = CloudStore(root_id, client=box, own_client=False)
        if created_root:
            store.mark_empty("")

        existed = store.exists(CONFIG_NAME)
        created: list[str] = []
        if existed:
            config = builders.load_config(store)
            if reinit:
                fresh = WorkspaceConfig.new(name, backend="cloud", layout=layout, teams=[], root_id=root_id)
                for k, v in fresh.data.items():
                    config.data.setdefault(k, v)
        else:
            config = WorkspaceConfig.new(
                name, backend="cloud", layout=layout, teams=["default"], root_id=root_id
            )
        changed = not existed or reinit
        if not config.data.get("workspace_root_id"):
            config.data["workspace_root_id"] = root_id
            changed = True
        for t in teams:
            if t not in config.teams:
                config.data["teams"] = [*config.teams, t]
                changed = True
        template: dict[str, Any] | None = None
        if not existed or reinit or config.data.get("tier") in (None, "unknown"):
            tier, caps, template = detect_tier(box)
            config.data["tier"] = tier
            config.data["tier_detected_at"] = now_iso()
            merged = dict(config.data.get("capabilities") or {})
            merged.update(caps)
            config.data["capabilities"] = merged
            changed = True
        ws = builders.open(store, config)
        with store.lock(writer="box-memory", skill="init"):
            created += builders.lay_out(ws)  # folders, empty indexes, README: as a local workspace
            caps_now = config.data.get("capabilities") or {}
            if (
                caps_now.get("template_create_permission")
                and not config.data.get("metadata_template_key")
                and box.has_tool("create_metadata_template")
            ):
                try:
                    config.data["metadata_template_key"] = ensure_template(box, template)
                    config.data["metadata_template_created_at"] = now_iso()
                    changed = True
                except BoxMemoryError as e:
                    warnings.append(f"could not create the boxMemory metadata template ({e}); indexes only")
            ids_before = dict(config.folder_ids)
            resolved = store.resolved_folder_ids()
            missing_ids = "root" not in ids_before or any(
                k not in ids_before and p in resolved for p, k in logical_keys(config.teams).items()
            )
            if changed or missing_ids:
                ws.save_config()
                if not existed:
                    created.append(CONFIG_NAME)
            cfg_after = store.config_data()
            if isinstance(cfg_after.get("folder_ids"), dict):
                config.data["folder_ids"] = cfg_after["folder_ids"]
            builders.refresh_rollup(ws)
        builders.set_default(f"box:{root_id}")
        warnings += store.warnings
        store.warnings = []
        return {
            "workspace": f"box:{root_id}",
            "backend": "cloud",
            "name": config.name,
            "folder_id": root_id,
            "parent": parent,
            "existed": existed,
            "created": created,
            "teams": config.teams,
            "layout": config.companion_layout,
            "tier": config.data.get("tier"),
            "capabilities": config.data.get("capabilities"),
            "metadata_template_key": config.data.get("metadata_template_key"),
            "folder_ids": config.folder_ids or ids_before,
            "web_url": f"https://app.box.com/folder/{root_id}",
            "default": True,
        }, warnings
    finally:
        if store is not None:
            store.close()
        box.close()


def _workspace_folder(box: Any, name: str, parent: str) -> tuple[str, bool]:
    """(folder id, created?) of folder NAME under `parent`: a 409 reuses the existing folder."""
    try:
        obj = as_object(box.call("create_folder", {"name": name, "parent_folder_id": parent}))
    except BoxToolError as e:
        if e.status == 404:
            raise NotFound(f"Box folder {parent} (--parent) not found") from None
        if e.status != 409:
            raise
        obj = next((c for c in conflicts(e.body) if is_folder(c)), None)
        if obj is None:
            found = CloudStore(parent, client=box, own_client=False)
            try:
                items = found.list_dir("")
            finally:
                found.close()
            # Exact name first, then case-insensitively (Box names are unique case-insensitively).
            there = next((i for i in items if i.name == name), None) or next(
                (i for i in items if i.name.casefold() == name.casefold()), None
            )
            if there is None or not there.is_dir:
                raise InvalidInput(f"a file named {name!r} exists in Box folder {parent}") from None
            obj = {"id": there.file_id}
        if obj.get("id") is None:
            raise BoxToolError(f"Box tool create_folder gave no folder id for {name!r}") from None
        return str(obj["id"]), False
    if obj is None or obj.get("id") is None:
        raise BoxToolError(f"Box tool create_folder gave no folder id for {name!r}")
    return str(obj["id"]), True
