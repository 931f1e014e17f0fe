"""The Box MCP client: tool calls over one MCP session per command (the network is reached only
through it and the modules it is built from).

A synchronous facade (the CLI is synchronous) over an async MCP session (mcp_http.py: the
streamable HTTP transport spoken on httpx2, without the `mcp` SDK and its start-up cost), kept
open for the lifetime of one command inside a blocking portal thread.

How HTTP problems reach us: the wire notes the status, headers or transport exception of each
request's POST in an `Exchange` the call hands it (transport.py), and raises what it met (an
`MCPError` for a JSON-RPC error, `HTTPStatusError`, `InvalidMessage` for what is not MCP, the
transport exception). The call then reads both to decide: refresh the token (401), back off
(429 + Retry-After, 5xx, transport errors), reconnect (the server ended the session) or give up
with a typed error.

The deadline: a client carries one command's budget (`deadline_s`, default
`BOX_MEMORY_DEADLINE_S`, counted from when the client is made; one client serves one command).
Every call runs inside it, retries and their waits included; a Retry-After longer than what is
left ends the call at once, naming the wait. Calls made after it has passed (a command putting
things back: releasing its lock) share one short grace period, then fail at once. Runs long by
design (brain-sync) pass `deadline_s=None`.

The client is built in layers, each a class over the one before: its settings, state and
deadline (base.py), the retry policy (retry.py), the session and its catalogue (session.py) and,
here, the tool calls. The token source is tokens.py, the wire mcp_http.py, what HTTP saw
transport.py, the catalogue kept on disk catalogue.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import anyio
from anyio.from_thread import start_blocking_portal

from box_memory.box.catalogue import schema_error
from box_memory.box.mcp_http import check_output
from box_memory.box.payload import unwrap, unwrap_text
from box_memory.box.retry import Transient
from box_memory.box.schema import shape_args
from box_memory.box.session import Session
from box_memory.box.transport import Exchange
from box_memory.errors import (
    AuthError,
    BackendUnavailable,
    BoxMemoryError,
    BoxToolError,
    Incompatible,
    ToolMissing,
)
from box_memory.redaction import redact

__all__ = [
    "OPTIONAL_TOOLS",
    "READ_TOOLS",
    "REQUIRED_TOOLS",
    "BoxMCPClient",
    "redact",
]

REQUIRED_TOOLS = (
    "list_folder_content_by_folder_id",
    "get_file_content",
    "get_file_details",
    "upload_file",
    "upload_file_version",
    "create_folder",
    "move_file",
    "who_am_i",
)
OPTIONAL_TOOLS = (
    "search_files_keyword",
    "get_download_url",
    "ai_qa_single_file",
    "set_file_metadata",
    "create_metadata_template",
    "list_metadata_templates",
    "get_folder_details",
)
READ_TOOLS = frozenset(
    {
        "list_folder_content_by_folder_id",
        "get_file_content",
        "get_file_details",
        "get_folder_details",
        "ai_qa_single_file",
        "who_am_i",
    }
)
"""The tools brain-sync may call (its read-only allowlist, docs/spec/brain-sync.md)."""


class BoxMCPClient(Session):
    """One MCP session per command, with typed errors, retries and token refresh.

    Use as a context manager::

        with BoxMCPClient(url, token_source) as box:
            page = box.call("list_folder_content_by_folder_id", {"folder_id": "0"})
    """

    def __enter__(self) -> BoxMCPClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Connect, authenticate and fetch the tool catalogue (raises typed errors, exit 4)."""
        try:
            self._token = self._source.access_token()
        except BoxMemoryError as exc:
            raise self._public(exc) from None
        except Exception as exc:
            raise self._public(AuthError(f"could not get a Box access token: {exc}")) from None
        if not self._token:
            raise AuthError("no Box access token - run `box-memory auth login`")
        self._secrets.add(self._token)
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._portal.call(self._bounded, self._aopen)
        except BoxMemoryError as exc:
            self.close()
            raise self._public(exc) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """End the session and the portal thread; safe to call twice."""
        portal, self._portal = self._portal, None
        if portal is None:
            return
        try:
            with contextlib.suppress(Exception):
                portal.call(self._aclose)
        finally:
            cm, self._portal_cm = self._portal_cm, None
            if cm is not None:
                with contextlib.suppress(Exception):
                    cm.__exit__(None, None, None)

    @property
    def is_open(self) -> bool:
        return self._portal is not None

    def has_tool(self, name: str) -> bool:
        return name in self.tools

    def reload_catalogue(self) -> None:
        """Read the tool list from the server again, past the on-disk cache (a plan change)."""
        self._run(self._load_catalogue)

    def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        """Call a tool; returns the unwrapped payload (dict/list, or str for plain text)."""
        return self._run(self._acall, name, args or {}, unwrap)

    def call_text(self, name: str, args: dict[str, Any] | None = None) -> str:
        """Call a tool whose answer is a document's text (`get_file_content`), returned verbatim."""
        result: str = self._run(self._acall, name, args or {}, unwrap_text)
        return result

    def call_many(
        self, calls: Iterable[tuple[str, dict[str, Any] | None]], *, concurrency: int = 4
    ) -> list[Any]:
        """Run calls concurrently (at most `concurrency` in flight); results in order, errors as values."""
        batch = [(name, args or {}) for name, args in calls]
        if not batch:
            return []
        result: list[Any] = self._run(self._acall_many, batch, max(1, int(concurrency)))
        return result

    def _run(self, func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        if self._portal is None:
            raise BackendUnavailable("Box MCP client is not open (use it as a context manager)")
        try:
            return self._portal.call(self._bounded, func, *args)
        except BoxMemoryError as exc:
            raise self._public(exc) from None

    def _check_call(self, name: str) -> None:
        if self.allowed_tools is not None and name not in self.allowed_tools:
            raise BoxMemoryError(
                f"Box tool {name} is not allowed in this session "
                f"(allowed: {', '.join(sorted(self.allowed_tools))})",
                code="tool_not_allowed",
            )
        if name not in self.tools:
            raise ToolMissing(
                f"Box MCP server at {self.url} has no tool {name} "
                "(not offered by the server, or hidden by the enterprise admin)"
            )

    async def _acall(self, name: str, args: dict[str, Any], reader: Callable[[str, Any], Any]) -> Any:
        try:
            return await self._acall_once(name, args, reader)
        except (ToolMissing, Incompatible, BoxToolError) as exc:
            stale = isinstance(exc, ToolMissing | Incompatible) or schema_error(exc)
            if not stale or not await self._revalidate():
                raise
            return await self._acall_once(name, args, reader)

    async def _acall_once(self, name: str, args: dict[str, Any], reader: Callable[[str, Any], Any]) -> Any:
        self._check_call(name)
        args = shape_args(name, args, self.tools[name].get("inputSchema"))

        output_schema = self.tools[name].get("outputSchema")

        async def attempt() -> Any:
            conn = await self._live()
            exchange = Exchange()
            self.call_count += 1
            try:
                result = await conn.client.call_tool(name, args, exchange)
                if isinstance(output_schema, dict) and result.get("isError") is not True:
                    check_output(name, output_schema, result)
            except Exception as exc:
                problem = self._classify_failure(exchange, exc, tool=name)
                if isinstance(problem, Transient) and problem.reconnect:
                    conn.dead = conn.dead or exc
                raise problem from None
            try:
                return reader(name, result)
            except BoxToolError as exc:
                raise self._classify_box_error(exc) from None

        try:
            return await self._retrying(attempt, retries=self.max_retries)
        except BoxMemoryError:
            raise
        except Exception as exc:  # never let a surprise escape untyped
            raise BoxToolError(f"Box tool {name} failed unexpectedly: {type(exc).__name__}: {exc}") from None

    async def _acall_many(self, batch: Sequence[tuple[str, dict[str, Any]]], concurrency: int) -> list[Any]:
        results: list[Any] = [None] * len(batch)
        limiter = anyio.Semaphore(concurrency)

        async def one(index: int, name: str, args: dict[str, Any]) -> None:
            async with limiter:
                try:
                    results[index] = await self._acall(name, args, unwrap)
                except BoxMemoryError as exc:
                    results[index] = self._public(exc)

        async with anyio.create_task_group() as tg:
            for index, (name, args) in enumerate(batch):
                tg.start_soon(one, index, name, args)
        return results
