"""The **Details** button under the brief diagnosis, end to end over real HTTP
between the Slack and Kubernetes stand-ins on the seed scenario: a modal with the sections
for the clicker, and the full report plus the evidence JSON attached to the thread once per
snapshot; the role is checked at the click."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.render.blocks import DETAILS_ACTION
from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, diagnose, ephemeral_texts, failed_chat_calls, press

pytestmark = pytest.mark.slow
ALICE, DAVE = "U0ALICE", "U0DAVE"
NAMES = ["INC-0001-report.md", "INC-0001-evidence.json"]


def details_files(demo: Demo) -> list[dict[str, Any]]:
    return [f for f in demo.slack.files(CHANNEL) if f["name"] in NAMES]


async def test_details_opens_a_modal_and_attaches_the_report_and_the_evidence_once(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    await press(demo, root_ts, ALICE, DETAILS_ACTION)

    [modal] = demo.slack.open_views(ALICE)
    assert modal["title"]["text"] == f"Details · {NODE}"
    heads = [b["text"]["text"] for b in modal["blocks"] if b["type"] == "header"]
    assert heads[:3] == ["Evidence", "Talking points", "Every number cited, once"]
    assert "GPUs" in heads and "Processes" in heads
    files = details_files(demo)
    assert [f["name"] for f in files] == NAMES
    assert all(f["thread_ts"] == root_ts for f in files)
    by_name: dict[str, bytes] = {str(f["name"]): f["content"] for f in files}
    evidence = json.loads(by_name["INC-0001-evidence.json"])
    assert evidence["schema"] == "gpunode.evidence" and evidence["schema_version"] == 1
    assert evidence["node"] == NODE and evidence["diagnosis"]["node"] == NODE
    assert evidence["bundle"]["schema_version"] and len(evidence["snapshot"]["sha256"]) == 64
    report = by_name["INC-0001-report.md"].decode()
    assert NODE in report and "INC-0001" in report

    await press(demo, root_ts, ALICE, DETAILS_ACTION)  # a second click: the modal, no new files
    assert len(details_files(demo)) == 2
    assert failed_chat_calls(demo.slack) == []
    assert all(c.ok for c in demo.slack.calls if c.method.startswith(("files.", "views.")))


async def test_details_are_refused_to_someone_without_a_role(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    await press(demo, root_ts, DAVE, DETAILS_ACTION)
    assert demo.slack.open_views(DAVE) == []
    assert details_files(demo) == []
    assert ephemeral_texts(demo.slack, DAVE)
