"""The cloud suite's backend fixtures (local folder, or Box behind the emulator), reused here."""

from __future__ import annotations

from tests.cloud.conftest import bk, box_server, cloud, emu, make  # noqa: F401 - pytest fixtures
