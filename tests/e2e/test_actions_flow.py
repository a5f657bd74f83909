"""End to end on the seed cluster: tier buttons, confirmation modals, dry runs,
approvals, idempotent execution, refusals, and undo, all through the Slack stand-in."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import aiohttp
import pytest

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from gpunode_sandbox.story import CHANNEL, find_button
from tests.e2e.conftest import (
    NODE,
    diagnose,
    ephemeral_texts,
    failed_chat_calls,
    press,
    submit_modal,
    text_of,
    thread,
)

pytestmark = pytest.mark.slow
ALICE, BOB, DAVE = "U0ALICE", "U0BOB", "U0DAVE"


async def request_tier(
    demo: Demo, root_ts: str, tier: int, *, user: str = ALICE, edits: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Press the tier button and submit its modal: the dry run is then in the thread."""
    await press(demo, root_ts, user, f"gpunode_tier{tier}")
    view, errors = await submit_modal(demo, user, {"reason": "memory incident", **(edits or {})})
    assert errors == {}, errors
    return view


def patches(demo: Demo, fragment: str) -> list[tuple[str, str, str]]:
    """PATCH requests that change something (server-side dry runs excluded)."""
    return [
        r
        for r in demo.kube.requests
        if r[0] == "PATCH" and fragment in r[1] and "dryRun" not in r[2]
    ]


def pods_on_node(demo: Demo) -> dict[str, str]:
    """uid -> name of the pods bound to the node (a recreated pod has a new uid)."""
    return {
        p["metadata"]["uid"]: p["metadata"]["name"]
        for p in demo.kube.list("pods")
        if p["spec"].get("nodeName") == NODE
    }


def sts_template(demo: Demo) -> dict[str, Any]:
    sts = demo.kube.get("statefulsets", "ml-train", "train-llm")
    assert sts is not None
    return copy.deepcopy(sts["spec"]["template"])


async def audit(demo: Demo) -> list[Any]:
    return list(await demo.runtime.store.audit_since(None))


async def test_tier1_requested_by_alice_and_approved_by_bob_cordons_and_evicts(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    before = {n: uid for uid, n in pods_on_node(demo).items()}
    await request_tier(demo, root_ts, 1)
    await press(demo, root_ts, ALICE, "gpunode_apply")
    assert (demo.kube.get("nodes", None, NODE) or {})["spec"].get("unschedulable") is not True

    await press(demo, root_ts, BOB, "gpunode_approve")

    node = demo.kube.get("nodes", None, NODE)
    assert node is not None and node["spec"]["unschedulable"] is True
    left = pods_on_node(demo)
    preprocess = next(n for n in before if n.startswith("preprocess-"))
    cache = next(n for n in before if n.startswith("feature-cache-"))
    assert before[preprocess] not in left  # evicted: it alone covers the shortage
    assert before[cache] in left  # left alone, not needed
    assert {"train-llm-0", "jupyter-alice"} <= set(left.values())  # protected pods stay
    replies = "\n".join(text_of(m) for m in thread(demo, root_ts))
    assert "approved by <@U0BOB>" in replies
    assert f"evict `serving/{cache}`" not in replies
    decisions = [(a.actor, a.decision) for a in await audit(demo)]
    assert (BOB, "approved") in decisions or any(d == "executed" for _, d in decisions)
    assert failed_chat_calls(demo.slack) == []


async def test_a_requester_cannot_approve_their_own_request(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    await request_tier(demo, root_ts, 1)
    await press(demo, root_ts, ALICE, "gpunode_apply")

    await press(demo, root_ts, ALICE, "gpunode_approve")

    assert (demo.kube.get("nodes", None, NODE) or {})["spec"].get("unschedulable") is not True
    refusals = [t for t in ephemeral_texts(demo.slack, ALICE) if "no_entry" in t]
    assert refusals, "self-approval was not refused to the requester"


async def test_a_hundred_simultaneous_apply_clicks_execute_once(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    await request_tier(demo, root_ts, 2)
    found = find_button(thread(demo, root_ts), "gpunode_apply")
    assert found is not None
    ts, button = found

    results = await asyncio.gather(
        *(
            demo.slack.click(ALICE, CHANNEL, ts, "gpunode_apply", value=button["value"])
            for _ in range(100)
        )
    )
    await demo.drain()

    assert {r.status for r in results} == {200}
    assert len(patches(demo, "/statefulsets/train-llm")) == 1
    assert sts_template(demo)["spec"].get("priorityClassName") == "gpunode-critical-training"


async def test_the_same_click_delivered_three_times_executes_once(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    await request_tier(demo, root_ts, 2)
    sent: list[tuple[bytes, dict[str, str]]] = []
    original = demo.slack.driver.send_raw

    async def recording(body: bytes, headers: dict[str, str]) -> Any:
        sent.append((body, headers))
        return await original(body, headers)

    demo.slack.driver.send_raw = recording  # type: ignore[method-assign]
    await press(demo, root_ts, ALICE, "gpunode_apply")
    body, headers = sent[-1]
    for _ in range(2):
        assert (await demo.slack.send_raw(body, headers)).status == 200
    await demo.drain()

    assert len(patches(demo, "/statefulsets/train-llm")) == 1


async def test_a_user_without_a_role_is_refused_audited_and_nothing_changes(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    before = sts_template(demo)

    await press(demo, root_ts, DAVE, "gpunode_tier2")

    assert demo.slack.open_views(DAVE) == []
    assert any("no_entry" in t for t in ephemeral_texts(demo.slack, DAVE))
    refused = [a for a in await audit(demo) if a.actor == DAVE]
    assert refused and refused[-1].decision in ("denied", "refused")
    assert sts_template(demo) == before
    assert patches(demo, "/") == []


async def test_a_plan_made_stale_by_a_change_in_the_cluster_is_refused(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    await request_tier(demo, root_ts, 2)
    url = f"{demo.kube.url}/apis/apps/v1/namespaces/ml-train/statefulsets/train-llm"
    change = {"spec": {"template": {"spec": {"priorityClassName": "batch-low"}}}}
    async with (
        aiohttp.ClientSession() as http,
        http.patch(
            url,
            data=json.dumps(change),
            headers={
                "Content-Type": "application/merge-patch+json",
                "Authorization": f"Bearer {ADMIN_TOKEN}",
            },
        ) as r,
    ):
        assert r.status == 200
    before = sts_template(demo)

    await press(demo, root_ts, ALICE, "gpunode_apply")

    assert sts_template(demo) == before  # nothing applied on top of the other change
    said = "\n".join([*ephemeral_texts(demo.slack, ALICE), *map(text_of, thread(demo, root_ts))])
    assert "changed since the diagnosis" in said


async def apply_tier3(demo: Demo) -> tuple[str, dict[str, Any]]:
    """Tier 3 with edited caps, applied: (thread ts, the deployment as it was before)."""
    root_ts = await diagnose(demo)
    before = copy.deepcopy(demo.kube.get("deployments", "data-prep", "preprocess"))
    assert before is not None
    view = await request_tier(
        demo,
        root_ts,
        3,
        edits={
            "memory_limit": "32Gi",
            "memory_request": "28Gi",
            "omp_num_threads": "4",
            "accept_oom": True,
        },
    )
    assert "Deployment/data-prep/preprocess" in json.dumps(view)
    await press(demo, root_ts, ALICE, "gpunode_apply")
    return root_ts, before


async def test_tier3_with_edited_values_changes_the_deployment_exactly_as_shown(
    demo: Demo,
) -> None:
    root_ts, _ = await apply_tier3(demo)

    after = demo.kube.get("deployments", "data-prep", "preprocess")
    assert after is not None
    pandas = after["spec"]["template"]["spec"]["containers"][0]
    assert pandas["resources"]["limits"]["memory"] == "32Gi"
    assert pandas["resources"]["requests"]["memory"] == "28Gi"
    assert {"name": "OMP_NUM_THREADS", "value": "4"} in pandas.get("env", [])
    assert len(patches(demo, "/deployments/preprocess")) == 1
    replies = "\n".join(text_of(m) for m in thread(demo, root_ts))
    assert "32Gi" in replies  # the dry run showed the edited values
    assert "Before / after" in replies
    # what the action bought is a before/after: the evidence is in the thread once
    evidence = [m for m in thread(demo, root_ts) if "Memory evidence" in text_of(m)]
    assert len(evidence) == 1
    assert [a.decision for a in await audit(demo) if a.tier == 3].count("executed") == 1
    assert failed_chat_calls(demo.slack) == []


async def test_undo_after_tier3_restores_the_previous_spec(demo: Demo) -> None:
    root_ts, before = await apply_tier3(demo)

    await press(demo, root_ts, ALICE, "gpunode_undo")

    restored = demo.kube.get("deployments", "data-prep", "preprocess")
    assert restored is not None
    [now] = restored["spec"]["template"]["spec"]["containers"]
    [was] = before["spec"]["template"]["spec"]["containers"]
    # the API server omits an empty env list (omitempty); the stand-in may keep []
    assert {**now, "env": now.get("env") or []} == {**was, "env": was.get("env") or []}


async def test_undo_is_refused_when_someone_changed_the_target_after_the_action(
    demo: Demo,
) -> None:
    root_ts, _ = await apply_tier3(demo)
    url = f"{demo.kube.url}/apis/apps/v1/namespaces/data-prep/deployments/preprocess"
    by_hand = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "pandas", "resources": {"limits": {"memory": "40Gi"}}}]
                }
            }
        }
    }
    async with (
        aiohttp.ClientSession() as http,
        http.patch(
            url,
            data=json.dumps(by_hand),
            headers={
                "Content-Type": "application/strategic-merge-patch+json",
                "Authorization": f"Bearer {ADMIN_TOKEN}",
            },
        ) as r,
    ):
        assert r.status == 200
    edited = copy.deepcopy(demo.kube.get("deployments", "data-prep", "preprocess"))

    await press(demo, root_ts, ALICE, "gpunode_undo")

    assert demo.kube.get("deployments", "data-prep", "preprocess") == edited
    said = "\n".join(ephemeral_texts(demo.slack, ALICE))
    assert "was changed again since the action" in said
    undo_rows = [a for a in await audit(demo) if a.tier == 3 and "undo" in a.action]
    assert [a.decision for a in undo_rows] == ["refused"]
