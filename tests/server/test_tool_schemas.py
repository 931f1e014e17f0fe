"""Each tool's input schema is derived from its service's request dataclass: the parameters, their
descriptions, enums and bounds are the `Param` annotations of that dataclass, declared once."""

from __future__ import annotations

import pytest

from box_memory.audit.report import ReportRequest
from box_memory.audit.timeline import LogRequest
from box_memory.maintenance.index_rebuild import RebuildRequest
from box_memory.maintenance.status import StatusRequest
from box_memory.params import Param, request_fields, request_hints
from box_memory.recall.brain_tool import BrainSearchRequest
from box_memory.recall.query import RecallRequest
from box_memory.serve.server import MemoryServer
from box_memory.serve.tools import TOOLS
from box_memory.write.companion_state import CheckRequest
from box_memory.write.get import GetRequest
from box_memory.write.prepare import WriteRequest

REQUESTS: dict[str, type] = {
    "recall": RecallRequest,
    "get": GetRequest,
    "write": WriteRequest,
    "companion_check": CheckRequest,
    "index_rebuild": RebuildRequest,
    "status": StatusRequest,
    "brain_search": BrainSearchRequest,
    "log": LogRequest,
    "report": ReportRequest,
}


def params(request: type) -> dict[str, Param]:
    hints = request_hints(request)
    out = {}
    for name, _default, _factory in request_fields(request):
        found = [m for m in getattr(hints[name], "__metadata__", ()) if isinstance(m, Param)]
        if found:
            out[name] = found[0]
    return out


def _enum(prop: dict) -> list[str] | None:
    for alt in [prop, *prop.get("anyOf", [])]:
        if "enum" in alt:
            return list(alt["enum"])
    return None


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_tool_schema_is_the_request_dataclass(tool) -> None:
    declared = params(REQUESTS[tool.name])
    schema = tool.describe().input_schema
    assert list(schema["properties"]) == list(declared), tool.name
    for name, param in declared.items():
        prop = schema["properties"][name]
        assert prop["description"] == param.description, (tool.name, name)
        assert _enum(prop) == (list(param.choices) if param.choices else None), (tool.name, name)
        for bound, key in (("ge", "minimum"), ("le", "maximum"), ("min_length", "minLength")):
            value = getattr(param, bound)
            shown = prop.get(key, next((a.get(key) for a in prop.get("anyOf", []) if key in a), None))
            assert shown == value, (tool.name, name, bound)


def test_the_write_tool_takes_what_the_service_takes(cli, ws) -> None:
    """Arguments pass through to the service's request as they are: a write over MCP with every
    parameter lands with each field as given."""
    server = MemoryServer(workspace=str(ws))
    res, is_error = server.call(
        "write",
        {
            "content": "We chose Postgres for the ledger.",
            "title": "Ledger database",
            "kind": "decision",
            "tags": ["db"],
            "status": "draft",
            "related": ["[[Storage]]"],
            "confidence": 0.8,
            "agent": "ci",
            "sources": ["url:https://example.com/adr"],
        },
    )
    assert not is_error, res
    got = cli.json("get", res["data"]["id"], "-w", str(ws))["data"]["frontmatter"]
    assert (got["kind"], got["status"], got["tags"], got["confidence"], got["agent"]) == (
        "decision", "draft", ["db"], 0.8, "ci",
    )  # fmt: skip
    assert got["related"] == ["[[Storage]]"] and got["sources"][0]["ref"] == "https://example.com/adr"
    bad, is_error = server.call("write", {"content": "x", "title": "t", "confidence": 2})
    assert is_error and bad["errors"][0]["code"] == "invalid_input"


def test_a_plain_request_class_declares_each_field_once() -> None:
    """The recall request is a plain class (built at every recall's start): its `_fields` (what it
    is compared and shown by), its `__init__` parameters (the schema's defaults) and its `Param`
    annotations name the same fields in the same order."""
    import inspect

    assert not hasattr(RecallRequest, "__dataclass_fields__")
    init = list(inspect.signature(RecallRequest).parameters)
    assert list(RecallRequest._fields) == init == list(params(RecallRequest))
    assert RecallRequest().tags == [] and RecallRequest().tags is not RecallRequest().tags
