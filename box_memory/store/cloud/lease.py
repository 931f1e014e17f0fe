"""The write lock on Box: `_box-memory.lock` (shared with the plugins) held as a lease.

Box has no delete tool and no atomic "create-or-fail" for a new version, so the lease is created
with `upload_file` (which does fail when the name exists), later taken by uploading a version and
reading it back after a settle time, renewed while held and released by a version whose
`renewed_at` is in the past. A race that slips through (two holders) can only lose an index entry,
which `drift` reports and `index-rebuild` repairs; it is never silent. The lease uses the cloud
store's public operations only (`LeaseStore`).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import secrets
import threading
import time
from typing import Any, Protocol

import orjson

from box_memory import settings
from box_memory.errors import BoxMemoryError, LockBusy, WriteRefused
from box_memory.format.model import LOCK_NAME, now_iso, parse_time
from box_memory.locks import holder_body
from box_memory.store.base import AlreadyExists, Entry

__all__ = ["FALLBACK_LOCK_NAME", "Lease", "LeaseStore"]

# The hosted upload_file takes text types only and `.lock` is not one of them (CONNECTORS.md):
# when Box refuses LOCK_NAME, every writer uses this name instead, recorded as `lock_name` in the
# config. Only ever this one fallback, so writers that have not read the config yet agree too.
FALLBACK_LOCK_NAME = "_box-memory.lock.json"
RELEASED_AT = "1970-01-01T00:00:00.000Z"


class LeaseStore(Protocol):
    """What the lease needs of the cloud store: its public operations, nothing private."""

    warnings: list[str]

    def drop_listings(self, *, fresh: bool = False) -> None: ...
    def stat(self, path: str) -> Entry | None: ...
    def read_bytes(self, path: str) -> bytes: ...
    def create_bytes(self, path: str, data: bytes) -> str | None: ...
    def write_version(self, path: str, file_id: str, data: bytes) -> str: ...
    def current_sha1(self, file_id: str) -> str | None: ...
    def current_version(self, file_id: str) -> tuple[str | None, str | None]: ...
    def root_listing_age(self) -> float | None: ...
    def current_text(self, file_id: str) -> str: ...
    def call(self, tool: str, args: dict[str, Any]) -> Any: ...
    def lock_name(self) -> str: ...
    def record_lock_name(self, name: str) -> None: ...


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


FIRST_LOOK_S = 2.0  # a root listing younger than this decides the first attempt at the lease


def _next_version(before: str | None, after: str | None) -> bool:
    """True when `after` is the etag of the version right after `before`: Box counts a file's
    etag up by one per new version (the emulator does too). Anything else (a gap, an etag that is
    not a number) is taken as another writer in between."""
    try:
        return before is not None and after is not None and int(after) == int(before) + 1
    except ValueError:
        return False


def _settle_floor() -> float:
    """Minimum wait between taking the lease and reading it back (env `BOX_MEMORY_LOCK_SETTLE_S`)."""
    return settings.lock_settle_s()


class Lease:
    """`_box-memory.lock` on Box: a lease taken by a new version and verified by reading it back."""

    def __init__(self, store: LeaseStore, *, writer: str, skill: str) -> None:
        self.store = store
        self.name = store.lock_name()
        self.token = secrets.token_hex(8)
        self.body: dict[str, Any] = {**holder_body(writer, skill), "token": self.token, "backend": "cloud"}
        self.stale_after, self.wait, self.renew_every = settings.lock_timing()
        if not settings.lock_renew_set():
            # Every renewal is a Box file version (and a details call): renew at half the stale
            # time, not a third, which still leaves half of it for one slow renewal.
            self.renew_every = max(self.renew_every, self.stale_after / 2)
        self.file_id: str | None = None
        self.sha1: str | None = None
        self.lost = False
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    def _bytes(self) -> bytes:
        return orjson.dumps(self.body)

    def _holder(self, item: Entry) -> tuple[float, dict[str, Any]]:
        """(seconds since the holder last renewed, its body); inf for a released lock."""
        body: dict[str, Any] = {}
        with contextlib.suppress(BoxMemoryError, orjson.JSONDecodeError):
            parsed = orjson.loads(self.store.read_bytes(self.name))
            body = parsed if isinstance(parsed, dict) else {}
        if body.get("released_at") or body.get("state") == "released":
            return math.inf, body
        renewed = parse_time(body.get("renewed_at"))
        last = renewed.timestamp() if renewed else item.modified
        return time.time() - last, body

    def _verified(self, etag: list[str | None] | None = None) -> bool:
        """True when the lock file still holds our last version (sha1 from a fresh details call);
        `etag` receives the etag Box reports for it."""
        if self.file_id is None:
            return False
        sha, now = self.store.current_version(self.file_id)
        if etag is not None:
            etag.append(now)
        if sha:
            return sha == self.sha1
        raw = self.store.current_text(self.file_id)
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
            return orjson.loads(raw).get("token") == self.token
        return False

    def acquire(self) -> None:
        st = self.store
        deadline = time.monotonic() + self.wait
        delay = 0.05
        holder: dict[str, Any] = {}
        # The root listing this command just read shows the lock as it is (a writer that takes it
        # meanwhile is seen below); an older one, or any retry, lists the root again.
        age = st.root_listing_age()
        fresh_look = age is not None and age < FIRST_LOOK_S
        while True:
            if not fresh_look:
                st.drop_listings()
            fresh_look = False
            item = st.stat(self.name)
            data = self._bytes()
            if item is None:
                try:
                    self.file_id, self.sha1 = st.create_bytes(self.name, data), _sha1(data)
                    break  # upload_file is create-or-fail: nobody else holds it
                except AlreadyExists:
                    pass
                except WriteRefused as e:
                    if e.rule != "file_type" or self.name != LOCK_NAME:
                        raise
                    self.name = FALLBACK_LOCK_NAME  # Box refuses `.lock`: the documented fallback
                    continue
            else:
                age, holder = self._holder(item)
                if age >= self.stale_after and item.file_id is not None:
                    started = time.monotonic()
                    self.file_id = st.write_version(self.name, item.file_id, data)
                    rtt = time.monotonic() - started
                    self.sha1 = _sha1(data)
                    # Anyone who saw the lock free uploads within about one round trip of us;
                    # whoever wrote last wins, and everyone else sees that on the read-back.
                    time.sleep(max(_settle_floor(), 2 * rtt))
                    if self._verified():
                        self.verified_at = time.monotonic()
                        break
                    self.file_id = self.sha1 = None
            if time.monotonic() >= deadline:
                who = ""
                if holder.get("writer"):
                    who = f" by {holder.get('writer')} (pid {holder.get('pid')} on {holder.get('host')})"
                raise LockBusy(
                    f"workspace is locked{who}; gave up after {self.wait:g}s "
                    f"(a lock older than {self.stale_after:g}s is taken over)"
                )
            time.sleep(delay + secrets.randbelow(50) / 1000)
            delay = min(delay * 2, 1.0)
        if self.name != LOCK_NAME:
            st.record_lock_name(self.name)
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True, name="box-memory-lease")
        self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.renew_every):
            with self._mutex:
                try:
                    if not self._verified():
                        self.lost = True
                        return
                    self.body["renewed_at"] = now_iso()
                    data = self._bytes()
                    self.store.call(
                        "upload_file_version", {"file_id": self.file_id, "file_content": data.decode()}
                    )
                    self.sha1 = _sha1(data)
                except BoxMemoryError:
                    return

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        with self._mutex:
            try:
                if self.lost or not self._verified():
                    self.store.warnings.append(
                        "the workspace lock was taken over by another writer while this command held it; "
                        "run `box-memory index-rebuild --check` to find and repair any lost index entry"
                    )
                    return
                self.body.update({"state": "released", "released_at": now_iso(), "renewed_at": RELEASED_AT})
                assert self.file_id is not None
                self.store.write_version(self.name, self.file_id, self._bytes())
            except BoxMemoryError as e:
                self.store.warnings.append(
                    f"could not release the workspace lock ({e}); other writers take it over after "
                    f"{self.stale_after:g}s"
                )
