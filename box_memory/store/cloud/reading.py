"""Reading from the cloud store: stat and listings as entries, file bytes accepted only when they
hash to the sha1 Box lists (text representation, else the download URL, retried with back-off),
the content cache, and many files prefetched concurrently.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator
from typing import Any

from box_memory import settings
from box_memory.box.payload import representation_pending
from box_memory.errors import (
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    ContentUnverified,
    NotFound,
    ToolMissing,
    Unreadable,
)
from box_memory.format.model import INDEX_NAME
from box_memory.format.safeio import LIMITS, check_size, kind_for
from box_memory.store.base import Entry, clean_path
from box_memory.store.cloud.folders import PREFETCH_CONCURRENCY, Folders
from box_memory.store.cloud.items import (
    as_object,
    box_time,
    envelope_text,
    is_folder,
    item_sha1,
    sha1_of,
    to_entry,
)

__all__ = ["MIB", "Reading"]

MIB = 1024 * 1024
PREFETCH_WAVE = 64  # files fetched per wave of concurrent calls (progress is counted per wave)
# An index this big is fetched as bytes (`get_download_url`, then a plain GET) rather than as the
# text of a `get_file_content` answer, where it arrives as JSON escaped inside the answer's JSON,
# twice where the answer also carries structured content: at 100,000 memories receiving 77 MB of
# indexes that way cost ~1.8 s of a fresh machine's first recall, and the server as much to encode.
DOWNLOAD_MIN_BYTES = MIB


def _content_retries() -> tuple[int, float]:
    """(attempts, first back-off in seconds) for a file read that does not verify
    (env `BOX_MEMORY_CONTENT_ATTEMPTS`, `BOX_MEMORY_CONTENT_BACKOFF_S`; tests shorten the wait)."""
    return settings.content_retries()


class Reading(Folders):
    """Reads over the cloud store's folders."""

    def signature(self, path: str) -> str | None:
        """From the listing this command holds: size, modified time, id, etag and sha1. A big
        folder read through its pinned index (pins.py) is not listed: its signature says so, and
        what changes is its index's."""
        fid = self._unlisted.get(clean_path(path))
        if fid is not None and fid not in self._listings:
            return f"unlisted:{fid}"
        try:
            e = self.stat(path)
        except Unreadable:
            return "denied"
        return None if e is None else f"{e.size}:{e.modified}:{e.file_id}:{e.etag}:{e.sha1}"

    def exists(self, path: str) -> bool:
        path = clean_path(path)
        if self._no_other_index and path.endswith("/" + INDEX_NAME) and path not in self._pins:
            parent = path.rpartition("/")[0]
            if parent not in self._unlisted and parent not in self._logical_ids():
                return False  # pins.py: the index search saw every index, and none here
        return self._item(path) is not None

    def stat(self, path: str) -> Entry | None:
        item = self._item(path)
        if item is None:
            return None
        if not is_folder(item):
            return to_entry(item)
        return self._folder_entry(clean_path(path), item)

    def _folder_entry(self, path: str, item: dict[str, Any]) -> Entry:
        """A folder's entry; its etag digests the children, so it changes whenever they do
        (Box folder etags only change when the folder itself is renamed or moved)."""
        children = self._items(path) or {}
        digest = hashlib.sha1(usedforsecurity=False)
        newest = 0.0
        for name in sorted(children):
            c = children[name]
            digest.update(f"{name}\0{c.get('id')}\0{c.get('etag')}\0{item_sha1(c)}\n".encode())
            newest = max(newest, box_time(c.get("modified_at")))
        name = path.rsplit("/", 1)[-1]
        return Entry(name, True, len(children), newest, str(item.get("id")), digest.hexdigest()[:20], None)

    def list_dir(self, path: str) -> list[Entry]:
        items = self._items(path)
        return [] if items is None else [to_entry(i) for i in items.values()]

    def list_names(self, path: str) -> list[str]:
        items = self._items(path)
        return [] if items is None else list(items)

    def _file_item(self, path: str) -> dict[str, Any]:
        item = self._item(path)
        if item is None:
            raise NotFound(f"{path} not found in the workspace")
        if is_folder(item):
            raise NotFound(f"{path} is a folder, not a file")
        return item

    def read_bytes(self, path: str) -> bytes:
        item = self._file_item(path)
        size = item.get("size")
        check_size(path, kind_for(path), size if isinstance(size, int) else None)  # before downloading
        return self._content(path, item)

    def read_if_local(self, path: str) -> bytes | None:
        """From the content cache only (by the listed sha1): never a download, and never a
        listing of a big folder read through its pinned index (its files' sha1s are not known)."""
        parent = clean_path(path).rpartition("/")[0]
        if self._unlisted.get(parent) not in (None, *self._listings):
            return None
        try:
            item = self._file_item(path)
        except (BoxMemoryError, OSError):
            return None
        sha = item_sha1(item)
        return self.cache.get(str(item["id"]), sha) if sha else None

    def _content(self, path: str, item: dict[str, Any]) -> bytes:
        """The file's bytes, accepted (and cached) only when they hash to the sha1 Box lists.

        `get_file_content` answers from Box's text representations: it may answer "still being
        generated" (`status: pending`) as a success (box-community/box-ai-agents-toolkit
        `box_api_file_representation.py`), and for some types the text is not byte-exact. So the
        text is kept only when its sha1 matches; otherwise the bytes of `get_download_url` are
        used; when neither verifies the read is retried with back-off (the sha1 re-read from
        `get_file_details` in case the file changed since it was listed), then fails with
        `ContentUnverified`. Nothing unverified is ever cached.
        """
        fid = str(item["id"])
        sha = item_sha1(item) or self._details_sha1(path, fid)
        if sha:
            cached = self.cache.get(fid, sha)
            if cached is not None:
                return cached
        attempts, backoff = _content_retries()
        why = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(backoff * 2 ** (attempt - 1))
                fresh = self._details_sha1(path, fid)
                if fresh and fresh != sha:
                    sha = fresh
                    item["sha1"] = fresh
                    cached = self.cache.get(fid, sha)
                    if cached is not None:
                        return cached
            data, why = self._fetch_verified(path, fid, sha, bytes_first=self._as_bytes(item, kind_for(path)))
            if data is not None:
                if sha:
                    self.cache.put(fid, sha, data)
                return data
        raise ContentUnverified(
            f"{path}: Box gave no content matching the file's sha1 after {attempts} attempts ({why})"
        )

    def _as_bytes(self, item: dict[str, Any], kind: str) -> bool:
        """Whether this file is read as bytes first (DOWNLOAD_MIN_BYTES), not as text."""
        size = item.get("size")
        return (
            kind == "index"
            and isinstance(size, int)
            and size >= DOWNLOAD_MIN_BYTES
            and self.has_tool("get_download_url")
        )

    def _details_sha1(self, path: str, file_id: str) -> str | None:
        try:
            details = self.call("get_file_details", {"file_id": file_id, "fields": ["sha1"]})
        except BoxToolError as e:
            if e.status == 404:
                self._listings.clear()
                raise NotFound(f"{path} not found in the workspace") from None
            return None
        return item_sha1(as_object(details) or {})

    def _fetch_verified(
        self, path: str, file_id: str, sha: str | None, *, bytes_first: bool = False
    ) -> tuple[bytes | None, str]:
        """(bytes whose sha1 is `sha`, "") or (None, what went wrong) - one try of each source;
        `bytes_first`: the download before the text (a big index, `_as_bytes`)."""
        problems: list[str] = []
        bytes_first = bytes_first and bool(sha)
        if bytes_first:
            try:
                data = b"".join(self._download(path, file_id))
            except BoxMemoryError as e:  # the text is tried next, and says what is wrong
                problems.append(f"download failed: {e}")
            else:
                if sha1_of(data) == sha:
                    return data, ""
                problems.append("the downloaded bytes do not match the sha1")
        try:
            text: str | None = self.box.call_text("get_file_content", {"file_id": file_id})
        except BoxToolError as e:
            if e.status == 404:
                self._listings.clear()
                raise NotFound(f"{path} not found in the workspace") from None
            text = None
            problems.append(f"no text representation: {e}")
        if text is not None:
            if representation_pending(text):
                problems.append("the text representation is still being generated")
            else:
                data = text.encode("utf-8")
                if sha and sha1_of(data) == sha:
                    return data, ""
                problems.append("the text representation is not byte-exact")
        if bytes_first:
            return None, "; ".join(problems)  # downloaded already
        if not self.has_tool("get_download_url"):
            problems.append("the server has no get_download_url to fetch the bytes")
            return None, "; ".join(problems)
        try:
            data = b"".join(self._download(path, file_id))
        except (NotFound, ToolMissing) as e:
            problems.append(str(e))
        except BoxToolError as e:
            problems.append(f"download failed: {e}")
        else:
            if not sha or sha1_of(data) == sha:  # the bytes themselves (no sha1 to check: not cached)
                return data, ""
            problems.append("the downloaded bytes do not match the sha1 either")
        return None, "; ".join(problems)

    def read_chunks(self, path: str, chunk_size: int = MIB) -> Iterator[bytes]:
        """The file's bytes, streamed from a short-lived download URL (companions hash binaries)."""
        item = self._file_item(path)
        return self._download(path, str(item["id"]), chunk_size)

    def _download(self, path: str, file_id: str, chunk_size: int = MIB) -> Iterator[bytes]:
        url = download_url(self.call("get_download_url", {"file_id": file_id}))
        if not url:
            raise BoxToolError(f"Box tool get_download_url gave no URL for {path}")
        return _stream(url, path, chunk_size)

    def _downloads(self, wanted: dict[str, str]) -> dict[str, bytes]:
        """{file id: bytes} of big files ({file id: path}) fetched as bytes, concurrently: one
        `get_download_url` call each, then a plain GET of the short-lived URL (valid 15 minutes:
        developer.box.com/guides/downloads/get-url). A file whose URL or download fails is left
        out (the caller reads it as text)."""
        from concurrent.futures import ThreadPoolExecutor

        ids = list(wanted)
        answers = self.box.call_many(
            [("get_download_url", {"file_id": fid}) for fid in ids], concurrency=PREFETCH_CONCURRENCY
        )

        def one(fid: str, answer: Any) -> bytes | None:
            url = None if isinstance(answer, BaseException) else download_url(answer)
            if not url:
                return None
            try:
                return b"".join(_stream(url, wanted[fid], MIB, client))
            except BoxMemoryError:
                return None

        import httpx2

        with httpx2.Client() as client, ThreadPoolExecutor(max_workers=PREFETCH_CONCURRENCY) as pool:
            got = list(pool.map(one, ids, answers))
        return {fid: data for fid, data in zip(ids, got, strict=True) if data is not None}

    def prefetch(self, paths: Iterable[str]) -> int:
        """Read many files concurrently into the text cache before they are read one by one.

        An optimisation only (a cold recall or a rebuild reads every memory): only text whose
        sha1 matches the listing is kept, anything else is left to `read_bytes`. Returns how many
        files were fetched.
        """
        todo: dict[str, str] = {}
        big: dict[str, str] = {}  # {file id: path} of the big indexes, fetched as bytes
        kinds: set[str] = set()
        for p in paths:
            try:
                item = self._item(p)
            except BoxMemoryError:
                continue
            if item is None or is_folder(item):
                continue
            size, kind = item.get("size"), kind_for(p)
            if isinstance(size, int) and size > LIMITS[kind]:
                continue  # over the cap: `read_bytes` refuses it before any download
            sha = item_sha1(item)
            if sha and not self.cache.has(str(item["id"]), sha):
                todo[str(item["id"])] = sha
                kinds.add(kind)
                if self._as_bytes(item, kind):
                    big[str(item["id"])] = p
        if len(todo) < 2:
            return 0
        fetched = 0
        for fid, data in (self._downloads(big) if big else {}).items():
            if sha1_of(data) == todo[fid]:
                self.cache.put(fid, todo.pop(fid), data)
                fetched += 1
        if not todo:
            return fetched
        from box_memory.progress import task

        ids, results = list(todo), []
        indexes = kinds == {"index"}
        label = "Reading folder indexes from Box" if indexes else "Reading memories from Box"
        with task(label, total=len(ids), unit="indexes" if indexes else "files") as bar:
            for start in range(0, len(ids), PREFETCH_WAVE):  # waves, so that progress can be shown
                wave = ids[start : start + PREFETCH_WAVE]
                calls = [("get_file_content", {"file_id": fid}) for fid in wave]
                results += self.box.call_many(calls, concurrency=PREFETCH_CONCURRENCY)
                bar.advance(len(wave))
        for (fid, sha), res in zip(todo.items(), results, strict=True):
            text = envelope_text(res)
            if text is not None and sha1_of(data := text.encode("utf-8")) == sha:
                self.cache.put(fid, sha, data)
                fetched += 1
        return fetched


def download_url(payload: Any) -> str | None:
    """The URL in a `get_download_url` answer (plain text, or an object naming it)."""
    if isinstance(payload, str) and payload.strip().startswith("http"):
        return payload.strip()
    if isinstance(payload, dict):
        for key in ("download_url", "downloadUrl", "url", "location"):
            if isinstance(payload.get(key), str):
                return str(payload[key])
    return None


def _stream(url: str, path: str, chunk_size: int, client: Any = None) -> Iterator[bytes]:
    """The bytes at a download URL; `client`: an open `httpx2.Client` to share (its TLS set-up,
    ~50 ms, is made once for many downloads), else one for this download."""
    import httpx2

    try:
        get = client.stream if client is not None else httpx2.stream
        with get("GET", url, timeout=60.0, follow_redirects=True) as resp:
            if resp.status_code == 404:
                raise NotFound(f"{path} could not be downloaded (the download link expired or is gone)")
            if resp.status_code >= 400:
                raise BackendUnavailable(f"downloading {path} from Box failed (HTTP {resp.status_code})")
            yield from resp.iter_bytes(chunk_size)
    except httpx2.HTTPError as e:
        raise BackendUnavailable(f"downloading {path} from Box failed ({type(e).__name__})") from None
