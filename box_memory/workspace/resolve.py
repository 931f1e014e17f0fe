"""Open and initialise a workspace: resolution order, folder map, config, teams, user config."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from box_memory import settings
from box_memory.errors import (
    BackendUnavailable,
    InvalidFile,
    InvalidInput,
    NotFound,
    Unreadable,
    WorkspaceNotFound,
)
from box_memory.format.ids import validate_team
from box_memory.format.model import CONFIG_NAME, INDEX_NAME, WorkspaceConfig, now_iso
from box_memory.format.safeio import read_regular
from box_memory.paths import user_dirs
from box_memory.record import Record
from box_memory.store.base import Store, join

NOT_FOUND_MSG = "No box-memory workspace here - run `box-memory init` first"


MEMORY_LAYOUTS = ("flat", "monthly")
SHARD_NAME = r"[0-9]{4}-(?:0[1-9]|1[0-2])\Z"  # memories/YYYY-MM/ (layout "monthly")


def shard_name(when: datetime | None = None) -> str:
    """The month folder a memory written at `when` (UTC, default now) goes to: `YYYY-MM`."""
    return (when or datetime.now(UTC)).strftime("%Y-%m")


class Workspace(Record):
    """A workspace: its store and its config (compared and shown by those two)."""

    _fields = ("store", "config")

    def __init__(self, store: Store, config: WorkspaceConfig) -> None:
        self.store = store
        self.config = config
        # Month folders found under each memories folder, with the folder's signature when found.
        self._shards: dict[str, tuple[str | None, list[str]]] = {}

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

    def write_folder(self, team: str | None = None) -> str:
        """Where a new memory of this scope goes: `memories/` (the plugin's layout), or under
        `settings.memory_layout: "monthly"` this month's `memories/YYYY-MM/` (UTC), so a write
        rewrites an index of one month's memories rather than one that grows with the workspace."""
        base = self.memories_folder(team)
        return join(base, shard_name()) if self.config.memory_layout == "monthly" else base

    def memory_folders(self, scope: str | None = None) -> list[str]:
        """The scope's memory folders: `memories/`, then its month folders, oldest first. Month
        folders are looked for only when the workspace has chosen a memory layout (the key is set,
        whatever its value, so switching back to "flat" keeps reading them); a workspace of the
        plugin's own making costs no listing here."""
        base = self.memories_folder(scope)
        if not self.config.layout_chosen:
            return [base]
        return [base, *self._month_folders(base)]

    def _month_folders(self, base: str) -> list[str]:
        """`base/YYYY-MM` folders, from one listing of `base` (names only; a local one is kept
        while the folder's own signature is unchanged)."""
        local = self.store.local_root is not None
        try:
            sig = self.store.signature(base) if local else None
            hit = self._shards.get(base)
            if hit is not None and sig is not None and hit[0] == sig:
                return hit[1]
            shard = re.compile(SHARD_NAME)  # compiled on first use (`re` keeps it)
            out = [join(base, n) for n in sorted(self.store.subfolders(base, shard.match))]
        except Unreadable:
            return []  # a team the user may not read: its other folders report it once
        self._shards[base] = (sig, out)
        return out

    def scopes(self) -> list[str | None]:
        return [None, *self.config.teams]

    def index_folders(self) -> list[str]:
        """Every folder that carries an `_index.json`, default scope first (a scope's month
        folders right after its `memories/`)."""
        out: list[str] = []
        for scope in self.scopes():
            out.extend(self.memory_folders(scope))
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
        data = self.store.complete_config(self.config.data)  # e.g. the Box folder ids resolved
        self.store.write_bytes(CONFIG_NAME, WorkspaceConfig(data).to_bytes())


def load_config(store: Store) -> WorkspaceConfig:
    try:
        raw = store.read_bytes(CONFIG_NAME)
    except NotFound:
        short = store.listing_incomplete("")
        if short is not None:  # the config may be on the page that failed: not "no workspace"
            raise BackendUnavailable(
                f"cannot tell whether {store.describe()} is a workspace: the listing of its folder "
                f"did not finish ({short}); try again"
            ) from None
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
    return _resolve(explicit, cwd)[0]


def _resolve(explicit: str | None, cwd: Path | None = None) -> tuple[str, str]:
    """The workspace spec and what named it: `explicit`, `env`, `found` or `default`."""
    if explicit:
        return explicit, "explicit"
    env = settings.workspace()
    if env:
        return env, "env"
    found = _find_upwards((cwd or Path.cwd()).resolve())
    if found is not None:
        return str(found), "found"
    default = read_user_config().get("default_workspace")
    if isinstance(default, str) and default:
        return default, "default"
    raise WorkspaceNotFound(NOT_FOUND_MSG)


def store_for(spec: str, named_by: str = "explicit") -> Store:
    if spec.startswith("box:"):
        from box_memory.store import open_cloud

        return open_cloud(spec[4:])
    from box_memory.store import open_local

    root = Path(spec).expanduser()
    if not root.is_dir():
        raise WorkspaceNotFound(_missing_folder(root, named_by))
    return open_local(root.resolve())


def _missing_folder(root: Path, named_by: str) -> str:
    """A named workspace folder that is not there: say the path and who named it, not "here"."""
    what = "is not a folder" if root.exists() else "does not exist"
    if named_by == "env":
        return f"BOX_MEMORY_WORKSPACE names {root}, which {what}"
    if named_by == "default":
        return (
            f"the default workspace {root} (set by `box-memory init`) {what}: run `box-memory init` "
            "again, or pass --workspace"
        )
    return f"workspace folder {root} {what}"


def open_workspace(explicit: str | None = None, cwd: Path | None = None) -> Workspace:
    store = store_for(*_resolve(explicit, cwd))
    return Workspace(store, load_config(store))
