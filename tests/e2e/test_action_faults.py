"""Faults injected into the Kubernetes stand-in at each write of each tier, end to end.

For every (step, fault) pair the same demo runs twice: first the fault hits the *dry run*
(the request is refused and nothing changes), then, after a clean dry run, it hits the
*apply* (the action fails). Each time the test checks what a person sees in the thread (the
failure line with what to do, the changes that did happen, the steps not run), the action
state and the audit row in the store, the incident state (mitigating only if something was
applied), and that the cluster changed in exactly the ways the thread says.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from bot.core.reporting.records import ActionRecord
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim.blocks import find_element
from tests.e2e.conftest import NODE, diagnose, press, request_tier, shown

pytestmark = pytest.mark.slow
ALICE, BOB = "U0ALICE", "U0BOB"
PC = "gpunode-critical-training"
#: a write that hangs: the gateway gives up after REQUEST_TIMEOUT_S, the stand-in answers
#: (and drops the request, as a server does when the client is gone) after DELAY_S
REQUEST_TIMEOUT_S, DELAY_S = 4.0, 6.5


@dataclass(frozen=True)
class Step:
    tier: int
    method: str
    path: str  # regex searched in the request path (the query, e.g. dryRun, is not part)
    failing: str  # how the thread names the failed step
    not_run: tuple[str, ...]  # names of the steps the thread must list as not run
    done: tuple[str, ...]  # cluster facts (see cluster()) changed before the failing step


STEPS = {
    # tier 1 evicts only what covers the shortage: preprocess (feature-cache is not needed)
    "tier1-cordon": Step(
        1, "PATCH", r"^/api/v1/nodes/gpu-node-01$", "cordon `gpu-node-01`", ("preprocess-",), ()
    ),
    "tier1-evict": Step(
        1,
        "POST",
        r"/pods/preprocess-[^/]+/eviction$",
        "preprocess-",
        (),
        ("cordoned", "scale_down_protected"),
    ),
    "tier2-priorityclass": Step(
        2, "POST", r"/priorityclasses$", f"`{PC}` failed", ("train-llm",), ()
    ),
    "tier2-statefulset": Step(
        2, "PATCH", r"/statefulsets/train-llm$", "`train-llm` failed", (), ("priority_class",)
    ),
    "tier3-deployment": Step(
        3, "PATCH", r"/deployments/preprocess$", "`preprocess` failed", (), ()
    ),
}
FAULTS: dict[str, dict[str, Any]] = {
    "500": {"status": 500},
    "timeout": {"delay_s": DELAY_S},
    "403": {"status": 403},
    "409": {"status": 409},
    "429": {"status": 429},
}
#: what the failure line must tell a person to do, per fault
ADVICE = {
    "500": "check the API server's health",
    "timeout": "did not answer",
    "403": "grant the gpunode ClusterRole",
    "409": "re-read the object and retry",
    "429": "retry later",
}
#: words of the thread for each cluster fact that changed (templates/slack/acting.j2, English)
SAID = {
    "cordoned": "cordoned node `gpu-node-01`",
    "scale_down_protected": "set the scale-down annotations of node `gpu-node-01`",
    "priority_class": f"created PriorityClass `{PC}`",
    "sts_priority": "set the PriorityClass of StatefulSet",
    "deploy_limits": "changed the resources of Deployment",
    "preprocess_pod": "preprocess-",  # with ": evicted" (see said_changes)
}
KNOWN_GAPS: dict[tuple[str, str], str] = {}


def cluster(demo: Demo) -> dict[str, Any]:
    """The facts each tier may change, read straight from the stand-in's store."""
    node = demo.kube.get("nodes", None, NODE)
    sts = demo.kube.get("statefulsets", "ml-train", "train-llm")
    dep = demo.kube.get("deployments", "data-prep", "preprocess")
    assert node is not None and sts is not None and dep is not None
    [pandas] = dep["spec"]["template"]["spec"]["containers"]
    return {
        "cordoned": node["spec"].get("unschedulable") is True,
        "scale_down_protected": sorted(
            k
            for k in (node["metadata"].get("annotations") or {})
            if k
            in (
                "cluster-autoscaler.kubernetes.io/scale-down-disabled",
                "karpenter.sh/do-not-disrupt",
            )
        ),
        "priority_class": demo.kube.get("priorityclasses", None, PC) is not None,
        "sts_priority": sts["spec"]["template"]["spec"].get("priorityClassName"),
        "deploy_limits": pandas.get("resources", {}).get("limits"),
        "preprocess_pod": sorted(
            p["metadata"]["uid"]
            for p in demo.kube.list("pods", "data-prep")
            if p["spec"].get("nodeName") == NODE
        ),
    }


def said_changes(record: ActionRecord) -> set[str]:
    """The cluster facts the action's result (what the thread lists) says it changed."""
    result = record.result or {}
    facts = {
        "cordon": "cordoned",
        "annotate_node": "scale_down_protected",
        "create_priority_class": "priority_class",
        "set_priority_class": "sts_priority",
        "patch_resources": "deploy_limits",
    }
    said = {
        facts[c["verb"]]
        for c in result.get("changes", [])
        if not c.get("noop") and not c.get("dry_run")
    }
    if any(e["status"] == "evicted" for e in result.get("evictions", [])):
        said.add("preprocess_pod")
    return said


@pytest.fixture
async def demo() -> AsyncIterator[Demo]:
    async with running_demo("seed") as d:
        yield d


async def settle(demo: Demo, fault: str, *, writes: bool) -> None:
    """Wait for the bot; after a timed-out real write, also for the stand-in to finish (and
    drop) the request the bot gave up on, so the cluster is read in its final state."""
    await demo.drain()
    if fault == "timeout" and writes:
        await asyncio.sleep(DELAY_S - REQUEST_TIMEOUT_S + 0.2)


def failure_line(step: Step, text: str) -> str:
    lines = [ln for ln in text.splitlines() if step.failing in ln and "fail" in ln.lower()]
    assert lines, f"no failure line naming {step.failing!r} in:\n{text}"
    return lines[0]


async def audit_rows(demo: Demo, record: ActionRecord) -> list[Any]:
    return [
        r for r in await demo.runtime.store.audit_since(None) if r.action_id == record.action_id
    ]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("step_id", list(STEPS))
async def test_a_fault_at_a_write_is_reported_and_the_cluster_matches_the_thread(
    demo: Demo, step_id: str, fault: str, request: pytest.FixtureRequest
) -> None:
    if (step_id, fault) in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_GAPS[step_id, fault], strict=True))
    step = STEPS[step_id]
    if fault == "timeout":
        demo.runtime.services.clusters.default_port().transport.timeout_s = REQUEST_TIMEOUT_S  # type: ignore[attr-defined]
    root_ts = await diagnose(demo)
    untouched = cluster(demo)

    # 1. the fault hits the dry run: refused, nothing changed, no Apply offered
    rule = demo.kube.faults.add(step.method, step.path, times=-1, **FAULTS[fault])
    dry = await request_tier(demo, root_ts, step.tier)
    await settle(demo, fault, writes=False)  # dryRun=All: nothing can land later
    assert rule.hits >= 1
    demo.kube.faults.clear()
    dry, text, msg = await shown(demo, dry)
    assert dry.state == "refused"
    assert "Nothing was changed" in text
    assert ADVICE[fault] in failure_line(step, text)
    assert find_element(msg.get("blocks") or [], "gpunode_apply") is None
    assert [r.outcome for r in await audit_rows(demo, dry)] == ["dry_run_failed"]
    assert cluster(demo) == untouched
    assert (await demo.runtime.store.open_incidents(NODE))[0].state == "investigating"

    # 2. a clean dry run, then the fault hits the apply
    action = await request_tier(demo, root_ts, step.tier)
    assert action.state != "refused"
    rule = demo.kube.faults.add(step.method, step.path, times=-1, **FAULTS[fault])
    await press(demo, root_ts, ALICE, "gpunode_apply")
    if step.tier == 1:
        await press(demo, root_ts, BOB, "gpunode_approve")
    await settle(demo, fault, writes=True)
    assert rule.hits >= 1
    demo.kube.faults.clear()

    action, text, _ = await shown(demo, action)
    assert action.state == "failed"
    assert "Failed" in text
    assert ADVICE[fault] in failure_line(step, text)
    said = said_changes(action)
    assert said == set(step.done)
    for fact in said:
        assert SAID[fact] in text, f"{fact} changed but the thread does not say so"
    for name in step.not_run:
        assert "Not run:" in text and name in text.split("Not run:", 1)[1]
    now = cluster(demo)
    assert {k for k in now if now[k] != untouched[k]} == said  # no unreported change
    # a timed-out write adds its "no_answer" and "reread" rows between the two
    claimed, *between, row = [
        r for r in await audit_rows(demo, action) if r.action.endswith(".execute")
    ]
    assert claimed.decision == "claimed"
    if fault == "timeout":
        assert [(r.decision, r.outcome) for r in between] == [
            ("no_answer", "unknown"),
            ("reread", "not_landed"),
        ]
    else:
        assert between == []
    assert row.decision == "failed"
    assert row.changes is not None and row.changes["changes"] == (action.result or {})["changes"]
    incident = (await demo.runtime.store.open_incidents(NODE))[0]
    assert incident.state == ("mitigating" if said else "investigating")
    timeline = await demo.runtime.store.timeline(incident.id)
    assert any(e.kind == "action_result" and "failed" in e.text for e in timeline)
