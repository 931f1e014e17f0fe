from __future__ import annotations

from box_memory.cli.app import main

main()
