"""box-memory: durable, auditable agent memory as markdown files in Box."""

from __future__ import annotations

__version__ = "0.1.0"
