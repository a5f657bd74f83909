"""The demo story's `/gpunode timeline`: a postmortem draft a person can edit, not a table of
raw JSON and user ids. Files land in test-artifacts/postmortem/ for a person to read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.postmortem_story import export_story_postmortem

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "postmortem"


async def test_the_demo_storys_export_is_a_postmortem_draft_with_people_changes_and_effects() -> (
    None
):
    shared = await export_story_postmortem(ARTIFACTS)
    # a chart after the diagnosis, and after the one action one with the action marked (tier 3
    # gave the shortage back, so tier 1 was not offered afterwards: issue #20)
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
    body, appendix = md.split("## Appendix: the full timeline")
    sections = [
        "## Summary", "### Impact", "## Evidence at the start", "## Actions",
        "## Evidence at the end", "## Talking points as posted", "## Participants",
        "## Follow-ups",
    ]  # fmt: skip
    assert [s for s in sections if s in body] == sections
    assert "| Duration |" in body and "| Pods evicted | 0 |" in body
    # tier 3: who asked, why, what exactly changed (object, field, old -> new), what it bought
    assert "Requested by alice (Alice Ng)" in body
    assert "Why: preprocessing is starving the node" in body
    assert "Deployment data-prep/preprocess (patch\\_resources)" in body
    # held 61.8 GiB less 21.6 short and 2.2 headroom: 37.9 -> 37Gi
    assert "`resources.limits.memory`: 64Gi → 37Gi" in body
    assert "Measured effect: verdict" in body
    # no tier 1: after tier 3 the node was no longer at risk, so nothing was cordoned
    assert "Approved by: bob" not in body and "(cordon)" not in body and "Evicted:" not in body
    assert "container OOM-killed (data-prep/preprocess" in body.split("Resolved findings: ")[1]
    # the kernel's OOM record, the talking points as posted, names instead of ids
    assert "OOM kill: cgroup OOM kill python" in body
    assert "**AI/ML team**" in body and "**Ops team**" in body
    assert "U_ALICE" not in body and "U_BOB" not in body and '{"action_id"' not in body
    assert "(INC-0001-postmortem-start.png)" in body and "(INC-0001-postmortem-end.png)" in body
    assert "ResourceQuota for namespace" in body
    # the raw record stays available, in the appendix
    assert '{"action_id"' in appendix and "tier 3 succeeded" in appendix
    html = files["INC-0001-postmortem.html"].decode()
    assert html.count('src="data:image/png;base64,') == 2
