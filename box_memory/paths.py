"""One resolver for every user-level path. `BOX_MEMORY_HOME` puts them all under one folder."""

from __future__ import annotations

from pathlib import Path

from box_memory import settings
from box_memory.record import Frozen

APP = "box-memory"


class UserDirs(Frozen):
    """The user's folders for config, data, cache and state."""

    _fields = ("config", "data", "cache", "state")
    __slots__ = _fields

    config: Path
    data: Path
    cache: Path
    state: Path

    def __init__(self, config: Path, data: Path, cache: Path, state: Path) -> None:
        set_ = object.__setattr__
        set_(self, "config", config)
        set_(self, "data", data)
        set_(self, "cache", cache)
        set_(self, "state", state)

    @property
    def user_config_file(self) -> Path:
        return self.config / "config.json"

    @property
    def credentials_file(self) -> Path:
        """Secrets (tokens, client secret): mode 0600, never printed."""
        return self.config / "credentials.json"

    @property
    def brain_db(self) -> Path:
        return self.data / "brain.sqlite3"

    @property
    def recall_cache_dir(self) -> Path:
        return self.cache / "recall"


def user_dirs() -> UserDirs:
    root = settings.home()
    if root is not None:
        return UserDirs(root / "config", root / "data", root / "cache", root / "state")
    import platformdirs

    return UserDirs(
        Path(platformdirs.user_config_dir(APP)),
        Path(platformdirs.user_data_dir(APP)),
        Path(platformdirs.user_cache_dir(APP)),
        Path(platformdirs.user_state_dir(APP)),
    )


# --- where Box Drive is ----------------------------------------------------------------------------
#
# Box Drive is found by what it leaves on its platform, never by a folder's name alone: a `~/Box`
# folder on Linux (which Box Drive has no client for) is just a folder, and nothing there syncs.
# Where Box Drive puts things, per Box's "Technical Information for Box Drive Administrators"
# (https://support.box.com/hc/en-us/articles/360043695894) and "Using Box Drive on macOS File
# Provider Extension (FPE) mode" (https://support.box.com/hc/en-us/articles/4407737091219):
# - macOS, File Provider mode: the Box folder is `~/Library/CloudStorage/Box-Box`, a location
#   macOS itself creates for the File Provider domain Box Drive registers;
# - macOS, legacy kernel mode: the Box folder is `~/Box`, and Box Drive keeps its data (the cache)
#   in `~/Library/Application Support/Box/Box`;
# - Windows: the Box folder is `%USERPROFILE%\Box`, with its data (logs, cache) in
#   `%LOCALAPPDATA%\Box\Box`.
# Since Box Drive 2.3 an admin can move the folder elsewhere
# (https://support.box.com/hc/en-us/articles/360043697454); `BOX_MEMORY_BOX_DRIVE` names it then.


def box_drive_roots() -> list[Path]:
    """The Box Drive folders on this machine, in the order looked at; only existing folders."""
    named = settings.box_drive_folder()
    if named is not None:
        return [named] if named.is_dir() else []
    platform = settings.platform()
    home = settings.user_home()
    found: list[Path] = []
    if platform == "darwin":
        fpe = home / "Library" / "CloudStorage" / "Box-Box"
        if fpe.is_dir():
            found.append(fpe)
        legacy = home / "Box"
        if legacy.is_dir() and (home / "Library" / "Application Support" / "Box" / "Box").is_dir():
            found.append(legacy)
    elif platform == "win32":
        folder = home / "Box"
        local = settings.windows_local_appdata() or home / "AppData" / "Local"
        if folder.is_dir() and (local / "Box" / "Box").is_dir():
            found.append(folder)
    return found


def box_drive_root_of(path: Path) -> Path | None:
    """The Box Drive root that holds `path`, or None when it is not inside Box Drive."""
    roots = box_drive_roots()
    if not roots:  # no Box Drive here (always so on Linux): no need to resolve `path`
        return None
    real = path.resolve()
    for root in roots:
        r = root.resolve()
        if real == r or r in real.parents:
            return root
    return None
