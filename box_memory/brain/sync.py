"""One brain-sync run end to end, and the `brain-sync` entry point over configured sources.

A run: take the source's lock (busy -> `skipped`), connect (Box MCP with a read-only tool
allowlist, or the local folder), crawl, compare with what is stored, fetch text for new and changed
files only, then apply every item change in ONE transaction. A failed run therefore changes no
item; deletion happens only after a complete crawl. The review pass runs last and can never fail
the sync.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box_memory import settings
from box_memory.brain.crawl import LIST_TOOL, BoxLister, CrawlResult, LocalLister, Progress, RemoteFile, crawl
from box_memory.brain.db import BrainStore, Change, ItemRow, Source, default_path
from box_memory.brain.entry import LOCAL_URL, render, text_hash
from box_memory.brain.fetch import (
    AI_BUDGET,
    AI_MIN_INTERVAL,
    DEFAULT_CONCURRENCY,
    BoxFetcher,
    Fetched,
    LocalFetcher,
)
from box_memory.brain.options import Settings
from box_memory.brain.pace import (
    BOX_CALLS_PER_MINUTE,
    DEFAULT_CALLS_PER_MINUTE,
    CallPacer,
    PacedClient,
    duration,
)
from box_memory.brain.review import REVIEW_EVERY_S
from box_memory.brain.single_run import source_lock
from box_memory.errors import BackendUnavailable, BoxMemoryError, InvalidInput, ToolMissing
from box_memory.format.model import now_iso, parse_time
from box_memory.redaction import redact
from box_memory.result import Result

SYNC_TOOLS = frozenset(
    {
        "list_folder_content_by_folder_id",
        "get_file_content",
        "get_file_details",
        "get_folder_details",
        "ai_qa_single_file",
        "who_am_i",
    }
)
"""The only tools a sync may call (docs/spec/brain-sync.md step 1), enforced by the client."""
MAX_ITEM_DETAILS = 500
_FOLDER_ID = re.compile(r"^\d{1,30}$")
_NO_WORKSPACE: Any = object()  # "not opened yet": the review opens the source's workspace by key


def one_line(text: str) -> str:
    return " ".join(str(text).split())[:1000]


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@dataclass
class SyncRequest:
    """What `brain-sync` was asked to do. None settings keep the source's stored values."""

    folder_id: str | None = None
    path: str | Path | None = None
    workspace: str | None = None
    max_items: int | None = None
    interval: int | None = None
    include_content: bool | None = None
    ai_summaries: bool | None = None
    max_content_chars: int | None = None
    review: bool | None = None
    if_due: bool = False
    enabled: bool | None = None
    only_workspace: bool | None = None
    all_enabled: bool = False  # no folder option: run every enabled source now, due or not

    def setting_changes(self) -> dict[str, Any]:
        return {
            "interval_minutes": self.interval,
            "max_items": self.max_items,
            "include_content": self.include_content,
            "ai_summaries": self.ai_summaries,
            "max_content_chars": self.max_content_chars,
            "review": self.review,
            "enabled": self.enabled,
            "only_workspace": self.only_workspace,
        }


@dataclass
class SyncOptions:
    """How to run (not persisted): concurrency, clocks and client knobs, injectable for tests."""

    concurrency: int = DEFAULT_CONCURRENCY
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    now: Callable[[], dt.datetime] = _utcnow
    client_kwargs: dict[str, Any] = field(default_factory=dict)
    token_source: Any = None
    ai_budget: int = AI_BUDGET
    ai_interval: float = AI_MIN_INTERVAL
    progress: Progress | None = None
    store_path: Path | None = None
    # The pace of a Box source's tool calls (brain/pace.py): None reads
    # BOX_MEMORY_SYNC_CALLS_PER_MINUTE (default 95% of Box's 1000 a minute per user); 0 is unpaced.
    calls_per_minute: float | None = None
    notice: Callable[[str], None] | None = None  # one line of the run's plan (the pace, the wait)

    def pace(self) -> float:
        if self.calls_per_minute is not None:
            return max(0.0, float(self.calls_per_minute))
        return settings.sync_calls_per_minute(DEFAULT_CALLS_PER_MINUTE)


@dataclass
class RunResult:
    source: Source
    status: str  # completed | partial | failed | skipped
    run_id: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    complete: bool | None = None
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    error_code: str | None = None
    exit_code: int = 0
    mcp_calls: int = 0
    ai_calls: int = 0
    duration_ms: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    review: dict[str, Any] | None = None
    items: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    pace: dict[str, Any] | None = None  # calls_per_minute, planned_calls, estimated_s, held_s

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source.to_dict(),
            "status": self.status,
            "run_id": self.run_id,
            "counts": self.counts,
            "complete": self.complete,
            "incomplete_reasons": self.reasons,
            "error": self.error,
            "error_code": self.error_code,
            "mcp_calls": self.mcp_calls,
            "ai_calls": self.ai_calls,
            "duration_ms": self.duration_ms,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "review": self.review,
            "items": self.items,
            "warnings": self.warnings,
            "pace": self.pace,
        }

    def summary(self) -> str:
        head = f"brain-sync {self.source.label}: {self.status}"
        if self.status == "skipped":
            return f"{head} - {self.reasons[0] if self.reasons else 'nothing to do'}"
        if self.status == "failed":
            return f"{head} - {self.error}"
        c = self.counts
        calls = (
            f"{self.mcp_calls} MCP call{'s' if self.mcp_calls != 1 else ''}, "
            if self.source.kind == "box"
            else ""
        )
        text = (
            f"{head} - {c.get('discovered', 0)} discovered, {c.get('indexed', 0)} indexed, "
            f"{c.get('unchanged', 0)} unchanged, {c.get('skipped', 0)} skipped, "
            f"{c.get('deleted', 0)} deleted, "
            f"{c.get('failed', 0)} failed ({calls}{self.duration_ms / 1000:.1f} s)"
        )
        if self.review and self.review.get("status") == "done" and self.review.get("candidates"):
            text += f"; {self.review['candidates']} review candidate(s)"
        return text


@dataclass
class SyncReport:
    runs: list[RunResult]
    warnings: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """The envelope status: error if a run failed, else partial, else ok, skipped if all skipped."""
        statuses = [r.status for r in self.runs]
        if "failed" in statuses:
            return "error"
        if "partial" in statuses:
            return "partial"
        if statuses and all(s == "skipped" for s in statuses):
            return "skipped"
        return "ok"

    @property
    def exit_code(self) -> int:
        return next((r.exit_code for r in self.runs if r.status == "failed"), 0)

    @property
    def result(self) -> Result:
        """The `brain-sync` service result: every run, the counts summed, one error per failed run."""
        totals: dict[str, int] = {}
        for r in self.runs:
            for k, v in r.counts.items():
                totals[k] = totals.get(k, 0) + v
        errors = [
            {"code": r.error_code or "failed", "message": f"{r.source.label}: {r.error}"}
            for r in self.runs
            if r.status == "failed"
        ]
        return Result(
            {"runs": [r.to_dict() for r in self.runs], "counts": totals, "status": self.status},
            warnings=[*self.warnings, *(w for r in self.runs for w in r.warnings)],
            errors=errors,
            status=self.status,
            exit_code=self.exit_code,
        )


# ---------------------------------------------------------------------------------------------
# Sources


def source_key(workspace: str, kind: str, server: str, root: str) -> str:
    """A source is (workspace, server/kind, root folder): changing the folder makes a new source."""
    return f"{workspace}|{kind}:{server}|{root}"


NO_WORKSPACE_MSG = (
    "a Box Brain source belongs to a workspace and none was found: give --workspace, run it inside "
    "a workspace or set one up with `box-memory init`; nothing was synced"
)


def _workspace(explicit: str | None) -> tuple[str, Any]:
    """(workspace key, workspace) a new or named source belongs to; refused without one (its
    review compares against that workspace's memories, --only-workspace keeps its hits there).

    A local workspace is opened (cheap, and it validates an explicit `--workspace`); a cloud one
    is only named here and opened by the review pass if it runs, so an unchanged sync makes no
    call besides its listing.
    """
    from box_memory.errors import WorkspaceNotFound
    from box_memory.workspace.resolve import open_workspace, resolve_spec

    try:
        spec = resolve_spec(explicit)
    except WorkspaceNotFound:
        raise WorkspaceNotFound(NO_WORKSPACE_MSG) from None
    if spec.startswith("box:"):
        return spec, _NO_WORKSPACE
    try:
        ws = open_workspace(spec)
    except WorkspaceNotFound as exc:
        if explicit:
            raise
        raise WorkspaceNotFound(f"{NO_WORKSPACE_MSG} ({spec}: {exc})") from None
    return ws.describe(), ws


def _open_by_key(key: str) -> Any:
    """The workspace a source belongs to, for the review pass (None when it cannot be opened)."""
    from box_memory.workspace.resolve import open_workspace

    if not key:
        return None
    try:
        return open_workspace(key)
    except Exception:
        return None


def is_due(source: Source, now: dt.datetime) -> tuple[bool, dt.datetime | None]:
    last = parse_time(source.last_run_at)
    if last is None:
        return True, None
    due_at = last + dt.timedelta(minutes=source.settings.interval_minutes)
    return now >= due_at, due_at


def brain_sync(req: SyncRequest, opts: SyncOptions | None = None) -> SyncReport:
    """Run one source (`folder_id` or `path`), or every configured source that is due."""
    opts = opts or SyncOptions()
    warnings: list[str] = []
    if req.folder_id is not None and req.path is not None:
        raise InvalidInput("give --folder-id or --path, not both")
    changes = req.setting_changes()
    given = {k: v for k, v in changes.items() if v is not None}
    Settings().updated(given, warnings)  # validate before anything is written
    store_path = opts.store_path or default_path()

    if req.folder_id is None and req.path is None:
        if given:
            raise InvalidInput("settings are saved per source: give --folder-id or --path with them")
        if not store_path.exists():
            raise InvalidInput(
                "no Box Brain source configured yet: run `box-memory brain-sync --folder-id ID` "
                "or `--path DIR` once"
            )
        with BrainStore(store_path) as store:
            sources = store.sources()
            if not sources:
                raise InvalidInput("no Box Brain source configured yet: give --folder-id ID or --path DIR")
            runs = [run_source(store, s, opts, if_due=not req.all_enabled) for s in sources]
        return SyncReport(runs, warnings)
    if req.all_enabled:
        raise InvalidInput("--all runs every enabled source: give it without --folder-id/--path")

    ws_key, ws = _workspace(req.workspace)
    if req.folder_id is not None:
        folder = str(req.folder_id).strip()
        if not _FOLDER_ID.match(folder):
            raise InvalidInput(f"--folder-id must be a Box folder id (digits), not {req.folder_id!r}")
        if folder == "0":
            warnings.append("folder 0 is your whole Box account: a broad crawl (bounded by --max-items)")
        kind, server, root = "box", settings.mcp_url(), folder
    else:
        path = Path(str(req.path)).expanduser()
        kind, server, root = "local", "local", str(path.resolve())
    key = source_key(ws_key, kind, server, root)
    if kind == "local" and not Path(root).is_dir():
        known = False
        if store_path.exists():
            with BrainStore(store_path) as peek:
                known = peek.source_by_key(key) is not None
        if not known:
            raise BackendUnavailable(
                f"folder {root} does not exist or is not a folder (is Box Drive running?)"
            )

    with BrainStore(store_path) as store:
        source, created = store.ensure_source(
            key=key, workspace=ws_key, kind=kind, server=server, root=root, settings=Settings().updated(given)
        )
        if not created and given:
            source = store.save_settings(source, source.settings.updated(given))
        run = run_source(store, source, opts, if_due=req.if_due, workspace=ws)
    return SyncReport([run], warnings)


# ---------------------------------------------------------------------------------------------
# One run


def run_source(
    store: BrainStore, source: Source, opts: SyncOptions, *, if_due: bool, workspace: Any = _NO_WORKSPACE
) -> RunResult:
    """Run one source unless it is disabled, not due (`if_due`) or another process is running it."""
    if not source.settings.enabled:
        return RunResult(
            source,
            "skipped",
            reasons=[f"source {source.id} is disabled (`box-memory brain source enable {source.id}`)"],
        )
    if if_due:
        due, due_at = is_due(source, opts.now())
        if not due:
            when = due_at.isoformat(timespec="seconds").replace("+00:00", "Z") if due_at else "later"
            return RunResult(source, "skipped", reasons=[f"not due until {when}"])
    with source_lock(source.id) as held:
        if not held:
            return RunResult(
                source, "skipped", reasons=["another brain-sync run of this source is in progress"]
            )
        return _run_locked(store, source, opts, workspace)


def _open_client(source: Source, opts: SyncOptions, pacer: CallPacer | None = None) -> Any:
    token = opts.token_source
    if token is None:
        from box_memory.box.auth import TokenSource

        token = TokenSource()
        if token.source == "none":
            token.access_token()  # "Not logged in" at once, before the network stack loads
    from box_memory.box.client import BoxMCPClient

    # Long by design (a whole source, paced by Box's rate limits): no command deadline. A
    # Retry-After is waited in full (up to the 120 s one call may wait), not cut to 30 s.
    kwargs: dict[str, Any] = {
        "timeout": 30.0,
        "deadline_s": None,
        "retry_after_cap": 120.0,
        **opts.client_kwargs,
    }
    if pacer is not None:  # the client's back-off holds every worker of the sync
        kwargs["sleep"] = pacer.hold_sleep(kwargs.get("sleep"))
    client = BoxMCPClient(source.server, token, **kwargs)
    client.allowed_tools = SYNC_TOOLS
    client.open()
    if not client.has_tool(LIST_TOOL):
        client.close()
        raise ToolMissing(
            f"Box MCP server at {redact(source.server)} has no {LIST_TOOL}; brain-sync needs it "
            "(it never falls back to a broader traversal)"
        )
    return client


def _notice(opts: SyncOptions, line: str) -> None:
    if opts.notice is not None:
        opts.notice(line)


def _unchanged(f: RemoteFile, row: ItemRow | None, settings: Settings) -> bool:
    if row is None or not row.has_entry or row.status not in ("indexed", "metadata_only"):
        return False
    if row.signature != f.signature():
        return False
    # Content was off when this entry was made and is on now: fetch the text this time.
    return not (
        settings.include_content
        and row.status == "metadata_only"
        and "content import is off" in (row.reason or "")
    )


def _change(f: RemoteFile, got: Fetched) -> Change:
    meta = f.meta()
    url = f.url or LOCAL_URL
    if got.outcome in ("text", "metadata_only"):
        text = got.text if got.outcome == "text" else None
        return Change(
            box_id=f.id,
            action="indexed",
            meta=meta,
            status="indexed" if text else "metadata_only",
            entry_text=render(
                name=f.name, url=url, file_id=f.id, path=f.path, modified=f.modified_at, text=text
            ),
            body=text or "",
            reason=got.reason,
            text_source=got.source,
            content_hash=text_hash(text) if text else None,
        )
    return Change(
        box_id=f.id, action=got.outcome, meta=meta, status="skipped", reason=got.reason, error=got.error
    )


def _run_locked(store: BrainStore, source: Source, opts: SyncOptions, workspace: Any) -> RunResult:
    t0 = time.perf_counter()
    settings = source.settings
    result = RunResult(source, "failed", started_at=now_iso())
    result.run_id = store.begin_run(source, result.started_at or now_iso())
    client: Any = None
    pacer: CallPacer | None = None
    fetcher: Any = None
    crawled: CrawlResult | None = None
    changes: list[Change] = []
    stored: dict[str, ItemRow] = {}
    try:
        if source.kind == "box":
            rate = opts.pace()
            pacer = CallPacer(rate) if rate > 0 else None  # real time: opts.clock paces Box AI
            client = _open_client(source, opts, pacer)
            paced: Any = client if pacer is None else PacedClient(client, pacer)
            if pacer is not None:
                result.pace = {"calls_per_minute": round(rate, 3), "held_s": 0.0}
                _notice(
                    opts, f"Box calls paced at {rate:g} a minute (Box allows {BOX_CALLS_PER_MINUTE} per user)"
                )
            lister: Any = BoxLister(paced)
            fetcher = BoxFetcher(
                paced,
                settings,
                concurrency=opts.concurrency,
                clock=opts.clock,
                sleep=opts.sleep,
                ai_budget=opts.ai_budget,
                ai_interval=opts.ai_interval,
                progress=opts.progress,
            )
            root_id = source.root
        else:
            root = Path(source.root)
            if not root.is_dir():
                raise BackendUnavailable(f"folder {root} is missing (is Box Drive running?)")
            lister = LocalLister(root)
            fetcher = LocalFetcher(root, settings, progress=opts.progress)
            root_id = ""
        crawled = crawl(lister, root_id, cap=settings.max_items, progress=opts.progress)
        stored = store.items(source.id)
        to_fetch = [f for f in crawled.files if not _unchanged(f, stored.get(f.id), settings)]
        if pacer is not None and result.pace is not None:
            planned = len(to_fetch) if settings.include_content else 0
            eta = pacer.estimate_s(planned)
            result.pace.update(planned_calls=planned, estimated_s=round(eta, 1))
            if planned:
                _notice(opts, f"fetching {planned} new or changed files at that pace: {duration(eta)}")
        fetched = fetcher.fetch(to_fetch)
        for f in crawled.files:
            got = fetched.get(f.id)
            changes.append(Change(box_id=f.id, action="unchanged") if got is None else _change(f, got))
    except BoxMemoryError as exc:
        return _failed(store, source, result, exc.code, exc.exit_code, str(exc), t0, client, fetcher)
    except Exception as exc:  # a bug must still leave a failed run on record, never a half-applied one
        return _failed(
            store, source, result, "internal_error", 1, f"{type(exc).__name__}: {exc}", t0, client, fetcher
        )
    finally:
        if client is not None:
            result.mcp_calls = client.call_count
            client.close()
        if pacer is not None and result.pace is not None:
            result.pace["held_s"] = round(pacer.held_s, 3)
    if fetcher is not None:
        result.ai_calls = fetcher.ai_calls
        if fetcher.ai_error:
            result.warnings.append(f"Box AI turned off for the rest of the run: {fetcher.ai_error}")

    assert crawled is not None
    now = now_iso()
    try:
        deleted = store.apply_run(
            source,
            result.run_id,
            changes,
            delete_missing=crawled.complete,
            seen={f.id for f in crawled.files},
            now=now,
        )
    except Exception as exc:
        return _failed(
            store, source, result, "store_error", 1, f"could not save the run: {exc}", t0, None, None
        )

    counts = dict.fromkeys(
        (
            "discovered",
            "indexed",
            "new",
            "replaced",
            "metadata_only",
            "unchanged",
            "skipped",
            "deleted",
            "failed",
        ),
        0,
    )
    counts["discovered"] = len(crawled.files)
    counts["deleted"] = len(deleted)
    by_id = {f.id: f for f in crawled.files}
    for c in changes:
        if c.action == "indexed":
            counts["indexed"] += 1
            counts["replaced" if c.box_id in stored and stored[c.box_id].has_entry else "new"] += 1
            if c.status == "metadata_only":
                counts["metadata_only"] += 1
        else:
            counts[c.action] += 1
        if c.action != "unchanged" and len(result.items) < MAX_ITEM_DETAILS:
            f = by_id[c.box_id]
            result.items.append(
                {
                    "id": c.box_id,
                    "name": f.name,
                    "path": f.path,
                    "url": f.url,
                    "action": c.action,
                    "status": c.status,
                    "reason": c.reason,
                    "error": c.error,
                }
            )
    for box_id in deleted[: max(0, MAX_ITEM_DETAILS - len(result.items))]:
        result.items.append({"id": box_id, "action": "deleted", "status": "deleted"})
    result.counts = counts
    result.complete = crawled.complete
    result.reasons = list(crawled.reasons)
    if counts["failed"]:
        result.reasons.append(f"{counts['failed']} file(s) failed")
    if counts["skipped"]:
        result.reasons.append(f"{counts['skipped']} file(s) skipped")
    result.status = (
        "completed" if crawled.complete and not counts["failed"] and not counts["skipped"] else "partial"
    )
    result.review = _maybe_review(store, source, result, changes, stored, by_id, workspace, opts)
    result.finished_at = now_iso()
    result.duration_ms = round((time.perf_counter() - t0) * 1000)
    store.finish_run(
        source,
        result.run_id,
        status=result.status,
        finished_at=result.finished_at,
        complete=result.complete,
        counts=counts,
        reasons=result.reasons,
        error=None,
        mcp_calls=result.mcp_calls,
        ai_calls=result.ai_calls,
        duration_ms=result.duration_ms,
        review=result.review,
    )
    return result


def _failed(
    store: BrainStore,
    source: Source,
    result: RunResult,
    code: str,
    exit_code: int,
    message: str,
    t0: float,
    client: Any,
    fetcher: Any,
) -> RunResult:
    """Record a failed run: no item changed; the source remembers the error."""
    if client is not None:
        result.mcp_calls = client.call_count
    if fetcher is not None:
        result.ai_calls = fetcher.ai_calls
    result.status = "failed"
    result.error = one_line(message)
    result.error_code = code
    result.exit_code = exit_code
    result.finished_at = now_iso()
    result.duration_ms = round((time.perf_counter() - t0) * 1000)
    assert result.run_id is not None
    store.finish_run(
        source,
        result.run_id,
        status="failed",
        finished_at=result.finished_at,
        complete=None,
        counts={},
        reasons=[],
        error=result.error,
        mcp_calls=result.mcp_calls,
        ai_calls=result.ai_calls,
        duration_ms=result.duration_ms,
        review=None,
    )
    return result


# ---------------------------------------------------------------------------------------------
# Review


def _maybe_review(
    store: BrainStore,
    source: Source,
    result: RunResult,
    changes: list[Change],
    stored: dict[str, ItemRow],
    by_id: dict[str, RemoteFile],
    workspace: Any,
    opts: SyncOptions,
) -> dict[str, Any]:
    """The review pass when it is due; any failure is recorded, never raised."""
    if not source.settings.review:
        return {"status": "skipped", "reason": "review is off for this source"}
    fresh = [c for c in changes if c.action == "indexed"]
    if not fresh:
        return {"status": "skipped", "reason": "no new or changed files"}
    last = parse_time(source.last_review_at)
    if last is not None and (opts.now() - last).total_seconds() < REVIEW_EVERY_S:
        return {"status": "skipped", "reason": "the last review of this source is less than 6 h old"}
    try:
        from box_memory.brain.review import propose
        from box_memory.brain.review_text import Doc
        from box_memory.brain.review_workspace import workspace_memories

        if workspace is _NO_WORKSPACE:
            workspace = _open_by_key(source.workspace)
        memories = workspace_memories(workspace) if workspace is not None else []
        docs = []
        for c in fresh:
            f = by_id[c.box_id]
            version = f.version_id or f.etag or f.sha1 or (c.content_hash or "")[:12] or None
            replaced = c.box_id in stored and stored[c.box_id].has_entry
            docs.append(Doc(f.id, f.name, f.url, f.path, version, c.body, replaced=replaced))
        proposed = propose(docs, memories)
        assert result.run_id is not None
        added = sum(1 for cand in proposed if store.add_candidate(source.id, result.run_id, cand) is not None)
    except Exception as exc:
        result.warnings.append(f"review failed (the sync itself is fine): {type(exc).__name__}: {exc}")
        return {"status": "failed", "error": one_line(f"{type(exc).__name__}: {exc}")}
    return {
        "status": "done",
        "documents": len(docs),
        "memories": len(memories),
        "workspace": workspace.describe() if workspace is not None else None,
        "candidates": added,
    }
