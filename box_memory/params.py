"""One declaration per request field: a service's request class (a dataclass; recall's is a plain
class, `request_fields`) annotates each field a caller may set with `Param`
(`Annotated[str | None, Param("Only this team.")]`). The MCP server derives its tool input schemas
from these (`server.tool_args`); the CLI keeps explicit options for --help.

Standard library only: the request dataclasses are imported by `write` and `recall`, which must
stay fast to start (no pydantic here; the server turns a `Param` into a pydantic `Field`).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Param:
    """What a tool caller sees of a field: its description, its closed set of values (an enum in
    the schema) and its bounds. `nullable`: the schema also accepts null (the field's default)."""

    description: str
    choices: tuple[str, ...] | None = None
    ge: float | None = None
    le: float | None = None
    min_length: int | None = None
    nullable: bool = False


def request_hints(request: type) -> dict[str, Any]:
    """A request dataclass's field annotations with their `Param`s. The recall request modules
    import `Param` only for type checking (this module and its dataclass cost the `recall`
    command's start ~2 ms it never uses), so the name is supplied here, for every request."""
    return typing.get_type_hints(request, localns={"Param": Param}, include_extras=True)


def request_fields(request: type) -> list[tuple[str, Any, Any]]:
    """A request's fields in order, each as (name, default, default factory), `MISSING` where
    there is none: a dataclass's fields, or the parameters of a plain request class's `__init__`
    (the recall request, which every recall builds at start), where a default of `()` stands for
    a new empty list."""
    import dataclasses

    if dataclasses.is_dataclass(request):
        return [(f.name, f.default, f.default_factory) for f in dataclasses.fields(request)]
    import inspect

    out: list[tuple[str, Any, Any]] = []
    for name, p in list(inspect.signature(request).parameters.items()):
        default = dataclasses.MISSING if p.default is inspect.Parameter.empty else p.default
        if default == ():
            out.append((name, dataclasses.MISSING, list))
        else:
            out.append((name, default, dataclasses.MISSING))
    return out


DAY_S = 86400.0


def seconds(name: str, value: float, *, most: float = DAY_S) -> float:
    """A duration a caller gave (`--timeout`): a number of seconds above 0 and at most `most`.
    NaN, infinity, 0 and negative values are refused in one line rather than reaching a socket
    or a deadline (where NaN raises and 0 or -1 mean "time out at once")."""
    from box_memory.errors import InvalidInput

    if not (isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= most):
        shown = f"{value:g}" if isinstance(value, int | float) else repr(value)
        raise InvalidInput(f"{name} must be a number of seconds above 0 and at most {most:g}, not {shown}")
    return float(value)
