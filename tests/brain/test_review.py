"""The review pass: candidates from new evidence and workspace memories; accept and reject."""

from __future__ import annotations

import datetime as dt

from box_memory.brain.review import propose
from box_memory.brain.review_text import Doc, Mem, safe_title
from box_memory.brain.sync import SyncOptions
from box_memory.format import frontmatter
from tests.brain.helpers import folder_id, lib_sync, put, sync

POLICY_V2 = """# Data Retention Policy v2

Customer logs are kept for 90 days under the data retention policy.
Backups are encrypted at rest.
"""
PLAYBOOK = """# On-call playbook

Every Monday the on-call engineer rotates the pager and posts the weekly incident report.

- [ ] Send the signed contract to legal
- [x] Update the runbook
TODO: confirm the escalation budget with finance
"""


def candidates(cli, status: str = "proposed") -> list[dict]:
    return cli.json("brain", "review", "--status", status)["data"]["candidates"]


def by_kind(cands: list[dict], kind: str) -> list[dict]:
    return [c for c in cands if c["kind"] == kind]


def write(cli, ws, text: str, title: str, *extra: str) -> str:
    return cli.json("write", text, "--title", title, "-w", str(ws), *extra)["data"]["id"]


def test_a_conflicting_policy_document_proposes_superseding_the_memory(cli, emu, box, ws):
    old = write(
        cli, ws, "Customer logs are kept for 30 days under the data retention policy.",
        "Data retention policy", "--kind", "decision",
    )  # fmt: skip
    write(cli, ws, "The cafeteria opens at noon on weekdays.", "Cafeteria hours")
    put(box, "policies/retention-v2.md", POLICY_V2)
    run = sync(cli, "--folder-id", "0", "-w", str(ws))
    assert run["review"]["status"] == "done"
    assert run["review"]["memories"] == 2
    file_id = folder_id(emu, "policies/retention-v2.md")
    [conflict] = by_kind(candidates(cli), "conflict")
    assert conflict["supersedes"] == old
    assert conflict["title"] == "Data retention policy"
    assert "90 day" in conflict["rationale"] and "30 day" in conflict["rationale"]
    assert 0 < conflict["confidence"] <= 1
    doc_ev, mem_ev = conflict["evidence"]
    assert doc_ev["file"] == "retention-v2.md"
    assert doc_ev["url"] == f"https://app.box.com/file/{file_id}"
    assert "90 days" in doc_ev["excerpt"]
    assert mem_ev["memory_id"] == old and "30 days" in mem_ev["excerpt"]

    accepted = cli.json("brain", "accept", str(conflict["id"]), "-w", str(ws))["data"]
    mem = accepted["memory"]
    assert mem["supersedes"] == old
    assert accepted["candidate"]["status"] == "accepted"
    assert accepted["candidate"]["memory_id"] == mem["id"]
    meta, body = frontmatter.parse((ws / mem["file"]).read_text("utf-8"), "new")
    version = emu.fs.get(file_id).version_id
    assert meta["sources"] == [
        {"type": "box_file", "ref": file_id, "url": f"https://app.box.com/file/{file_id}", "version": version}
    ]
    assert meta["kind"] == "decision"
    assert meta["supersedes"] == [old]
    assert "90 days" in body
    old_after = cli.json("get", old, "-w", str(ws))["data"]
    assert old_after["frontmatter"]["status"] == "superseded"
    assert old_after["current_id"] == mem["id"]
    assert cli.json("brain", "accept", str(conflict["id"]), "-w", str(ws), code=2)["errors"]


def test_open_loops_and_recurring_workflows_are_proposed_and_reject_writes_nothing(cli, emu, box, ws, snap):
    put(box, "playbook.md", PLAYBOOK)
    sync(cli, "--folder-id", "0", "-w", str(ws))
    cands = candidates(cli)
    [loop] = by_kind(cands, "open_loop")
    assert "Send the signed contract to legal" in loop["statement"]
    assert "confirm the escalation budget" in loop["statement"]
    assert "Update the runbook" not in loop["statement"]
    assert loop["evidence"][0]["file"] == "playbook.md"
    assert loop["evidence"][0]["url"].startswith("https://app.box.com/file/")
    [flow] = by_kind(cands, "workflow")
    assert "Every Monday" in flow["statement"]
    assert "every monday" in flow["rationale"].lower()

    before = snap(ws)
    rejected = cli.json("brain", "reject", str(loop["id"]))["data"]["candidate"]
    assert rejected["status"] == "rejected"
    assert snap(ws) == before
    assert [c["id"] for c in candidates(cli, "rejected")] == [loop["id"]]

    written = cli.json("brain", "accept", str(flow["id"]), "-w", str(ws))["data"]["memory"]
    assert written["kind"] == "note"
    meta, _ = frontmatter.parse((ws / written["file"]).read_text("utf-8"), "flow")
    assert meta["tags"] == ["box-brain", "workflow"]
    assert meta["sources"][0]["type"] == "box_file"
    recalled = cli.json("recall", "on-call pager", "-w", str(ws))["data"]
    assert written["id"] in [h["id"] for h in recalled["hits"]]


def test_a_memory_citing_a_changed_box_file_gets_a_stale_policy_candidate(emu, box, ws, cli):
    p = put(box, "travel.md", "Travel policy: economy class for flights under 6 hours.\n")
    lib_sync("0", review=False)
    file_id = folder_id(emu, "travel.md")
    version = emu.fs.get(file_id).version_id
    mem = write(
        cli, ws, "Flights under 6 hours are economy class.", "Travel policy",
        "--source", f"box_file:{file_id}",
    )  # fmt: skip
    p.write_text("Travel policy: premium economy for flights over 4 hours.\n", encoding="utf-8")
    run = lib_sync("0", review=True)
    assert run.review and run.review["status"] == "done"
    [stale] = by_kind(candidates(cli), "stale_policy")
    assert mem in stale["statement"]
    assert stale["evidence"][1]["memory_id"] == mem
    assert stale["version"] != version


def test_review_runs_only_for_new_or_changed_files_when_on_and_6_hours_after_the_last(
    emu, box, cli, _default_workspace
):
    p = put(box, "a.md", "TODO: one\n")
    assert lib_sync("0").review == {**lib_sync_review_done(_default_workspace), "candidates": 1}
    again = lib_sync("0")
    assert again.review == {"status": "skipped", "reason": "no new or changed files"}
    p.write_text("TODO: two\n", encoding="utf-8")
    soon = lib_sync("0")
    assert soon.review and soon.review["reason"] == "the last review of this source is less than 6 h old"
    p.write_text("TODO: three\n", encoding="utf-8")
    off = lib_sync("0", review=False)
    assert off.review == {"status": "skipped", "reason": "review is off for this source"}
    p.write_text("TODO: four\n", encoding="utf-8")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=7)
    run = lib_sync("0", review=True, opts=SyncOptions(now=lambda: later))
    assert run.review and run.review["status"] == "done"
    assert [c["statement"].splitlines()[-1] for c in by_kind(candidates(cli), "open_loop")] == [
        "- [ ] TODO: one",
        "- [ ] TODO: four",
    ]


def lib_sync_review_done(workspace) -> dict:
    """A done review of one document in the (empty) workspace the source belongs to."""
    return {"status": "done", "documents": 1, "memories": 0, "workspace": str(workspace)}


def test_a_review_failure_is_recorded_and_never_fails_the_sync(cli, emu, box, ws):
    (ws / "memories" / "_index.json").write_text("{ not json", encoding="utf-8")
    put(box, "a.md", "TODO: something\n")
    run = sync(cli, "--folder-id", "0", "-w", str(ws))
    assert run["status"] == "completed"
    assert run["_envelope"]["exit_code"] == 0
    assert run["review"]["status"] == "failed"
    assert "InvalidFile" in run["review"]["error"]
    assert any("review failed" in w for w in run["_envelope"]["warnings"])
    runs = cli.json("brain", "runs")["data"]["runs"]
    assert runs[0]["review"]["status"] == "failed"


def test_a_rejected_candidate_is_not_proposed_again_for_the_same_version(emu, box, cli, _default_workspace):
    put(box, "a.md", "TODO: call the vendor\n")
    lib_sync("0")
    [loop] = by_kind(candidates(cli), "open_loop")
    cli.json("brain", "reject", str(loop["id"]))
    file_id = folder_id(emu, "a.md")
    item = emu.fs.get(file_id)
    emu.fs.move(item, emu.fs.parent(item), "vendor.md", AssertionError)  # same version, new name
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=7)
    run = lib_sync("0", opts=SyncOptions(now=lambda: later))
    assert run.counts["replaced"] == 1
    assert run.review == {**lib_sync_review_done(_default_workspace), "candidates": 0}
    assert candidates(cli) == []
    assert cli.json("brain", "reject", "abc", code=2)["errors"][0]["code"] == "invalid_input"
    assert cli.json("brain", "reject", "999", code=1)["errors"][0]["code"] == "not_found"


def test_heuristics_on_their_own():
    doc = Doc(
        "1", "pricing.md", "https://app.box.com/file/1", "pricing.md", "v2",
        "Owner: Bob\nWe decided to use Stripe for billing.\nCorrection: the annual fee is no longer waived.\n"
        "Remote work is not allowed on Fridays.\n",
    )  # fmt: skip
    memories = [
        Mem("mem_a", "Pricing owner", "fact", "Owner: Alice\n"),
        Mem("mem_b", "Remote work", "decision", "Remote work is allowed on Fridays for everyone."),
        Mem("mem_c", "Lunch", "note", "Lunch is at noon."),
    ]
    cands = propose([doc], memories)
    kinds = {c["kind"] for c in cands}
    assert {"fact", "conflict", "correction"} <= kinds
    conflicts = {c["supersedes"]: c for c in by_kind(cands, "conflict")}
    assert set(conflicts) == {"mem_a", "mem_b"}
    assert "'owner'" in conflicts["mem_a"]["rationale"]
    assert "negated" in conflicts["mem_b"]["rationale"]
    assert any(c["memory_kind"] == "decision" and "Stripe" in c["statement"] for c in by_kind(cands, "fact"))
    assert all(0 < c["confidence"] < 1 and c["rationale"] and c["evidence"] for c in cands)
    assert propose([doc], memories) == cands  # deterministic


def test_candidate_titles_are_safe_memory_titles():
    assert safe_title("../../etc/passwd\nx") == "etc-passwd x"
    assert safe_title("a..b/c\\d") == "a.b-c-d"
    assert safe_title("") == "Box document"
    assert len(safe_title("t" * 500)) == 120
