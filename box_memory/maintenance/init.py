"""The `init` service: create (or complete) a workspace, local or on Box, and make it the default.

The local layout is made here (`init_workspace`); a Box workspace is provisioned by the cloud
store, which gets the same layout handed in (`WorkspaceBuilders`). Both answer with the same
`Result` shape; `cli/memory_cmds.py` only renders it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from box_memory.errors import InvalidInput
from box_memory.format.ids import validate_team
from box_memory.format.model import WorkspaceConfig, now_iso
from box_memory.result import Result
from box_memory.store.base import Store, join
from box_memory.workspace.index import build_maps, refresh_rollup
from box_memory.workspace.resolve import CONFIG_NAME, INDEX_NAME, MEMORY_LAYOUTS, Workspace, load_config

if TYPE_CHECKING:
    from box_memory.store import WorkspaceBuilders

README_TEXT = """# {name}

This folder is a box-memory workspace: durable, auditable memory for AI agents, kept as one markdown
file per memory.

- `memories/` and `teams/<team>/memories/` hold memories (`<kind>__<slug>.md`, YAML frontmatter).
- `files/` holds binaries; each may have a companion note (`<file>.md`) pinned to its sha256.
- `_index.json` files are derived indexes; `box-memory index-rebuild` regenerates them from the files.
- `_archive/` keeps archived memories and removed teams. Nothing is ever deleted.

Memories are append-only: a change is a new memory that supersedes the old one.
Use `box-memory recall "..."`, `box-memory write ...`, `box-memory status`.
"""

NO_PARENT_WARNING = (
    "no --parent given: the workspace folder is created in your Box root (All Files), which is "
    "broad; pass --parent FOLDER_ID to put it elsewhere"
)


DEFAULT_NAME = "box-memory"

# What an operating system leaves in any folder: not the user's files, so not "a non-empty folder".
_OS_LITTER = frozenset({".DS_Store", "desktop.ini", "Thumbs.db", ".localized"})


@dataclass(frozen=True)
class InitRequest:
    name: str | None = None  # None: the existing workspace's name, else DEFAULT_NAME
    path: Path | None = None  # local: the workspace folder (default: ./NAME, or Box Drive)
    parent: str | None = None  # cloud: the Box folder to create it in (default: the root)
    backend: str | None = None  # local | cloud (default: cloud when `parent` is given)
    teams: list[str] = field(default_factory=list)
    layout: str = "sibling"
    reinit: bool = False
    non_empty: bool = False  # a local folder that already holds other files may become a workspace
    memory_layout: str | None = None  # "flat" | "monthly": settings.memory_layout (None: leave it)


Confirm = Callable[[str, bool], bool]  # (question, default answer) -> yes


def init(req: InitRequest, *, confirm: Confirm | None = None) -> Result:
    """`confirm(question, default)` is asked (on a terminal) before a local workspace goes to the
    Box Drive folder found on this machine (without it the workspace stays in the current folder,
    with a warning naming the Box Drive folder), and before a folder that holds other files becomes
    a workspace (without it, that is refused unless `non_empty`)."""
    chosen = req.backend or ("cloud" if req.parent is not None else "local")
    if req.memory_layout is not None and req.memory_layout not in MEMORY_LAYOUTS:
        raise InvalidInput(
            f"unknown memory layout {req.memory_layout!r} (expected {' or '.join(MEMORY_LAYOUTS)})"
        )
    if chosen == "cloud":
        if req.path is not None:
            raise InvalidInput("--path is for a local workspace; a cloud one takes --parent FOLDER_ID")
        result = _init_cloud(req)
    elif chosen != "local":
        raise InvalidInput(f"unknown backend {chosen!r} (expected local or cloud)")
    else:
        result = _init_local(req, confirm)
    if req.memory_layout is not None:
        result.data["memory_layout"] = set_memory_layout(str(result.data["workspace"]), req.memory_layout)
    return result


def set_memory_layout(spec: str, layout: str) -> str:
    """Record `settings.memory_layout` in the workspace's config, under the lock (the config as
    it is then, every other key kept). Nothing moves: memories already written stay where they
    are and are still read; new ones go where the layout says (docs/format.md, section 10)."""
    from box_memory.workspace.resolve import open_workspace

    ws = open_workspace(spec)
    with ws.store.lock(writer="box-memory", skill="init"):
        ws.config = load_config(ws.store)
        settings = ws.config.data.get("settings")
        settings = dict(settings) if isinstance(settings, dict) else {}
        if settings.get("memory_layout") != layout:
            settings["memory_layout"] = layout
            ws.config.data["settings"] = settings
            ws.save_config()
    return layout


def _init_local(req: InitRequest, confirm: Confirm | None) -> Result:
    from box_memory.format.ids import validate_team, validate_title
    from box_memory.store import open_local
    from box_memory.workspace.resolve import read_user_config_for_update, write_user_config

    name = req.name or DEFAULT_NAME
    validate_title(name)
    for t in req.teams:  # every check before the folder is created: bad input changes nothing
        validate_team(t)
    if req.layout not in ("sibling", "folder"):
        raise InvalidInput(f"unknown layout {req.layout!r} (expected sibling or folder)")
    warnings: list[str] = []
    offered = None
    if req.path is None:
        offered, warnings = _offer_box_drive(name, confirm)
    root = (req.path or offered or Path.cwd() / name).expanduser()
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} exists and is not a folder")
    kept = _others_in(root)
    if kept:
        warnings += _agree_to_a_non_empty_folder(root, kept, req.non_empty, confirm)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        reason = (e.strerror or type(e).__name__).lower()
        raise InvalidInput(f"cannot create the workspace folder {root}: {reason}") from None
    root = root.resolve()
    ws, report = init_workspace(open_local(root), name, teams=req.teams, layout=req.layout, reinit=req.reinit)
    if report["existed"] and req.name and req.name != ws.name:
        warnings.append(
            f"{root} is already the workspace {ws.name!r}: kept that name ({req.name!r} was not "
            "used; init never renames a workspace)"
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
        "kept": kept,  # what the folder held before init, left as it was
    }
    if req.name and req.name != ws.name:
        data["name_kept_instead_of"] = req.name
    if req.path is None:
        from box_memory.paths import box_drive_roots

        drives = box_drive_roots()
        data["box_drive_root"] = str(drives[0]) if drives else None
    return Result(data, warnings=warnings)


def _others_in(root: Path) -> list[str]:
    """What a folder that is not yet a workspace already holds (sorted; folders end in `/`)."""
    if not root.is_dir() or (root / CONFIG_NAME).exists():
        return []
    try:
        entries = list(root.iterdir())
    except OSError:
        return []  # the mkdir/first write reports an unreadable folder
    return sorted(e.name + ("/" if e.is_dir() else "") for e in entries if e.name not in _OS_LITTER)


def _agree_to_a_non_empty_folder(
    root: Path, kept: list[str], non_empty: bool, confirm: Confirm | None
) -> list[str]:
    """A folder with the user's files becomes a workspace only when they say so (--non-empty, or
    yes on a terminal); the warnings to give when it does."""
    shown = ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else "")
    root = root.absolute()
    if not non_empty:
        question = (
            f"{root} already holds {len(kept)} files and folders ({shown}). Make it a box-memory "
            "workspace, adding its folders beside them (your files are kept as they are)?"
        )
        if confirm is None or not confirm(question, False):
            raise InvalidInput(
                f"{root} is not empty ({shown}): init would add its folders beside your files; "
                "nothing was created. Choose an empty or new folder, or pass --non-empty to make "
                "this one a workspace (your files are kept as they are)"
            )
    warnings: list[str] = []
    mds = sorted(p.name for p in (root / "memories").glob("*.md")) if (root / "memories").is_dir() else []
    if mds:
        warnings.append(
            f"memories/ already held {len(mds)} markdown file(s) ({', '.join(mds[:3])}"
            f"{', ...' if len(mds) > 3 else ''}): they are not box-memory memories until they have its "
            "frontmatter, and `status` and `index-rebuild` report them as files the index lacks"
        )
    return warnings


def _offer_box_drive(name: str, confirm: Confirm | None) -> tuple[Path | None, list[str]]:
    """Without --path: the Box Drive folder found on this machine, offered for the workspace."""
    from box_memory.format.names import check_name
    from box_memory.paths import box_drive_root_of, box_drive_roots

    drives = box_drive_roots()
    if not drives or box_drive_root_of(Path.cwd()) is not None:
        return None, []
    check_name(name, "workspace name")
    target = drives[0] / name
    if confirm is not None:
        question = f"Box Drive found at {drives[0]}. Create the workspace in {target}?"
        return (target if confirm(question, True) else None), []
    return None, [
        f"Box Drive found at {drives[0]}, but the workspace is made in the current folder: "
        f"pass --path {target} to keep it in Box"
    ]


def _init_cloud(req: InitRequest) -> Result:
    """Folder NAME under Box folder `parent` (default the root, after a warning)."""
    from box_memory.store import init_cloud_workspace

    data, warnings = init_cloud_workspace(
        req.name or DEFAULT_NAME,
        parent=req.parent or "0",
        teams=req.teams,
        layout=req.layout,
        reinit=req.reinit,
        builders=_cloud_builders(),
    )
    if req.parent is None:
        warnings.insert(0, NO_PARENT_WARNING)
    return Result(data, warnings=warnings)


def _cloud_builders() -> WorkspaceBuilders[Workspace]:
    """The workspace layout the cloud store's provisioning lays out (it imports none of it)."""
    from box_memory.store import WorkspaceBuilders
    from box_memory.workspace.resolve import read_user_config, write_user_config

    def set_default(spec: str) -> None:
        user = read_user_config()
        user["default_workspace"] = spec
        write_user_config(user)

    return WorkspaceBuilders(
        load_config=load_config,
        open=Workspace,
        lay_out=lay_out,
        refresh_rollup=refresh_rollup,
        set_default=set_default,
    )


# --- the local layout (the cloud store lays out the same through WorkspaceBuilders) ---------


def empty_index(folder: str, folder_id: str | None, tier: str) -> dict[str, Any]:
    return {
        "version": 1,
        "folder_id": folder_id,
        "folder_path": folder.rstrip("/") + "/",
        "updated_at": now_iso(),
        "tier": tier,
        "entry_count": 0,
        "entries": [],
        **build_maps([]),
    }


def init_workspace(
    store: Store,
    name: str,
    *,
    teams: list[str],
    layout: str,
    reinit: bool = False,
) -> tuple[Workspace, dict[str, Any]]:
    """Create what is missing; never reset what exists (idempotent). Returns (workspace, report)."""
    if layout not in ("sibling", "folder"):
        raise InvalidInput(f"unknown layout {layout!r} (expected sibling or folder)")
    for t in teams:
        validate_team(t)
    created: list[str] = []
    existed = store.exists(CONFIG_NAME)
    if existed:
        config = load_config(store)
        if reinit:
            # --reinit only fills in missing keys and folders; it never drops keys or memories.
            fresh = WorkspaceConfig.new(name, backend=store.kind, layout=layout, teams=[], root_id=None)
            for k, v in fresh.data.items():
                config.data.setdefault(k, v)
    else:
        config = WorkspaceConfig.new(
            name,
            backend=store.kind,
            layout=layout,
            teams=["default"],
            root_id=None,
        )
    ws = Workspace(store, config)
    config_changed = not existed
    for t in teams:
        if t not in config.teams:
            config.data["teams"] = [*config.teams, t]
            config_changed = True
    with store.lock(writer="box-memory", skill="init"):
        created += lay_out(ws)
        if config_changed or reinit:
            ws.save_config()
            if not existed:
                created.append(CONFIG_NAME)
        refresh_rollup(ws)
    return ws, {"created": created, "existed": existed}


def lay_out(ws: Workspace) -> list[str]:
    """The folders, empty indexes and README of a workspace, those that are missing (the caller
    holds the lock); what was made. The same for a local folder and a new Box workspace."""
    store = ws.store
    created: list[str] = []
    for folder in ("memories", "files", "_archive"):
        if not store.exists(folder):
            store.mkdir(folder)
            created.append(folder + "/")
    for scope in ws.scopes():
        created += ensure_scope_folders(ws, scope)  # mkdir -p: teams/<t>/ on the way
    if not store.exists("README.md"):
        store.create_bytes("README.md", README_TEXT.format(name=ws.config.name).encode())
        created.append("README.md")
    return created


def ensure_scope_folders(ws: Workspace, scope: str | None) -> list[str]:
    """Folders and empty indexes for one scope; only what is missing is created."""
    store = ws.store
    created: list[str] = []
    folders = [ws.memories_folder(scope), ws.files_folder(scope)]
    if ws.config.companion_layout == "folder":
        folders.append(ws.companions_folder(scope))
    for folder in folders:
        if not store.exists(folder):
            store.mkdir(folder)
            created.append(folder + "/")
        idx = join(folder, INDEX_NAME)
        if not store.exists(idx):
            fid = store.folder_id(folder)  # cloud: the folder's real Box id
            data = empty_index(folder, fid, str(ws.config.data.get("tier") or "unknown"))
            file_id = store.write_bytes(idx, orjson.dumps(data, option=orjson.OPT_INDENT_2))
            if fid is not None and file_id:
                # The index names its own Box file id (format spec section 5): known only once
                # uploaded, so the new index gets a second version that carries it.
                data["index_file_id"] = file_id
                store.write_bytes(idx, orjson.dumps(data, option=orjson.OPT_INDENT_2))
            created.append(idx)
    return created
