"""Text retrieval for new and changed files: Box AI summaries, file content, local files.

Box AI is metered, so a run makes at most `AI_BUDGET` AI calls, one at a time and at least
`AI_MIN_INTERVAL` seconds apart (an injectable clock keeps tests instant), and the first AI failure
turns AI off for the rest of the run. Content calls run on a bounded pool of workers; when the
backend itself becomes unavailable (server gone, auth lost) the pool stops taking new work at once
and the error is raised, so the run fails fast instead of retrying every remaining file.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from box_memory.brain.crawl import Progress, RemoteFile
from box_memory.brain.entry import clean_name, clean_text
from box_memory.brain.extract import OFFICE, NoText, office_text, pdf_text
from box_memory.brain.options import Settings
from box_memory.errors import BackendUnavailable, BoxMemoryError, BoxToolError
from box_memory.format.names import resolve_nfc
from box_memory.format.safeio import UnreadableFile, read_regular

MAX_SOURCE_BYTES = 50 * 1024 * 1024
AI_BUDGET = 5
AI_MIN_INTERVAL = 1.0
AI_TOOL = "ai_qa_single_file"
CONTENT_TOOL = "get_file_content"
DEFAULT_CONCURRENCY = 4
AI_QUESTION = (
    "Summarize this document for a knowledge base: its purpose, the key facts, decisions, "
    "owners, dates, recurring processes and open items."
)
BINARY_EXTENSIONS = frozenset(
    [
        "pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "png", "jpg", "jpeg", "gif", "bmp", "tiff",
        "webp", "heic", "zip", "gz", "tgz", "7z", "rar", "mp3", "mp4", "mov", "avi", "wav", "exe", "dll",
        "so", "bin", "dmg", "iso"
    ]
)  # fmt: skip
_NO_TEXT_CODES = frozenset({"bad_request", "file_size_limit_exceeded", "unsupported_file_type"})


@dataclass
class Fetched:
    """outcome: text | metadata_only | failed | skipped."""

    outcome: str
    text: str = ""
    source: str | None = None  # ai | content | file
    reason: str | None = None
    error: str | None = None


class Pacer:
    """Keeps calls at least `interval` seconds apart on `clock`, sleeping with `sleep`."""

    def __init__(self, interval: float, clock: Callable[[], float], sleep: Callable[[float], None]) -> None:
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self.last: float | None = None
        self.times: list[float] = []

    def wait(self) -> None:
        if self.last is not None:
            delay = self.last + self.interval - self.clock()
            if delay > 0:
                self.sleep(delay)
        self.last = self.clock()
        self.times.append(self.last)


def too_big(f: RemoteFile) -> bool:
    return f.size is not None and f.size > MAX_SOURCE_BYTES


def _big(f: RemoteFile) -> Fetched:
    return Fetched(
        "metadata_only", reason=f"source file is larger than 50 MB ({f.size} bytes): no text extraction"
    )


def _text_result(raw: str, settings: Settings, source: str) -> Fetched:
    text = clean_text(raw, settings.max_content_chars)
    if not text:
        return Fetched("metadata_only", reason="the text representation is empty")
    return Fetched("text", text=text, source=source)


def _short(exc: BaseException) -> str:
    return clean_name(str(exc), 300)


def classify_error(exc: BoxMemoryError) -> Fetched:
    """A per-file Box error: gone -> skipped, no text -> metadata only, anything else -> failed."""
    if isinstance(exc, BoxToolError):
        message = str(exc).lower()
        if exc.status == 404 or exc.box_code == "not_found":
            return Fetched("skipped", reason="not found in Box any more", error=_short(exc))
        if (
            exc.status in (400, 415, 422)
            or exc.box_code in _NO_TEXT_CODES
            or "text representation" in message
        ):
            return Fetched("metadata_only", reason=f"no text representation: {_short(exc)}")
    return Fetched("failed", error=_short(exc))


class BoxFetcher:
    """Text for Box files through Box MCP (`ai_qa_single_file`, `get_file_content`)."""

    def __init__(
        self,
        client: Any,
        settings: Settings,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        ai_budget: int = AI_BUDGET,
        ai_interval: float = AI_MIN_INTERVAL,
        progress: Progress | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.concurrency = max(1, int(concurrency))
        self.pacer = Pacer(ai_interval, clock, sleep)
        self.ai_budget = ai_budget
        self.ai_calls = 0
        self.ai_on = bool(settings.ai_summaries and client.has_tool(AI_TOOL))
        self.ai_error: str | None = None
        self.progress = progress

    def fetch(self, files: Sequence[RemoteFile]) -> dict[str, Fetched]:
        results: dict[str, Fetched] = {}
        if not self.settings.include_content:
            return {
                f.id: Fetched("metadata_only", reason="content import is off for this source") for f in files
            }
        pending: list[RemoteFile] = []
        for f in files:
            if self.ai_on and self.ai_calls < self.ai_budget:
                got = self._ai(f)
                if got is not None:
                    results[f.id] = got
                    continue
            if too_big(f):
                results[f.id] = _big(f)
            else:
                pending.append(f)
        results.update(self._content(pending, done=len(results), total=len(files)))
        return results

    def _ai(self, f: RemoteFile) -> Fetched | None:
        """One paced AI call; None means "fall back to the file content"."""
        from box_memory.box.payload import text_content

        self.pacer.wait()
        self.ai_calls += 1
        try:
            answer = text_content(
                AI_TOOL, self.client.call(AI_TOOL, {"file_id": f.id, "question": AI_QUESTION})
            )
        except BoxMemoryError as exc:
            self.ai_on = False  # the first failure turns Box AI off for the rest of the run
            self.ai_error = _short(exc)
            return None
        got = _text_result(answer, self.settings, "ai")
        return got if got.outcome == "text" else None

    def _content(self, files: list[RemoteFile], *, done: int, total: int) -> dict[str, Fetched]:
        results: dict[str, Fetched] = {}
        if not files:
            return results
        lock = threading.Lock()
        abort = threading.Event()
        fatal: list[BaseException] = []
        queue = iter(files)
        counter = [done]

        def worker() -> None:
            while not abort.is_set():
                with lock:
                    f = next(queue, None)
                if f is None:
                    return
                try:
                    got = _text_result(
                        self.client.call_text(CONTENT_TOOL, {"file_id": f.id}), self.settings, "content"
                    )
                except BackendUnavailable as exc:  # the server, auth or the tool itself is gone
                    with lock:
                        fatal.append(exc)
                    abort.set()
                    return
                except BoxMemoryError as exc:
                    got = classify_error(exc)
                with lock:
                    results[f.id] = got
                    counter[0] += 1

        workers = [
            threading.Thread(target=worker, name=f"brain-fetch-{n}", daemon=True)
            for n in range(min(self.concurrency, len(files)))
        ]
        for w in workers:
            w.start()
        while any(w.is_alive() for w in workers):
            for w in workers:
                w.join(0.1)
            if self.progress is not None:
                self.progress("fetch", counter[0], total)
        if fatal:
            raise fatal[0]
        return results


class LocalFetcher:
    """Text of files in a local (Box Drive) folder: UTF-8 text as is, PDF and Office text extracted
    (brain/extract.py), other binaries metadata only."""

    def __init__(self, root: Path, settings: Settings, *, progress: Progress | None = None) -> None:
        self.root = root
        self.settings = settings
        self.ai_calls = 0
        self.ai_error: str | None = None
        self.progress = progress

    def fetch(self, files: Sequence[RemoteFile]) -> dict[str, Fetched]:
        results: dict[str, Fetched] = {}
        for n, f in enumerate(files, 1):
            results[f.id] = self._one(f)
            if self.progress is not None and n % 50 == 0:
                self.progress("fetch", n, len(files))
        return results

    def _one(self, f: RemoteFile) -> Fetched:
        if not self.settings.include_content:
            return Fetched("metadata_only", reason="content import is off for this source")
        if too_big(f):
            return _big(f)
        ext = f.name.rsplit(".", 1)[-1].lower() if "." in f.name else ""
        extractable = ext == "pdf" or ext in OFFICE
        if ext in BINARY_EXTENSIONS and not extractable:
            return Fetched(
                "metadata_only", reason=f"no text representation for .{ext} files in a local folder"
            )
        path = resolve_nfc(self.root, f.id)  # ids are NFC; the disk may hold the NFD name
        try:
            if path.is_symlink():
                return Fetched("skipped", reason="is a symbolic link now")
            data = read_regular(path, "document", f.name, follow=False)
        except UnreadableFile as exc:
            return Fetched("skipped", reason=str(exc))
        except FileNotFoundError:
            return Fetched("skipped", reason="file vanished during the run")
        except OSError as exc:
            return Fetched("failed", error=f"cannot read: {exc.strerror or exc}")
        if extractable:
            limit = self.settings.max_content_chars
            try:
                raw = pdf_text(data, limit) if ext == "pdf" else office_text(data, ext, limit)
            except NoText as exc:
                return Fetched("metadata_only", reason=str(exc))
            return _text_result(raw, self.settings, "file")
        if b"\x00" in data:
            return Fetched("metadata_only", reason="no text representation (binary data)")
        try:
            raw = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return Fetched("metadata_only", reason="no text representation (not UTF-8 text)")
        return _text_result(raw, self.settings, "file")
