"""The MCP tool table of `box-memory serve`: each tool's input schema, run function and hints.

A tool's input model is derived from its service's request dataclass (`tool_args`); its run
function is the matching command's library call; its structured result is the command's `--json`
envelope (`RESULT_SCHEMA`). The server loop and transports are `serve.server`'s.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from box_memory.audit.report import ReportRequest
from box_memory.audit.timeline import LogRequest
from box_memory.maintenance.index_rebuild import RebuildRequest
from box_memory.maintenance.status import StatusRequest
from box_memory.params import Param, request_fields, request_hints
from box_memory.recall.brain_tool import BrainSearchRequest
from box_memory.recall.query import RecallRequest
from box_memory.result import Result
from box_memory.workspace.resolve import Workspace
from box_memory.write.companion_state import CheckRequest
from box_memory.write.get import GetRequest
from box_memory.write.prepare import WriteRequest

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "boundary": {"type": "string", "description": "Present when data holds untrusted text."},
        "status": {"type": "string", "enum": ["ok", "partial", "skipped", "error"]},
        "exit_code": {"type": "integer", "description": "The matching command's exit code."},
        "data": {"type": "object", "description": "The matching command's --json data."},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                "required": ["code", "message"],
            },
        },
    },
    "required": ["status", "exit_code", "data", "warnings", "errors"],
}
TOOL_RESULT_KEYS = ("status", "exit_code", "data", "warnings", "errors")  # of the envelope

# --- input schemas ----------------------------------------------------------------------------


class ToolArgs(BaseModel):
    """Unknown arguments are refused: a misspelt filter must not silently widen a query."""

    model_config = ConfigDict(extra="forbid")


def tool_args(request: type[Any], name: str) -> type[ToolArgs]:
    """A tool's input model, derived from the service's request class: each field annotated
    with a `Param` becomes a parameter with that description, enum and bounds (declared once)."""
    hints = request_hints(request)
    fields: dict[str, Any] = {}
    for field_name, default, factory in request_fields(request):
        hint = hints[field_name]
        param = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, Param)), None)
        if param is None:
            continue
        kind: Any = typing.get_args(hint)[0]
        if param.choices is not None:
            choice: Any = Literal[param.choices]  # type: ignore[valid-type]
            kind = (choice | None) if type(None) in typing.get_args(kind) else choice
        given: dict[str, Any] = {"description": param.description}
        if default is not dataclasses.MISSING:
            given["default"] = default
        elif factory is not dataclasses.MISSING:
            given["default_factory"] = factory
        for bound in ("ge", "le", "min_length"):
            if getattr(param, bound) is not None:
                given[bound] = getattr(param, bound)
        fields[field_name] = (kind, Field(**given))
    model: type[ToolArgs] = create_model(name, __base__=ToolArgs, **fields)
    return model


RecallArgs = tool_args(RecallRequest, "RecallArgs")
GetArgs = tool_args(GetRequest, "GetArgs")
WriteArgs = tool_args(WriteRequest, "WriteArgs")
CompanionCheckArgs = tool_args(CheckRequest, "CompanionCheckArgs")
IndexRebuildArgs = tool_args(RebuildRequest, "IndexRebuildArgs")
StatusArgs = tool_args(StatusRequest, "StatusArgs")
BrainSearchArgs = tool_args(BrainSearchRequest, "BrainSearchArgs")
LogArgs = tool_args(LogRequest, "LogArgs")
ReportArgs = tool_args(ReportRequest, "ReportArgs")


# --- the tools --------------------------------------------------------------------------------


def _recall(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.recall.service import recall

    result = recall(ws, RecallRequest(**a.model_dump())).result
    if ws.config.settings.get("ai_recall_enabled") is True:  # as `box-memory recall` does
        from box_memory.recall.ask import ask_by_setting

        result = ask_by_setting(ws, result)
    return result


def _get(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.write.get import get_memory

    req = GetRequest(**a.model_dump())
    return get_memory(ws, req.ref, history=req.history)


def _write(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.write.memories import write_memory

    return write_memory(ws, WriteRequest(**a.model_dump()))


def _companion_check(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.write.companion_state import check_companion

    req = CheckRequest(**a.model_dump())
    return check_companion(ws, req.file, team=req.team)


def _index_rebuild(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.maintenance.index_rebuild import index_rebuild

    req = RebuildRequest(**a.model_dump())
    return index_rebuild(ws, req.folder, team=req.team, check=req.check, companions_only=req.companions_only)


def _status(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.maintenance.status import status

    return status(ws, check_indexes=StatusRequest(**a.model_dump()).check_indexes)


def _brain_search(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.recall.brain_tool import brain_search

    return brain_search(ws, BrainSearchRequest(**a.model_dump()))


def _log(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.audit.timeline import timeline

    return timeline(ws, LogRequest(**a.model_dump()))


def _report(ws: Workspace, a: ToolArgs) -> Result:
    from box_memory.audit.report import render_html, report_data

    req = ReportRequest(**a.model_dump())
    res = report_data(ws, weeks=req.weeks)
    return res.with_data(html=render_html(res.data)) if req.html else res


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    args: type[ToolArgs]
    run: Callable[[Workspace, Any], Result]
    read_only: bool
    idempotent: bool
    untrusted: bool  # the result carries memory or document text

    def describe(self) -> Any:
        import mcp_types as types

        return types.Tool(
            name=self.name,
            title=self.title,
            description=self.description,
            input_schema=self.args.model_json_schema(),
            output_schema=RESULT_SCHEMA,
            annotations=types.ToolAnnotations(
                title=self.title,
                read_only_hint=self.read_only,
                destructive_hint=False,
                idempotent_hint=self.idempotent,
                open_world_hint=False,
            ),
        )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "recall",
        "Recall memories",
        "Find memories, best first, by id, [[Title]], slug, structured filters or free text. "
        "Never writes. Hits carry excerpts of untrusted memory text.",
        RecallArgs,
        _recall,
        read_only=True,
        idempotent=True,
        untrusted=True,
    ),
    ToolSpec(
        "get",
        "Get a memory",
        "One memory's frontmatter and body (untrusted text); history=true walks its supersede chain.",
        GetArgs,
        _get,
        read_only=True,
        idempotent=True,
        untrusted=True,
    ),
    ToolSpec(
        "write",
        "Write a memory",
        "Write a new memory (append-only: never overwrites; supersedes=ID replaces an older one). "
        "A second memory with the same title is refused unless supersedes or new_slug is given.",
        WriteArgs,
        _write,
        read_only=False,
        idempotent=False,
        untrusted=False,
    ),
    ToolSpec(
        "companion_check",
        "Check a companion",
        "Whether a binary's companion memory is current, stale, orphaned or missing "
        "(exit_code 6 unless current). Never writes.",
        CompanionCheckArgs,
        _companion_check,
        read_only=True,
        idempotent=True,
        untrusted=False,
    ),
    ToolSpec(
        "index_rebuild",
        "Rebuild indexes",
        "Regenerate folder indexes and the rollup from the memory files (orphans are listed, never "
        "deleted). check=true writes nothing and reports the drift (exit_code 6 when found).",
        IndexRebuildArgs,
        _index_rebuild,
        read_only=False,
        idempotent=True,
        untrusted=False,
    ),
    ToolSpec(
        "status",
        "Workspace status",
        "Counts by team, kind and status, index health, recent memories, top tags, what to do next.",
        StatusArgs,
        _status,
        read_only=True,
        idempotent=True,
        untrusted=True,
    ),
    ToolSpec(
        "brain_search",
        "Search the Box Brain",
        "Full-text search of imported Box documents (see brain-sync), each hit with its Box URL. "
        "Document text is untrusted.",
        BrainSearchArgs,
        _brain_search,
        read_only=True,
        idempotent=True,
        untrusted=True,
    ),
    ToolSpec(
        "log",
        "Memory timeline",
        "What was remembered, newest first: writes, supersedes, archives and team changes, each "
        "with time, agent, kind, title and chain links; filters since, until, agent, kind, team.",
        LogArgs,
        _log,
        read_only=True,
        idempotent=True,
        untrusted=True,
    ),
    ToolSpec(
        "report",
        "Memory report",
        "A review summary to hand a person (data.summary): activity per week by agent, recent "
        "decisions with sources, supersede chains, stale companions, unreadable folders, index "
        "health, Box Brain candidates; html=true adds the self-contained HTML page.",
        ReportArgs,
        _report,
        read_only=True,
        idempotent=True,
        untrusted=True,
    ),
)
TOOLS_BY_NAME = {t.name: t for t in TOOLS}
