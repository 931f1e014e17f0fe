"""Keeping a workspace in order: init, teams, status, index rebuild, the mcp-check service."""
