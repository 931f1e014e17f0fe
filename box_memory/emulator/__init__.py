"""A Box MCP server emulator over a local folder, for tests, demos and benchmarks.

It imitates Box's hosted MCP server (https://mcp.box.com) closely enough that the cloud backend
and brain-sync can be exercised end to end without a Box account: a real MCP server over
streamable HTTP on 127.0.0.1, Box-shaped ids, etags, versions and errors, Box-style auth, and
switches for what is not confirmed about the real service plus seeded fault injection.

Run it with `python -m box_memory.emulator --root DIR --port 0 --token T`, or in-process with
`box_memory.emulator.testing.running_emulator`. Heavy imports (mcp, uvicorn) happen lazily.
"""

from __future__ import annotations

from box_memory.emulator.app import DISABLED_TEXT, Emulator, default_state_path
from box_memory.emulator.calls import ToolCall
from box_memory.emulator.switches import Switches

__all__ = ["DISABLED_TEXT", "Emulator", "Switches", "ToolCall", "default_state_path"]
