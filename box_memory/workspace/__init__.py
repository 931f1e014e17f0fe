"""An opened workspace: how a command finds it, its config, and its folder and rollup indexes."""
