"""A workspace laid out exactly like the plugin's examples opens, reads and accepts writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent.parent / "fixtures" / "plugin_workspace"


@pytest.fixture
def plugin_ws(tmp_path: Path) -> Path:
    root = tmp_path / "plugin"
    shutil.copytree(FIXTURE, root)
    return root


def test_reads_plugin_memories_by_every_reference(plugin_ws: Path, cli) -> None:
    w = ("-w", str(plugin_ws))
    by_id = cli.json("get", "mem_01JAAAA1B2C3D4E5F6G7H8J9K0", *w)["data"]
    assert by_id["frontmatter"]["title"] == "Queue Backend Decision"
    assert by_id["frontmatter"]["links"][0]["label"] == "Comparison notes"
    assert cli.json("get", "[[Drain dead-letter queues weekly]]", *w)["data"]["id"].endswith("K2")
    assert cli.json("get", "queue-backend-decision", *w)["data"]["id"].endswith("K0")
    assert cli.json("get", "1822847291673", *w)["data"]["id"].endswith("K0")  # Box file id from the index
    comp = cli.json("get", "[[Companion — capacity-plan.xlsx]]", *w)["data"]
    assert comp["frontmatter"]["companion_for"]["file_id"] == "2844291673322"
    assert comp["path"] == "memories/companion__capacity-plan-xlsx-companion.md"


def test_write_into_plugin_workspace_keeps_its_keys_and_entries(plugin_ws: Path, cli) -> None:
    cfg_before = (plugin_ws / "_box-memory.json").read_bytes()
    env = cli.json(
        "write",
        "We decided retries use exponential back-off.",
        "--title",
        "Retry Policy",
        "--tag",
        "infra",
        "-w",
        str(plugin_ws),
    )["data"]
    assert (plugin_ws / "_box-memory.json").read_bytes() == cfg_before  # a write never rewrites config
    idx = json.loads((plugin_ws / "memories" / "_index.json").read_bytes())
    assert idx["entry_count"] == 4
    ids = [e["id"] for e in idx["entries"]]
    assert env["id"] in ids
    old = next(e for e in idx["entries"] if e["id"].endswith("K0"))
    assert old["file_id"] == "1822847291673"  # Box ids from the plugin's index survive our rewrite
    assert idx["folder_id"] == "384711992847"
    assert idx["by_tag"]["infra"] == [i for i in ids if not i.endswith("L5")]
    assert idx["by_companion_for"] == {"2844291673322": "mem_01JAAAA1B2C3D4E5F6G7H8J9L5"}
    roll = json.loads((plugin_ws / "_index.json").read_bytes())
    assert roll["entry_count"] == 4
    # The superseding flow works on plugin-written memories too.
    sup = cli.json(
        "write",
        "We now use SNS fan-out in front of SQS.",
        "--title",
        "Queue Backend Decision",
        "--kind",
        "decision",
        "--supersedes",
        "mem_01JAAAA1B2C3D4E5F6G7H8J9K0",
        "-w",
        str(plugin_ws),
    )["data"]
    text = (plugin_ws / "memories" / "decision__queue-backend-decision.md").read_text()
    assert "status: superseded" in text and f"superseded_by: {sup['id']}" in text
    assert "label: Comparison notes" in text  # every other key preserved on the rewrite
    assert "confidence: 0.85" in text
