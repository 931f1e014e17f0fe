"""box-memory as an MCP server (`box-memory serve`), over stdio or streamable HTTP."""
