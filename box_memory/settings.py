"""Every environment variable box-memory reads, in one place, each with its name, default and parsing.

Each accessor reads the environment when called (a test sets a variable for one test, a long-lived
server sees the environment it was started with), so nothing here is cached. The module imports
only the standard library: the CLI's quickest commands import it.

User-facing variables (README):
- `BOX_MEMORY_HOME`       one folder for config, data, cache and state instead of the platform dirs
- `BOX_MEMORY_WORKSPACE`  the workspace when `--workspace` is not given
- `BOX_MCP_URL`           the Box MCP server (the emulator, a proxy); Box's hosted server otherwise
- `BOX_ACCESS_TOKEN`      a Box access token that wins over the stored credentials (never refreshed)
- `BOX_CLIENT_ID`, `BOX_CLIENT_SECRET`  the Box app's OAuth client for `auth login`
- `BOX_OAUTH_AUTHORIZE_URL`, `BOX_OAUTH_TOKEN_URL`, `BOX_OAUTH_REVOKE_URL`  OAuth endpoint overrides
- `BOX_MEMORY_CREDENTIALS_STORE`  where `auth` keeps the Box tokens: `keychain`, `file`, or
  unset for the system keychain where there is one (the `keychain` extra) and the 0600 file elsewhere
- `VISUAL` / `EDITOR`     the editor `brain review edit` opens
- `BOX_MEMORY_BOX_DRIVE`  the Box Drive folder, when an admin moved it from where Box Drive puts it
- `BOX_MEMORY_DEADLINE_S` (180; `0` for none): how long one command's Box calls may take in all,
  retries and waits included (brain-sync and serve itself are exempt)
- `BOX_MEMORY_SERVE_TOKEN` a bearer token `serve --transport streamable-http` requires of callers
- `BOX_MEMORY_PAGER` / `PAGER`  the pager `log` uses on a terminal (`less -FRX`; empty or `cat`: none)

Tuning and test hooks (seconds unless named otherwise):
- `BOX_MEMORY_LOCK_STALE_S` (30), `BOX_MEMORY_LOCK_WAIT_S` (15), `BOX_MEMORY_LOCK_RENEW_S`
  (min(10, stale/3)): the workspace write lock
- `BOX_MEMORY_LOCK_SETTLE_S` (0.1): the cloud lease's wait before reading itself back
- `BOX_MEMORY_LIST_LIMIT` (1000): page size of cloud folder listings
- `BOX_MEMORY_BOX_UPLOAD_MAX_BYTES` (50,000,000, Box's direct upload): the largest file one cloud
  upload may carry; only a lower value is taken (tests use small indexes instead of 50 MB ones)
- `BOX_MEMORY_CONTENT_ATTEMPTS` (3), `BOX_MEMORY_CONTENT_BACKOFF_S` (1.0): cloud reads that do not verify
- `BOX_MEMORY_CATALOGUE_CACHE` (on; `0` turns it off): the cached Box MCP tool catalogue
- `BOX_MEMORY_TOOL_TIMEOUT_S` (300): one tool call of `box-memory serve`
- `BOX_MEMORY_PROGRESS_AFTER_S` (1.0): delay before a progress bar appears
- `BOX_MEMORY_READ_TIMEOUT_S` (30; `0` waits for ever): a read of a file in Box Drive that has
  not finished by then is given up (an online-only file Box Drive is still downloading)
- `BOX_MEMORY_CRASH_AT`, `BOX_MEMORY_FAIL_READ`, `BOX_MEMORY_FAIL_REPLACE`,
  `BOX_MEMORY_HANG_READ`: crash and fault injection for the integrity tests (unset in normal use)
- `BOX_MEMORY_PLATFORM` (`sys.platform`): the platform whose Box Drive is looked for (tests
  simulate macOS and Windows on Linux)
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

HOME = "BOX_MEMORY_HOME"
WORKSPACE = "BOX_MEMORY_WORKSPACE"
MCP_URL = "BOX_MCP_URL"
ACCESS_TOKEN = "BOX_ACCESS_TOKEN"  # noqa: S105 - the variable's name, not a secret
CLIENT_ID = "BOX_CLIENT_ID"
CLIENT_SECRET = "BOX_CLIENT_SECRET"  # noqa: S105 - the variable's name, not a secret
OAUTH_AUTHORIZE_URL = "BOX_OAUTH_AUTHORIZE_URL"
OAUTH_TOKEN_URL = "BOX_OAUTH_TOKEN_URL"  # noqa: S105 - the variable's name, not a secret
OAUTH_REVOKE_URL = "BOX_OAUTH_REVOKE_URL"
CREDENTIALS_STORE = "BOX_MEMORY_CREDENTIALS_STORE"
LOCK_STALE_S = "BOX_MEMORY_LOCK_STALE_S"
LOCK_WAIT_S = "BOX_MEMORY_LOCK_WAIT_S"
LOCK_RENEW_S = "BOX_MEMORY_LOCK_RENEW_S"
LOCK_SETTLE_S = "BOX_MEMORY_LOCK_SETTLE_S"
LIST_LIMIT = "BOX_MEMORY_LIST_LIMIT"
BOX_UPLOAD_MAX_BYTES = "BOX_MEMORY_BOX_UPLOAD_MAX_BYTES"
LISTING_TRUST_S = "BOX_MEMORY_LISTING_TRUST_S"
CONTENT_ATTEMPTS = "BOX_MEMORY_CONTENT_ATTEMPTS"
CONTENT_BACKOFF_S = "BOX_MEMORY_CONTENT_BACKOFF_S"
CATALOGUE_CACHE = "BOX_MEMORY_CATALOGUE_CACHE"
TOOL_TIMEOUT_S = "BOX_MEMORY_TOOL_TIMEOUT_S"
PROGRESS_AFTER_S = "BOX_MEMORY_PROGRESS_AFTER_S"
CRASH_AT = "BOX_MEMORY_CRASH_AT"
FAIL_READ = "BOX_MEMORY_FAIL_READ"
FAIL_REPLACE = "BOX_MEMORY_FAIL_REPLACE"
HANG_READ = "BOX_MEMORY_HANG_READ"
BOX_DRIVE = "BOX_MEMORY_BOX_DRIVE"
PLATFORM = "BOX_MEMORY_PLATFORM"
READ_TIMEOUT_S = "BOX_MEMORY_READ_TIMEOUT_S"
DEADLINE_S = "BOX_MEMORY_DEADLINE_S"
SYNC_CALLS_PER_MINUTE = "BOX_MEMORY_SYNC_CALLS_PER_MINUTE"
SERVE_TOKEN = "BOX_MEMORY_SERVE_TOKEN"  # noqa: S105 - the variable's name, not a secret
DEFAULT_DEADLINE_S = 180.0
PAGER = "BOX_MEMORY_PAGER"
DEFAULT_PAGER = "less -FRX"

DEFAULT_MCP_URL = "https://mcp.box.com/"


def _text(name: str) -> str | None:
    """The variable's value with surrounding blanks removed; None when unset or blank."""
    value = os.environ.get(name, "").strip()
    return value or None


def _float(name: str, default: float) -> float:
    """A number of seconds; `default` when unset, not a number, NaN or infinite (NaN compares
    false with everything: as a delay or a bound it would silently mean "never")."""
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if math.isfinite(value) else default


def _seconds(name: str, default: str) -> float:
    """A number of seconds that must be given right: a clear ValueError otherwise."""
    raw = os.environ.get(name, default)
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a number of seconds (0 or more), not {raw!r}")
    return value


# --- where things are ------------------------------------------------------------------------


def home() -> Path | None:
    """`BOX_MEMORY_HOME` (user paths all under one folder), or None for the platform's dirs."""
    value = os.environ.get(HOME)
    return Path(value).expanduser() if value else None


def workspace() -> str | None:
    """`BOX_MEMORY_WORKSPACE`: the workspace spec used when `--workspace` is not given."""
    return os.environ.get(WORKSPACE) or None


def user_home() -> Path:
    """The user's home folder as Box Drive sees it (`%USERPROFILE%` on Windows)."""
    if os.name == "nt":
        return Path(os.environ.get("USERPROFILE") or Path.home())
    return Path.home()


def platform() -> str:
    """`darwin`, `win32`, `linux`...: where Box Drive is looked for depends on it."""
    import sys

    return os.environ.get(PLATFORM) or sys.platform


def box_drive_folder() -> Path | None:
    """The Box Drive folder named by the user (Box Drive 2.3+ lets an admin move it)."""
    v = os.environ.get(BOX_DRIVE)
    return Path(v).expanduser() if v else None


def windows_local_appdata() -> Path | None:
    v = os.environ.get("LOCALAPPDATA")
    return Path(v) if v else None


def editor() -> str | None:
    """The user's editor command (`$VISUAL`, then `$EDITOR`), not yet split into words."""
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or None


def pager() -> str:
    """The pager command for long listings (`$BOX_MEMORY_PAGER`, `$PAGER`, else `less -FRX`), not
    yet split into words; empty means none."""
    return os.environ.get(PAGER, os.environ.get("PAGER", DEFAULT_PAGER))


def pager_environment() -> dict[str, str]:
    """The pager's environment: this one, with `LESS=FRX` (git's: quit if the text fits one
    screen, keep colour) unless the user set `LESS`."""
    return {**os.environ, "LESS": os.environ.get("LESS", "FRX")}


def present(names: Iterable[str]) -> dict[str, str]:
    """The variables among `names` that are set and not empty, by name, in `names` order (used to
    pass this run's environment on, e.g. into a crontab line)."""
    return {name: os.environ[name] for name in names if os.environ.get(name)}


# --- Box -------------------------------------------------------------------------------------


def mcp_url() -> str:
    """`BOX_MCP_URL` (the emulator, a proxy), else Box's hosted MCP server."""
    return os.environ.get(MCP_URL) or DEFAULT_MCP_URL


def access_token() -> str | None:
    return _text(ACCESS_TOKEN)


def client_id() -> str | None:
    return _text(CLIENT_ID)


def client_secret() -> str | None:
    return _text(CLIENT_SECRET)


def oauth_authorize_url() -> str | None:
    return _text(OAUTH_AUTHORIZE_URL)


def oauth_token_url() -> str | None:
    return _text(OAUTH_TOKEN_URL)


def oauth_revoke_url() -> str | None:
    return _text(OAUTH_REVOKE_URL)


def credentials_store() -> str:
    """`BOX_MEMORY_CREDENTIALS_STORE` in lower case ("keychain", "file"), "auto" when unset (the
    system keychain where there is one, else the 0600 file); auth refuses any other value."""
    return (_text(CREDENTIALS_STORE) or "auto").lower()


def catalogue_cache() -> bool:
    """Whether the Box MCP tool catalogue may be cached (`BOX_MEMORY_CATALOGUE_CACHE=0` turns it off)."""
    return os.environ.get(CATALOGUE_CACHE, "1") != "0"


def list_limit() -> int:
    """Page size of cloud folder listings, 1..1000 (tests force paging with a small one)."""
    try:
        return max(1, min(1000, int(os.environ.get(LIST_LIMIT, "1000"))))
    except ValueError:
        return 1000


def box_upload_max_bytes(published: int) -> int:
    """The largest file one cloud upload may carry: Box's `published` limit, or
    BOX_MEMORY_BOX_UPLOAD_MAX_BYTES when set lower (never higher: Box would refuse it)."""
    try:
        return max(1, min(published, int(os.environ.get(BOX_UPLOAD_MAX_BYTES, "") or published)))
    except ValueError:
        return published


def listing_trust_s() -> float:
    """How long Box folder listings kept from an earlier command may be reused while the workspace
    root is unchanged (store/cloud/listings.py); 0 lists every folder on every command."""
    return max(0.0, _float(LISTING_TRUST_S, 60.0))


def content_retries() -> tuple[int, float]:
    """(attempts 1..10, first back-off in seconds) for a cloud file read that does not verify."""
    try:
        attempts = max(1, min(10, int(os.environ.get(CONTENT_ATTEMPTS, "3"))))
        backoff = max(0.0, float(os.environ.get(CONTENT_BACKOFF_S, "1.0")))
    except ValueError:
        return 3, 1.0
    return attempts, backoff


_long_by_design = 0  # commands running inside `no_deadline()` (nested: counted)


@contextlib.contextmanager
def no_deadline() -> Iterator[None]:
    """Inside: `deadline_s()` is None - a command long by design (`fetch`, paced under Box's rate
    limit) has no command deadline, as brain-sync has none."""
    global _long_by_design
    _long_by_design += 1
    try:
        yield
    finally:
        _long_by_design -= 1


def deadline_s() -> float | None:
    """Seconds one command's Box calls may take in all (`BOX_MEMORY_DEADLINE_S`, default 180):
    None when 0 (no deadline) or inside `no_deadline()`; a value that is not a number, negative or
    over a day is the default."""
    if _long_by_design:
        return None
    value = _float(DEADLINE_S, DEFAULT_DEADLINE_S)
    if value == 0:
        return None
    return value if 0 < value <= 86400 else DEFAULT_DEADLINE_S


def sync_calls_per_minute(default: float) -> float:
    """The pace of a brain-sync's Box calls (`BOX_MEMORY_SYNC_CALLS_PER_MINUTE`): 0 is unpaced;
    a value that is not a number or negative is `default`."""
    value = _float(SYNC_CALLS_PER_MINUTE, default)
    return value if value >= 0 else default


# --- the write lock --------------------------------------------------------------------------


def lock_timing() -> tuple[float, float, float]:
    """(stale_after, wait, renew_every) seconds of the workspace write lock; a bad number is an
    error (ValueError) rather than a silent default, as it always was."""
    stale = _seconds(LOCK_STALE_S, "30")
    wait = _seconds(LOCK_WAIT_S, "15")
    renew = _seconds(LOCK_RENEW_S, str(min(10.0, stale / 3)))
    return stale, wait, renew


def lock_renew_set() -> bool:
    """Whether `BOX_MEMORY_LOCK_RENEW_S` was given (the cloud lease then renews exactly that often)."""
    return LOCK_RENEW_S in os.environ


def lock_settle_s() -> float:
    """Minimum wait between taking the cloud lease and reading it back."""
    try:
        return max(0.0, float(os.environ.get(LOCK_SETTLE_S, "0.1")))
    except ValueError:
        return 0.1


# --- the MCP server and the terminal ---------------------------------------------------------


def tool_timeout_s() -> float:
    """Seconds one tool call of `box-memory serve` may run: (0, 1 day), else the default 300."""
    value = _float(TOOL_TIMEOUT_S, 300.0)
    return value if 0 < value < 86400 else 300.0


def serve_token(name: str | None = None) -> str | None:
    """The bearer token `serve --transport streamable-http` requires: the variable `name` (its
    `--token-env`), else `BOX_MEMORY_SERVE_TOKEN`; None when unset or blank (no token)."""
    return _text(name or SERVE_TOKEN)


def progress_after_s() -> float:
    """Seconds a task runs before its progress bar appears (tests set 0)."""
    return _float(PROGRESS_AFTER_S, 1.0)


def read_timeout_s() -> float:
    """Seconds a read of a file in Box Drive may take (safeio): [0, 1 day], else the default 30;
    0 turns the timeout off."""
    value = _float(READ_TIMEOUT_S, 30.0)
    return value if 0 <= value <= 86400 else 30.0


# --- test hooks ------------------------------------------------------------------------------


def crash_at() -> str:
    """`BOX_MEMORY_CRASH_AT=<step>`: the named step at which a writer kills itself (crash tests)."""
    return os.environ.get(CRASH_AT, "")


def injected_faults(op: str) -> dict[str, int]:
    """`BOX_MEMORY_FAIL_READ` / `BOX_MEMORY_FAIL_REPLACE` (op "read" / "replace"), each
    `<name>:<n>[,<name>:<n>...]`: the first n attempts on files whose path ends with <name> fail
    as a Windows sharing violation would."""
    var = {"read": FAIL_READ, "replace": FAIL_REPLACE}[op]
    out: dict[str, int] = {}
    for item in os.environ.get(var, "").split(","):
        name, _, n = item.rpartition(":")
        if name and n.isascii() and n.isdigit():  # int("²") raises
            out[name] = int(n)
    return out


def injected_hangs() -> dict[str, float]:
    """`BOX_MEMORY_HANG_READ=<name>[:<seconds>][,...]`: reads of files whose path ends with <name>
    stall that long (default an hour) before they start, as a read of an online-only file does
    while Box Drive downloads it, or for ever when the network is gone."""
    out: dict[str, float] = {}
    for item in os.environ.get(HANG_READ, "").split(","):
        name, _, secs = item.partition(":")
        if name:
            digits = secs.replace(".", "", 1)
            out[name] = float(secs) if digits.isascii() and digits.isdigit() else 3600.0
    return out
