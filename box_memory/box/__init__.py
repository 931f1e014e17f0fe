"""The client of Box's hosted MCP server: the connection, OAuth and reading its results."""
