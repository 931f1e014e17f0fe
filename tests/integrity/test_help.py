"""Every integrity command answers --help."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ["index-rebuild"],
        ["status"],
        ["team"],
        ["team", "create"],
        ["team", "ls"],
        ["team", "inspect"],
        ["team", "conflicts"],
        ["team", "remove"],
    ],
)
def test_help(cli, args: list[str]) -> None:
    res = cli(*args, "--help")
    assert res.exit_code == 0 and "Usage:" in res.stdout
