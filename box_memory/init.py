"""The `init` service: create (or complete) a workspace, local or on Box, and make it the default.

The local layout comes from `workspace.init_workspace`; a Box workspace is provisioned by the cloud
store. Both answer with the same `Result` shape; `cli/memory_cmds.py` only renders it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from box_memory.errors import InvalidInput
from box_memory.result import Result

if TYPE_CHECKING:
    from box_memory.store import WorkspaceBuilders
    from box_memory.workspace import Workspace

NO_PARENT_WARNING = (
    "no --parent given: the workspace folder is created in your Box root (All Files), which is "
    "broad; pass --parent FOLDER_ID to put it elsewhere"
)


@dataclass(frozen=True)
class InitRequest:
    name: str = "box-memory"
    path: Path | None = None  # local: the workspace folder (default: ./NAME, or Box Drive)
    parent: str | None = None  # cloud: the Box folder to create it in (default: the root)
    backend: str | None = None  # local | cloud (default: cloud when `parent` is given)
    teams: list[str] = field(default_factory=list)
    layout: str = "sibling"
    reinit: bool = False


def init(req: InitRequest, *, confirm: Callable[[str], bool] | None = None) -> Result:
    """`confirm(question)` is asked (on a terminal) before a local workspace goes to the Box Drive
    folder found on this machine; without it the workspace stays in the current folder, with a
    warning naming the Box Drive folder."""
    chosen = req.backend or ("cloud" if req.parent is not None else "local")
    if chosen == "cloud":
        if req.path is not None:
            raise InvalidInput("--path is for a local workspace; a cloud one takes --parent FOLDER_ID")
        return _init_cloud(req)
    if chosen != "local":
        raise InvalidInput(f"unknown backend {chosen!r} (expected local or cloud)")
    return _init_local(req, confirm)


def _init_local(req: InitRequest, confirm: Callable[[str], bool] | None) -> Result:
    from box_memory.ids import validate_team, validate_title
    from box_memory.store import open_local
    from box_memory.workspace import init_workspace, read_user_config_for_update, write_user_config

    validate_title(req.name)
    for t in req.teams:  # every check before the folder is created: bad input changes nothing
        validate_team(t)
    if req.layout not in ("sibling", "folder"):
        raise InvalidInput(f"unknown layout {req.layout!r} (expected sibling or folder)")
    warnings: list[str] = []
    offered = None
    if req.path is None:
        offered, warnings = _offer_box_drive(req.name, confirm)
    root = (req.path or offered or Path.cwd() / req.name).expanduser()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} exists and is not a folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = (e.strerror or type(e).__name__).lower()
        raise InvalidInput(f"cannot create the workspace folder {root}: {reason}") from None
    root = root.resolve()
    ws, report = init_workspace(
        open_local(root), req.name, teams=req.teams, layout=req.layout, reinit=req.reinit
    )
    cfg, cfg_warnings = read_user_config_for_update()
    warnings += cfg_warnings
    cfg["default_workspace"] = str(root)
    write_user_config(cfg)
    data = {
        "workspace": str(root),
        "backend": "local",
        "name": ws.name,
        "existed": report["existed"],
        "created": report["created"],
        "teams": ws.config.teams,
        "layout": ws.config.companion_layout,
        "default": True,
    }
    if req.path is None:
        from box_memory.names import box_drive_roots

        drives = box_drive_roots()
        data["box_drive_root"] = str(drives[0]) if drives else None
    return Result(data, warnings=warnings)


def _offer_box_drive(name: str, confirm: Callable[[str], bool] | None) -> tuple[Path | None, list[str]]:
    """Without --path: the Box Drive folder found on this machine, offered for the workspace."""
    from box_memory.names import box_drive_root_of, box_drive_roots, check_name

    drives = box_drive_roots()
    if not drives or box_drive_root_of(Path.cwd()) is not None:
        return None, []
    check_name(name, "workspace name")
    target = drives[0] / name
    if confirm is not None:
        question = f"Box Drive found at {drives[0]}. Create the workspace in {target}?"
        return (target if confirm(question) else None), []
    return None, [
        f"Box Drive found at {drives[0]}, but the workspace is made in the current folder: "
        f"pass --path {target} to keep it in Box"
    ]


def _init_cloud(req: InitRequest) -> Result:
    """Folder NAME under Box folder `parent` (default the root, after a warning)."""
    from box_memory.store import init_cloud_workspace

    data = init_cloud_workspace(
        req.name,
        parent=req.parent or "0",
        teams=req.teams,
        layout=req.layout,
        reinit=req.reinit,
        builders=_cloud_builders(),
    )
    warnings = list(data.pop("warnings", []))
    if req.parent is None:
        warnings.insert(0, NO_PARENT_WARNING)
    return Result(data, warnings=warnings)


def _cloud_builders() -> WorkspaceBuilders[Workspace]:
    """The workspace layout the cloud store's provisioning lays out (it imports none of it)."""
    from box_memory.index import refresh_rollup
    from box_memory.store import WorkspaceBuilders
    from box_memory.workspace import (
        README_TEXT,
        Workspace,
        ensure_scope_folders,
        load_config,
        read_user_config,
        write_user_config,
    )

    def set_default(spec: str) -> None:
        user = read_user_config()
        user["default_workspace"] = spec
        write_user_config(user)

    return WorkspaceBuilders(
        readme_text=README_TEXT,
        load_config=load_config,
        open=Workspace,
        ensure_scope_folders=ensure_scope_folders,
        refresh_rollup=refresh_rollup,
        set_default=set_default,
    )
