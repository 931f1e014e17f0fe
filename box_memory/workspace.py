"""Open and initialise a workspace: resolution order, folder map, config, teams, user config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from box_memory import settings
from box_memory.errors import InvalidFile, InvalidInput, NotFound, Unreadable, WorkspaceNotFound
from box_memory.ids import validate_team
from box_memory.model import WorkspaceConfig, now_iso
from box_memory.paths import user_dirs
from box_memory.safeio import read_regular
from box_memory.store.base import Store, join

CONFIG_NAME = "_box-memory.json"
INDEX_NAME = "_index.json"
NOT_FOUND_MSG = "No box-memory workspace here - run `box-memory init` first"

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


@dataclass
class Workspace:
    store: Store
    config: WorkspaceConfig

    @property
    def name(self) -> str:
        return self.config.name

    def describe(self) -> str:
        return self.store.describe()

    def team_of(self, team: str | None) -> str:
        return team or str(self.config.settings["default_team"])

    def scope_root(self, team: str | None) -> str:
        """`""` for the default scope, `teams/<t>` for an explicit team."""
        return f"teams/{team}" if team else ""

    def memories_folder(self, team: str | None = None) -> str:
        return join(self.scope_root(team), "memories")

    def files_folder(self, team: str | None = None) -> str:
        return join(self.scope_root(team), "files")

    def companions_folder(self, team: str | None = None) -> str:
        return join(self.scope_root(team), "companions")

    def scopes(self) -> list[str | None]:
        return [None, *self.config.teams]

    def index_folders(self) -> list[str]:
        """Every folder that carries an `_index.json`, default scope first."""
        out: list[str] = []
        for scope in self.scopes():
            out.append(self.memories_folder(scope))
            out.append(self.files_folder(scope))
            if self.config.companion_layout == "folder" or self._has_index(self.companions_folder(scope)):
                out.append(self.companions_folder(scope))
        return out

    def _has_index(self, folder: str) -> bool:
        try:
            return self.store.exists(join(folder, INDEX_NAME))
        except Unreadable:
            return False  # a team the user may not read: its other folders report it once

    def folder_team(self, folder: str) -> str:
        parts = folder.split("/")
        if len(parts) >= 2 and parts[0] == "teams":
            return parts[1]
        return self.team_of(None)

    def require_team(self, team: str | None) -> str | None:
        if team is None:
            return None
        validate_team(team)
        if team not in self.config.teams:
            raise InvalidInput(f"unknown team {team!r} - create it with `box-memory team create {team}`")
        return team

    def save_config(self) -> None:
        self.config.data["updated_at"] = now_iso()
        self.store.write_bytes(CONFIG_NAME, self.config.to_bytes())


def load_config(store: Store) -> WorkspaceConfig:
    try:
        raw = store.read_bytes(CONFIG_NAME)
    except NotFound:
        raise WorkspaceNotFound(f"{NOT_FOUND_MSG} ({store.describe()} has no {CONFIG_NAME})") from None
    return WorkspaceConfig.parse(raw, f"{store.describe()}/{CONFIG_NAME}")


# --- user config ----------------------------------------------------------------------------


def read_user_config() -> dict[str, Any]:
    """The user config (default workspace...); a file that is not a JSON object is an error
    naming the file, never silently treated as empty."""
    f = user_dirs().user_config_file
    try:
        data = orjson.loads(read_regular(f, "config"))
    except FileNotFoundError:
        return {}
    except orjson.JSONDecodeError as e:
        raise InvalidFile(f"user config {f} is not valid JSON ({e}); fix or remove it") from None
    if not isinstance(data, dict):
        raise InvalidFile(f"user config {f} is not a JSON object; fix or remove it")
    return data


def read_user_config_for_update() -> tuple[dict[str, Any], list[str]]:
    """The user config for a command that rewrites it (init): a corrupt file is kept aside as
    `config.json.bak` (`.bak.1`, ... when taken) and reported, then replaced."""
    try:
        return read_user_config(), []
    except InvalidFile as e:
        f = user_dirs().user_config_file
        bak = f.with_name(f.name + ".bak")
        n = 0
        while bak.exists():
            n += 1
            bak = f.with_name(f"{f.name}.bak.{n}")
        f.replace(bak)
        return {}, [f"{e}; kept it as {bak} and wrote a new one"]


def write_user_config(data: dict[str, Any]) -> None:
    from box_memory.store import open_local

    d = user_dirs().config
    d.mkdir(parents=True, exist_ok=True)
    open_local(d).write_bytes("config.json", orjson.dumps(data, option=orjson.OPT_INDENT_2))


# --- resolution -----------------------------------------------------------------------------


def _find_upwards(start: Path) -> Path | None:
    for d in (start, *start.parents):
        if (d / CONFIG_NAME).is_file():
            return d
    return None


def resolve_spec(explicit: str | None, cwd: Path | None = None) -> str:
    """--workspace > BOX_MEMORY_WORKSPACE > nearest `_box-memory.json` upwards > user default."""
    if explicit:
        return explicit
    env = settings.workspace()
    if env:
        return env
    found = _find_upwards((cwd or Path.cwd()).resolve())
    if found is not None:
        return str(found)
    default = read_user_config().get("default_workspace")
    if isinstance(default, str) and default:
        return default
    raise WorkspaceNotFound(NOT_FOUND_MSG)


def store_for(spec: str) -> Store:
    if spec.startswith("box:"):
        from box_memory.store import open_cloud

        return open_cloud(spec[4:])
    from box_memory.store import open_local

    root = Path(spec).expanduser()
    if not root.is_dir():
        raise WorkspaceNotFound(f"{NOT_FOUND_MSG} ({root} is not a folder)")
    return open_local(root.resolve())


def open_workspace(explicit: str | None = None, cwd: Path | None = None) -> Workspace:
    store = store_for(resolve_spec(explicit, cwd))
    return Workspace(store, load_config(store))


# --- init -----------------------------------------------------------------------------------


def empty_index(folder: str, folder_id: str | None, tier: str) -> dict[str, Any]:
    from box_memory.index import build_maps

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
    from box_memory.index import refresh_rollup

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
        for folder in ("memories", "files", "_archive"):
            if not store.exists(folder):
                store.mkdir(folder)
                created.append(folder + "/")
        for scope in ws.scopes():
            created += ensure_scope_folders(ws, scope)
        if not store.exists("README.md"):
            store.create_bytes("README.md", README_TEXT.format(name=config.name).encode())
            created.append("README.md")
        if config_changed or reinit:
            ws.save_config()
            if not existed:
                created.append(CONFIG_NAME)
        refresh_rollup(ws)
    return ws, {"created": created, "existed": existed}


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
