"""A team folder this user may not read: `log` and the report skip it and name it, never call it
empty or missing (run as an unprivileged user: tests/helpers/unprivileged.py)."""

from __future__ import annotations

from tests.helpers.unprivileged import Box
from tests.integrity.test_unreadable_teams import box  # noqa: F401 - the pytest fixture


def test_log_and_report_name_a_folder_they_may_not_read(box: Box) -> None:  # noqa: F811
    everything = box.json("log")["data"]["events"]
    assert {e["title"] for e in everything if e["event"] == "write"} == {"Deploy keys", "Deploy strategy"}
    box.deny("teams/ops/memories")
    env = box.json("log")
    assert [e["title"] for e in env["data"]["events"] if e["event"] == "write"] == ["Deploy keys"]
    assert env["data"]["unreadable"] == ["teams/ops/memories/"]
    assert sum("permission denied" in w for w in env["warnings"]) == 1
    out = box.base / "report.html"
    data = box.json("report", "-o", str(out))["data"]
    assert "teams/ops/memories/" in data["unreadable"]
    assert "<code>teams/ops/memories/</code>" in out.read_text()
    box.restore()
    again = box.json("log")["data"]
    assert again["unreadable"] == [] and len(again["events"]) == len(everything)
