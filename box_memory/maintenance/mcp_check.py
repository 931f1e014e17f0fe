"""`mcp-check`: reachability, auth and the catalogue; `--deep`: every tool and argument box-memory
uses, per feature, against the live catalogue.

The check is a service over the Box MCP client (box/client.py), which knows nothing of it.

Each feature is PASS (every call fits the server's inputSchema, aliases allowed), DEGRADED (an
optional feature the server cannot serve; the report says what is lost) or INCOMPATIBLE (a
required feature, with the exact mismatch). `--write-test FOLDER_ID` then does a real round trip
in a scratch folder it creates there: upload, new version, read back verified by sha1, move to an
archive subfolder. The report holds names, ids, verdicts and timings only: never a token or a
file's contents, so it can be pasted into a bug report.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from box_memory.box.base import SleepFn
from box_memory.box.client import OPTIONAL_TOOLS, REQUIRED_TOOLS, BoxMCPClient
from box_memory.box.schema import ALIASES, shape_args
from box_memory.box.tokens import TokenSource
from box_memory.box.transport import default_url
from box_memory.errors import AuthError, BoxMemoryError, Incompatible
from box_memory.redaction import redact
from box_memory.result import Result

__all__ = ["FEATURES", "CheckReport", "check_features", "check_result", "mcp_check", "worst", "write_test"]

INCOMPATIBLE_EXIT = 4  # cli.md: the Box MCP server is unusable (as BackendUnavailable)

_ORDER = {"PASS": 0, "DEGRADED": 1, "INCOMPATIBLE": 2}


@dataclass(frozen=True)
class Feature:
    name: str
    required: bool
    calls: tuple[tuple[str, dict[str, Any]], ...]
    lost: str
    any_of: bool = False  # one of the calls' tools is enough (alternative tool names)


_FIELDS = [{"type": "string", "key": "memoryId", "displayName": "Memory ID"}]
FEATURES: tuple[Feature, ...] = (
    Feature(
        "read workspace",
        True,
        (
            ("list_folder_content_by_folder_id", {"folder_id": "0", "fields": ["sha1"], "limit": 100}),
            ("get_file_content", {"file_id": "1"}),
            ("get_file_details", {"file_id": "1", "fields": ["sha1"]}),
            ("who_am_i", {}),
        ),
        "box-memory cannot read a Box workspace",
    ),
    Feature(
        "write memories",
        True,
        (
            ("upload_file", {"file_name": "a.md", "file_content": "x", "parent_folder_id": "0"}),
            ("upload_file_version", {"file_id": "1", "file_content": "x"}),
            ("create_folder", {"name": "memories", "parent_folder_id": "0"}),
            ("move_file", {"file_id": "1", "parent_folder_id": "0", "name": "a.md"}),
        ),
        "box-memory cannot write to a Box workspace",
    ),
    Feature(
        "verified content fallback",
        False,
        (("get_download_url", {"file_id": "1"}),),
        "a file whose text representation is not byte-exact cannot be checked against its bytes: "
        "such reads fail instead",
    ),
    Feature(
        "folder moves",
        False,
        (("move_folder", {"folder_id": "1", "parent_folder_id": "0", "name": "a"}),),
        "team remove and archive move file by file and leave empty folders behind",
    ),
    Feature(
        "Box metadata",
        False,
        (
            ("list_metadata_templates", {"scope": "enterprise"}),
            (
                "create_metadata_template",
                {"display_name": "Box Memory", "scope": "enterprise", "template_key": "k", "fields": _FIELDS},
            ),
            (
                "set_file_metadata",
                {"file_id": "1", "scope": "enterprise", "template_key": "k", "metadata_fields": {"a": "b"}},
            ),
        ),
        "no boxMemory metadata on memory files; structured recall uses the indexes only",
    ),
    Feature(
        "metadata search",
        False,
        (
            (
                "search_files_keyword",
                {"query": "the", "ancestor_folder_id": "0", "file_extensions": ["md"], "mdfilters": []},
            ),
        ),
        "structured recall cannot fall back to Box metadata search for unindexed memories",
    ),
    Feature(
        "Box AI Q&A",
        False,
        (
            ("ai_qa_single_file", {"file_id": "1", "question": "q"}),
            ("ai_qa_multi_file", {"file_ids": ["1"], "question": "q"}),
        ),
        "no Box AI answers over memories",
    ),
    Feature(
        "Box AI extraction",
        False,
        (
            ("ai_extract_structured_from_fields", {"file_ids": ["1"], "fields": _FIELDS}),
            ("ai_extract_structured_from_fields_enhanced", {"file_ids": ["1"], "fields": _FIELDS}),
        ),
        "companions cannot be filled by Box AI extraction",
        any_of=True,
    ),
)


def worst(*verdicts: str) -> str:
    return max(verdicts, key=lambda v: _ORDER.get(v, 2), default="PASS")


def _renamed(args: dict[str, Any], sent: dict[str, Any]) -> dict[str, str]:
    """{box-memory's name: the server's name} for the arguments an alias carried."""
    out: dict[str, str] = {}
    for name in args:
        if name in sent:
            continue
        group = next((g for g in ALIASES if name in g), ())
        target = next((a for a in group if a in sent), None)
        if target is not None:
            out[name] = target
    return out


def _check_call(tools: dict[str, dict[str, Any]], tool: str, args: dict[str, Any]) -> dict[str, Any]:
    if tool not in tools:
        return {"tool": tool, "ok": False, "problem": "not offered by the server (or hidden by the admin)"}
    schema = tools[tool].get("inputSchema")
    try:
        sent = shape_args(tool, args, schema)
    except Incompatible as e:
        return {"tool": tool, "ok": False, "problem": str(e)}
    out: dict[str, Any] = {"tool": tool, "ok": True}
    renamed = _renamed(args, sent)
    if renamed:
        out["renamed"] = renamed
    dropped = sorted(k for k in args if k not in sent and k not in renamed)
    if dropped:
        out["not_taken"] = dropped
    return out


def check_features(tools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per feature from the server's catalogue (no call is made)."""
    out: list[dict[str, Any]] = []
    for f in FEATURES:
        calls = [_check_call(tools, tool, args) for tool, args in f.calls]
        ok = any(c["ok"] for c in calls) if f.any_of else all(c["ok"] for c in calls)
        verdict = "PASS" if ok else ("INCOMPATIBLE" if f.required else "DEGRADED")
        row: dict[str, Any] = {"feature": f.name, "verdict": verdict, "calls": calls}
        if not ok:
            bad = next(c for c in calls if not c["ok"])
            row["problem"] = f"{bad['tool']}: {bad['problem']}"
            row["lost"] = f.lost
        out.append(row)
    listing = tools.get("list_folder_content_by_folder_id", {}).get("inputSchema") or {}
    props = listing.get("properties") if isinstance(listing, dict) else None
    if isinstance(props, dict) and props and not ({"offset", "marker"} & set(props)):
        out.append(
            {
                "feature": "listing paging",
                "verdict": "DEGRADED",
                "calls": [],
                "problem": "list_folder_content_by_folder_id takes neither offset nor marker",
                "lost": "a folder longer than one page is listed as incomplete (nothing is deleted on it)",
            }
        )
    return out


def write_test(box: Any, folder_id: str) -> dict[str, Any]:
    """Round trip in a new scratch folder under `folder_id`: upload, version, read back, archive."""
    from box_memory.store import open_cloud

    scratch = f"box-memory-check-{time.strftime('%Y%m%dT%H%M%S')}"
    path = f"{scratch}/check.md"
    first, second = b"box-memory write test: first version\n", b"box-memory write test: second version\n"
    cache_dir = Path(tempfile.mkdtemp(prefix="box-memory-check-"))  # the read-back is Box's
    store = open_cloud(str(folder_id), client=box, cache_dir=cache_dir)
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] = {"folder_id": str(folder_id), "scratch_folder": scratch, "steps": steps}

    def step(name: str, action: Callable[[], Any]) -> bool:
        started = time.perf_counter()
        try:
            ok = action() is not False
            problem = None if ok else "the read-back did not match the uploaded bytes"
        except BoxMemoryError as e:
            ok, problem = False, str(e)
        entry: dict[str, Any] = {"step": name, "ok": ok, "ms": round((time.perf_counter() - started) * 1000)}
        if problem:
            entry["error"] = problem
        steps.append(entry)
        return ok

    def read_back() -> bool:
        store.drop_listings()
        got = store.read_bytes(path)  # accepted only when its sha1 matches Box's (see CloudStore)
        return (
            hashlib.sha1(got, usedforsecurity=False).digest()
            == hashlib.sha1(second, usedforsecurity=False).digest()
        )

    try:
        _ = (
            step("create scratch folder", lambda: store.mkdir(scratch))
            and step("upload", lambda: store.create_bytes(path, first))
            and step("upload new version", lambda: store.write_bytes(path, second))
            and step("read back, sha1 verified", read_back)
            and step("move to archive subfolder", lambda: store.move(path, f"{scratch}/_archive/check.md"))
        )
        result["scratch_folder_id"] = store.folder_id(scratch) if steps and steps[0]["ok"] else None
    finally:
        result["warnings"] = store.collected_warnings()
        store.close()
        shutil.rmtree(cache_dir, ignore_errors=True)
    result["verdict"] = "PASS" if steps and all(s["ok"] for s in steps) else "INCOMPATIBLE"
    return result


def check_result(report: dict[str, Any]) -> Result:
    """The `mcp-check` service's answer for a finished check (`McpCheck.to_dict()`): PASS and
    DEGRADED succeed; INCOMPATIBLE is exit 4 with one error naming the first problem."""
    if report["verdict"] in ("PASS", "DEGRADED"):
        return Result(report)
    code = report.get("error_code") or "incompatible"
    message = report.get("error") or (
        f"required Box tools missing: {', '.join(report['required_missing'])}"
        if report["required_missing"]
        else _deep_problem(report)
    )
    return Result(
        report,
        status="error",
        exit_code=INCOMPATIBLE_EXIT,
        errors=[{"code": str(code), "message": f"INCOMPATIBLE: {message}"}],
    )


def _deep_problem(r: dict[str, Any]) -> str:
    """The first thing that made a deep check INCOMPATIBLE, as one line."""
    for f in r.get("features") or []:
        if f["verdict"] == "INCOMPATIBLE":
            return f"{f['feature']}: {f.get('problem')}"
    for s in (r.get("write_test") or {}).get("steps", []):
        if not s["ok"]:
            return f"write test failed at {s['step']}: {s.get('error')}"
    return "Box MCP server is not usable"


# ---------------------------------------------------------------------------------------------
# mcp-check: connect once, report what the server offers; --deep and --write-test run the above

_round_trip = write_test  # `mcp_check` takes a parameter of the same name


@dataclass
class CheckReport:
    """What `mcp-check` found: reachability, auth, and which of box-memory's tools exist."""

    url: str
    verdict: str = "INCOMPATIBLE"  # PASS | DEGRADED | INCOMPATIBLE
    reachable: bool = False
    auth_ok: bool = False
    required_present: list[str] = field(default_factory=list)
    required_missing: list[str] = field(default_factory=list)
    optional_present: list[str] = field(default_factory=list)
    optional_missing: list[str] = field(default_factory=list)
    tool_count: int = 0
    server_name: str | None = None
    protocol_version: str | None = None
    user: dict[str, Any] | None = None
    error: str | None = None
    error_code: str | None = None
    features: list[dict[str, Any]] | None = None  # --deep
    write_test: dict[str, Any] | None = None  # --write-test FOLDER_ID

    def to_dict(self) -> dict[str, Any]:
        deep: dict[str, Any] = {}
        if self.features is not None:
            deep["features"] = self.features
        if self.write_test is not None:
            deep["write_test"] = self.write_test
        return deep | {
            "url": redact(self.url),  # a password in the URL is never shown
            "verdict": self.verdict,
            "reachable": self.reachable,
            "auth_ok": self.auth_ok,
            "required_present": list(self.required_present),
            "required_missing": list(self.required_missing),
            "optional_present": list(self.optional_present),
            "optional_missing": list(self.optional_missing),
            "tool_count": self.tool_count,
            "server_name": self.server_name,
            "protocol_version": self.protocol_version,
            "user": self.user,
            "error": self.error,
            "error_code": self.error_code,
        }


def _verdict(report: CheckReport) -> str:
    if not report.reachable or not report.auth_ok or report.required_missing:
        return "INCOMPATIBLE"
    verdict = "DEGRADED" if report.optional_missing else "PASS"
    for row in report.features or []:
        verdict = worst(verdict, row["verdict"])
    if report.write_test is not None:
        verdict = worst(verdict, report.write_test["verdict"])
    return verdict


def mcp_check(
    url: str | None,
    token_source: TokenSource | str | None,
    *,
    timeout: float = 15.0,
    max_retries: int = 2,
    sleep: SleepFn | None = None,
    deep: bool = False,
    write_test: str | None = None,
) -> CheckReport:
    """Connect once and report what box-memory can do with this server; never raises for Box problems.

    `deep` checks every tool and argument box-memory uses, per feature; `write_test` (a Box folder
    id) also does a write round trip in a scratch folder created there.
    """
    report = CheckReport(url=url or default_url())
    if not token_source:
        report.error, report.error_code = "no Box access token - run `box-memory auth login`", AuthError.code
        return report
    try:
        with BoxMCPClient(
            report.url,
            token_source,
            timeout=timeout,
            max_retries=max_retries,
            sleep=sleep,
            catalogue_cache=False,  # the check is about the live server, not yesterday's answer
        ) as box:
            report.reachable = True
            report.auth_ok = True
            report.tool_count = len(box.tools)
            report.server_name = box.server_name
            report.protocol_version = box.protocol_version
            report.required_present = [t for t in REQUIRED_TOOLS if box.has_tool(t)]
            report.required_missing = [t for t in REQUIRED_TOOLS if not box.has_tool(t)]
            report.optional_present = [t for t in OPTIONAL_TOOLS if box.has_tool(t)]
            report.optional_missing = [t for t in OPTIONAL_TOOLS if not box.has_tool(t)]
            if box.has_tool("who_am_i"):
                try:
                    me = box.call("who_am_i", {})
                except AuthError as exc:
                    report.auth_ok = False
                    report.error, report.error_code = str(exc), exc.code
                except BoxMemoryError as exc:  # the catalogue answered; note it, keep the verdict
                    report.error, report.error_code = str(exc), exc.code
                else:
                    if isinstance(me, dict):
                        report.user = {k: me.get(k) for k in ("id", "name", "login") if k in me}
            if (deep or write_test) and report.auth_ok:
                report.features = check_features(box.tools)
                if write_test and not report.required_missing:
                    report.write_test = _round_trip(box, write_test)
    except AuthError as exc:
        report.reachable = True
        report.error, report.error_code = str(exc), exc.code
    except BoxMemoryError as exc:
        report.error, report.error_code = str(exc), exc.code
    report.verdict = _verdict(report)
    return report
