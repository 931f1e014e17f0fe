"""`python -m box_memory`: the same command line as `box-memory`."""

from __future__ import annotations

from box_memory.cli.app import main

main()
