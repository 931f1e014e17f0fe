from __future__ import annotations

from tests.cloud.conftest import bk, box_server, emu, make  # noqa: F401 - pytest fixtures
