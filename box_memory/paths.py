"""One resolver for every user-level path. `BOX_MEMORY_HOME` puts them all under one folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from box_memory import settings

APP = "box-memory"


@dataclass(frozen=True)
class UserDirs:
    config: Path
    data: Path
    cache: Path
    state: Path

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
