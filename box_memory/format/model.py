"""Typed views over the workspace format (`docs/format.md`).

Values are kept as the dicts they were read from, so unknown keys survive a rewrite; the classes
here validate once at the boundary and give typed access. Plain value classes (`record`) keep
`write` and `recall` start-up cheap (no pydantic import, no dataclass built at import).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

from box_memory.errors import InvalidFile, InvalidInput
from box_memory.record import Frozen, Record

# The workspace's bookkeeping files, by name (docs/format.md), and the prefix of the hidden
# temp files a writer renames into place. Stores, services and the bounded reader all use these.
CONFIG_NAME = "_box-memory.json"
INDEX_NAME = "_index.json"
LOCK_NAME = "_box-memory.lock"
TMP_PREFIX = ".bm-tmp-"

# A team name as a single folder name: no separators, no control characters, not empty.
_SAFE_TEAM_RE = r"^[^/\\\x00-\x1f\x7f]{1,255}$"

KINDS = ("decision", "fact", "task", "observation", "reference", "note", "companion")
STATUSES = ("active", "draft", "superseded", "archived", "held")
WRITABLE_STATUSES = ("active", "draft")
REQUIRED_KEYS = ("id", "slug", "title", "kind", "status", "created_at", "updated_at")
INDEX_MAPS = ("by_id", "by_slug", "by_wikilink", "by_kind", "by_tag", "by_status", "by_companion_for")
HIDDEN_STATUSES = ("superseded", "archived")
# Statuses of memories that are current (recall ranks them first, listings show them).
LIVE = tuple(s for s in STATUSES if s not in HIDDEN_STATUSES)


def now_iso() -> str:
    """ISO-8601 UTC with `Z`, millisecond precision (a write's files share one clock)."""
    t = dt.datetime.now(dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def parse_time(value: object) -> dt.datetime | None:
    """Lenient ISO-8601 parse (Z or offset, date only); None when absent or unparseable."""
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    text = str(value).strip()
    if not text:
        return None
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r} (expected one of: {', '.join(KINDS)})")
    return kind


def check_status(status: str, allowed: tuple[str, ...] = STATUSES) -> str:
    if status not in allowed:
        raise InvalidInput(f"unknown status {status!r} (expected one of: {', '.join(allowed)})")
    return status


class Memory(Record):
    """One memory file: its frontmatter (all keys, unknown ones included) and body; `path` is
    workspace-relative POSIX."""

    _fields = ("meta", "body", "path")

    def __init__(self, meta: dict[str, Any], body: str, path: str = "") -> None:
        self.meta = meta
        self.body = body
        self.path = path

    @property
    def id(self) -> str:
        return str(self.meta["id"])

    @property
    def slug(self) -> str:
        return str(self.meta["slug"])

    @property
    def title(self) -> str:
        return str(self.meta["title"])

    @property
    def kind(self) -> str:
        return str(self.meta["kind"])

    @property
    def status(self) -> str:
        return str(self.meta["status"])

    @property
    def tags(self) -> list[str]:
        return [str(t) for t in self.meta.get("tags") or []]

    @property
    def superseded_by(self) -> str | None:
        v = self.meta.get("superseded_by")
        return str(v) if v else None

    @property
    def supersedes(self) -> list[str]:
        v = self.meta.get("supersedes") or []
        return [str(x) for x in (v if isinstance(v, list) else [v])]

    @classmethod
    def from_meta(cls, meta: dict[str, Any], body: str, path: str) -> Memory:
        """Validate frontmatter read from a file; InvalidFile names the file and the reason."""
        missing = [k for k in REQUIRED_KEYS if meta.get(k) in (None, "")]
        if missing:
            raise InvalidFile(f"{path}: frontmatter lacks {', '.join(missing)}")
        for key in ("id", "slug", "title", "kind", "status"):
            if not isinstance(meta[key], (str, int, float)):
                raise InvalidFile(f"{path}: frontmatter '{key}' is not a string")
        meta = dict(meta)
        for key in ("created_at", "updated_at", "expires_at"):
            if key in meta and meta[key] is not None and not isinstance(meta[key], str):
                meta[key] = str(meta[key])
        if meta["kind"] not in KINDS:
            raise InvalidFile(f"{path}: unknown kind {meta['kind']!r}")
        if meta["status"] not in STATUSES:
            raise InvalidFile(f"{path}: unknown status {meta['status']!r}")
        for key in ("tags", "related", "supersedes"):
            if key in meta and meta[key] is not None and not isinstance(meta[key], list):
                meta[key] = [meta[key]]
        conf = meta.get("confidence")
        if conf is not None and (not isinstance(conf, (int, float)) or not 0 <= conf <= 1):
            raise InvalidFile(f"{path}: confidence must be a number between 0 and 1")
        return cls(meta, body, path)

    def is_expired(self, now: dt.datetime | None = None) -> bool:
        exp = parse_time(self.meta.get("expires_at"))
        return exp is not None and exp <= (now or dt.datetime.now(dt.UTC))


def check_confidence(value: float | None) -> float | None:
    if value is None:
        return None
    if math.isnan(value) or not 0 <= value <= 1:
        raise InvalidInput("confidence must be between 0 and 1")
    return value


def index_entry(mem: Memory, *, filename: str, file_id: str | None, size_bytes: int) -> dict[str, Any]:
    """The `_index.json` entry for a memory (format spec section 5)."""
    cf = mem.meta.get("companion_for")
    companion_key = None
    sha = None
    if isinstance(cf, dict):
        companion_key = cf.get("file_id") or cf.get("local_path") or cf.get("filename")
        sha = cf.get("sha256") or cf.get("sha1")
    entry: dict[str, Any] = {
        "id": mem.id,
        "file_id": file_id,
        "filename": filename,
        "local_path": mem.path,
        "title": mem.title,
        "slug": mem.slug,
        "kind": mem.kind,
        "status": mem.status,
        "team": mem.meta.get("team"),
        "tags": mem.tags,
        "related": [str(r) for r in mem.meta.get("related") or []],
        "companion_for": str(companion_key) if companion_key is not None else None,
        "sha256": sha,
        "size_bytes": size_bytes,
        "created_at": mem.meta.get("created_at"),
        "updated_at": mem.meta.get("updated_at"),
        "superseded_by": mem.superseded_by,
    }
    if mem.meta.get("expires_at"):
        entry["expires_at"] = str(mem.meta["expires_at"])
    # For the timeline (`log`), which answers from the indexes: who wrote it, what it replaced.
    if mem.meta.get("agent"):
        entry["agent"] = str(mem.meta["agent"])
    if mem.supersedes:
        entry["supersedes"] = mem.supersedes
    return entry


def entry_path(folder: str, entry: Mapping[str, Any]) -> str:
    """Workspace-relative path of an index entry's memory file: its `local_path` (written since
    the first format version, absent from hand-made or plugin indexes), else `filename` in the
    folder whose `_index.json` holds it."""
    local = entry.get("local_path")
    if local:
        return str(local)
    return "/".join(p for p in (folder.strip("/"), str(entry.get("filename") or "").strip("/")) if p)


class IndexEntry(Frozen):
    """One `_index.json` entry of `folder`, typed and read-only, over the dict as it is on disk.

    `raw` is that dict itself, unknown keys and all: whatever rewrites an index writes `raw`, so
    the file does not change because it was read through this view.
    """

    _fields = ("folder", "raw")
    __slots__ = _fields

    folder: str
    raw: Mapping[str, Any]

    def __init__(self, folder: str, raw: Mapping[str, Any]) -> None:
        object.__setattr__(self, "folder", folder)
        object.__setattr__(self, "raw", raw)

    @property
    def path(self) -> str:
        return entry_path(self.folder, self.raw)

    @property
    def id(self) -> str:
        return str(self.raw.get("id") or "")

    @property
    def filename(self) -> str:
        return str(self.raw.get("filename") or "")

    @property
    def status(self) -> str:
        return str(self.raw.get("status") or "")

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind") or "")

    @property
    def title(self) -> str:
        return str(self.raw.get("title") or "")

    @property
    def updated_at(self) -> str:
        return str(self.raw.get("updated_at") or "")

    def get(self, key: str, default: Any = None) -> Any:
        """Any key, known or not, as stored."""
        return self.raw.get(key, default)


DEFAULT_SETTINGS: dict[str, Any] = {
    "default_team": "default",
    "companion_layout": "sibling",
    "include_superseded_in_recall": False,
    "rebuild_index_on_drift": True,
    "ai_recall_enabled": False,
    "ai_extract_enabled": False,
}


class WorkspaceConfig(Record):
    """`_box-memory.json`: `data` keeps every key as read; accessors apply the safe defaults."""

    _fields = ("data",)

    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.data = {} if data is None else data

    @property
    def name(self) -> str:
        return str(self.data.get("workspace_name") or "box-memory")

    @property
    def backend(self) -> str:
        return str(self.data.get("backend") or ("cloud" if self.data.get("workspace_root_id") else "local"))

    @property
    def settings(self) -> dict[str, Any]:
        s = dict(DEFAULT_SETTINGS)
        raw = self.data.get("settings")
        if isinstance(raw, dict):
            s.update(raw)
        return s

    @property
    def teams(self) -> list[str]:
        raw = self.data.get("teams")
        teams = [str(t) for t in raw] if isinstance(raw, list) else []
        default = str(self.settings["default_team"])
        return teams if default in teams else [default, *teams]

    @property
    def companion_layout(self) -> str:
        return "folder" if self.settings.get("companion_layout") == "folder" else "sibling"

    @property
    def memory_layout(self) -> str:
        """ "monthly" (new memories in `memories/YYYY-MM/`) or "flat" (the plugin's, the default)."""
        return "monthly" if self.settings.get("memory_layout") == "monthly" else "flat"

    @property
    def layout_chosen(self) -> bool:
        """`settings.memory_layout` is set (to anything): month folders may exist and are read."""
        raw = self.data.get("settings")
        return isinstance(raw, dict) and "memory_layout" in raw

    @property
    def folder_ids(self) -> dict[str, Any]:
        raw = self.data.get("folder_ids")
        return raw if isinstance(raw, dict) else {}

    def to_bytes(self) -> bytes:
        """The file's bytes: indented JSON, every key kept (each writer of the config uses this)."""
        import orjson

        return orjson.dumps(self.data, option=orjson.OPT_INDENT_2)

    @classmethod
    def parse(cls, raw: bytes, where: str) -> WorkspaceConfig:
        import orjson

        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            raise InvalidFile(f"{where} is not valid JSON ({e.args[0]}); fix or restore it") from None
        if not isinstance(data, dict):
            raise InvalidFile(f"{where} is not a JSON object; fix or restore it")
        for key in ("settings", "capabilities", "folder_ids"):
            if key in data and data[key] is not None and not isinstance(data[key], dict):
                raise InvalidFile(f"{where}: '{key}' is not an object")
        if "teams" in data and not isinstance(data["teams"], list):
            raise InvalidFile(f"{where}: 'teams' is not a list")
        for team in data.get("teams") or []:
            # Each team names a folder (teams/<team>/): refuse on open what would escape it.
            if not isinstance(team, str) or not re.compile(_SAFE_TEAM_RE).match(team) or team in (".", ".."):
                raise InvalidFile(
                    f"{where}: team {str(team)[:60]!r} is not a folder name inside teams/ "
                    "(it escapes the workspace or holds separators or control characters); fix the config"
                )
        return cls(data)

    @classmethod
    def new(
        cls, name: str, *, backend: str, layout: str, teams: list[str], root_id: str | None
    ) -> WorkspaceConfig:
        now = now_iso()
        return cls(
            {
                "version": 1,
                "schema_version": 2,
                "workspace_name": name,
                "workspace_root_id": root_id,
                "workspace_type": "folder",
                "backend": backend,
                "workspace_owner_app": "box-memory",
                "created_at": now,
                "updated_at": now,
                "tier": "unknown",
                "tier_detected_at": None,
                "capabilities": {
                    "custom_metadata_templates": False,
                    "template_create_permission": False,
                    "body_search": False,
                    "max_file_size_mb": None,
                    "box_ai_tools_available": False,
                    "ai_units_available": False,
                    "box_hubs": False,
                    "compliance": [],
                },
                "metadata_template_key": None,
                "metadata_template_created_at": None,
                "teams": teams,
                "agents": [],
                "settings": {**DEFAULT_SETTINGS, "companion_layout": layout},
                "folder_ids": {},
            }
        )
