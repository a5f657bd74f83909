"""The demo story's `/gpunode timeline`: a postmortem draft a person can edit, not a table of
raw JSON and user ids. Files land in test-artifacts/postmortem/ for a person to read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.postmortem_story import THREAD, export_story_postmortem

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "postmortem"


async def test_the_demo_storys_export_is_a_postmortem_draft_with_people_changes_and_effects() -> (
    None
):
    shared = await export_story_postmortem(ARTIFACTS)
    # a chart after the diagnosis, and after the one action one with the action marked (tier 3
    # gave the shortage back, so tier 1 was not offered afterwards)
    charts = [n for n in shared if not n.startswith("INC-0001-postmortem")]
    assert [n.split("-")[2] for n in charts] == ["memory", "after"], charts
    assert all(shared[n].startswith(b"\x89PNG") for n in charts)
    files = {n: c for n, c in shared.items() if n not in charts}
    assert sorted(files) == [
        "INC-0001-postmortem-end.png",
        "INC-0001-postmortem-start.png",
        "INC-0001-postmortem.html",
        "INC-0001-postmortem.md",
    ]
    md = files["INC-0001-postmortem.md"].decode()
    body, evidence = md.split("## Appendix: charts")
    # the sections an incident commander keeps, in the order incident tools use, then the
    # evidence as appendices
    sections = [
        "## Summary",
        "## Impact",
        "## Root cause and contributing factors",
        "## Detection",
        "## Response and recovery",
        "### The actions one by one",
        "## What went well",
        "## What went badly",
        "## Action items",
        "## Timeline",
    ]
    assert [s for s in sections if s in body] == sections
    assert [body.index(s) for s in sections] == sorted(body.index(s) for s in sections)
    for appendix in (
        "evidence at the start",
        "evidence at the end",
        "talking points as posted",
        "participants",
        "the prevention kit",
    ):
        assert f"## Appendix: {appendix}" in evidence
    assert "| Duration |" in body and "| Cluster | http://127.0.0.1:" in body
    # impact in user terms: the killed workload and what it lost, counted as the findings count
    assert "- data-prep/preprocess-" in body.split("## Impact")[1].split("##")[0]
    assert "killed by the kernel for lack of memory 3 times" in body
    assert "**Root cause.** Host memory exhausted by a workload." in body
    assert "**Contributing factors:**" in body
    # detection: from the first kernel record, not the command
    detection = body.split("## Detection")[1].split("##")[0]
    assert "The first symptom in the evidence: cgroup OOM kill python" in detection
    assert "alice (Alice Ng) opened the incident at" in detection
    # tier 3: who asked, why, what exactly changed (object, field, old -> new), what it bought
    assert "Requested by alice (Alice Ng)" in body
    assert "Why: preprocessing is starving the node" in body
    assert "Deployment data-prep/preprocess (patch\\_resources)" in body
    # held 61.8 GiB less 21.6 short and 2.2 headroom: 37.9 -> 37Gi
    assert "`resources.limits.memory`: 64Gi → 37Gi" in body
    assert "Measured effect: verdict" in body
    # no tier 1: after tier 3 the node was no longer at risk, so nothing was cordoned (a
    # PDB-blocked tier 1 reading "not applied" is covered in tests/core/test_postmortem.py)
    assert "Approved by: bob" not in body and "(cordon)" not in body and "Evicted:" not in body
    assert (
        "succeeded" not in body
        and "succeeded" not in evidence.split("## Appendix: the prevention kit")[0]
    )
    assert "container OOM-killed (data-prep/preprocess" in body.split("Resolved findings: ")[1]
    # action items with an owner to fill: the prevention kit's follow-ups
    items = body.split("## Action items")[1].split("## Timeline")[0]
    assert "| Owner |" in items and items.count("| (owner) |") >= 5
    assert "ResourceQuota for namespace ml-train" in items
    # the timeline starts at the first OOM kill and reads as sentences: no event types, no JSON
    timeline = body.split("## Timeline")[1]
    rows = [r for r in timeline.splitlines() if r.startswith("| 20")]
    assert "The kernel killed data-prep/preprocess-" in rows[0]
    assert "cgroup OOM kill python" in rows[0]
    assert "alice (Alice Ng) opened the incident." in rows[1]
    for raw in ("action\\_result", "action_result", '{"', "opened |", "evidence |"):
        assert raw not in timeline, raw
    assert "U0ALICE" not in md and "U0BOB" not in md
    # the Markdown says where its charts are, and links them
    assert "Charts: INC-0001-postmortem-start.png and INC-0001-postmortem-end.png" in evidence
    assert "(INC-0001-postmortem-start.png)" in evidence
    assert "(INC-0001-postmortem-end.png)" in evidence
    assert "**AI/ML team**" in evidence and "**Ops team**" in evidence
    html = files["INC-0001-postmortem.html"].decode()
    assert html.count('src="data:image/png;base64,') == 2
    # no literal backticks where a browser shows prose (the kit's files keep theirs, in <pre>)
    prose = re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)
    assert "`" not in prose and "<code>python</code>" in prose
    # the thread's text is saved beside the files for a person to read
    assert (ARTIFACTS / THREAD).read_text(encoding="utf-8")
