"""Two replicas of ``gpunode serve`` on one PostgreSQL: exactly one execution whatever the
clicks, the kills and the restarts, an intact audit chain, no lost timeline entry.

(a) 100 concurrent clicks on one Apply button, split across both replicas;
(b) the replica running an action is killed with SIGKILL mid-action: the other takes the
    Lease over and reconciles the action (reported once, never re-run);
(c) a rolling restart (surge one, SIGTERM the old) while a diagnosis is in flight;
(d) Socket Mode with one connection per replica: Slack hands each envelope to one of them,
    and together they answer each command exactly once.
Each prints its counts (executions, audit rows, timeline entries) for the record.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.store import ActionRecord
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.story import CHANNEL, find_button
from tests.e2e.conftest import NODE, incident_roots, modal_values, text_of
from tests.e2e.replicas import SECRET, Replicas, install_lease_rbac, until

pytestmark = pytest.mark.slow
ALICE = "U0ALICE"
TARGET = "/statefulsets/train-llm"  # what the seed scenario's tier 2 patches


@pytest.fixture
async def world(pg_dsn: str, tmp_path: Path) -> AsyncIterator[Replicas]:
    kube = KubeSim(load_scenario("seed"))
    await kube.start()
    await install_lease_rbac(kube.url)
    slack = SlackSim(signing_secret=SECRET, bot_token="xoxb-serve")
    await slack.start()
    w = Replicas(kube, slack, pg_dsn, tmp_path)
    try:
        yield w
    finally:
        await w.stop_all()
        await slack.stop()
        await kube.stop()


def thread(w: Replicas, root_ts: str) -> list[dict[str, Any]]:
    return w.slack.messages(CHANNEL, thread_ts=root_ts)


def evidence_posts(w: Replicas, root_ts: str) -> int:
    return sum("Memory evidence" in text_of(m) for m in thread(w, root_ts))


async def diagnosed(w: Replicas) -> str:
    """``/gpunode diagnose`` through the routed replica; the thread's ts once evidence is in."""
    result = await w.slack.slash_command(ALICE, CHANNEL, f"diagnose {NODE}")
    assert result.status == 200, result.body
    roots = await until(lambda: incident_roots(w.slack), timeout_s=30, what="the incident")
    root_ts = str(roots[0]["ts"])
    await until(lambda: evidence_posts(w, root_ts), timeout_s=30, what="the evidence")
    return root_ts


async def settled(w: Replicas, root_ts: str, *, quiet_s: float = 1.5) -> None:
    """Wait until the thread has not changed for ``quiet_s`` (the diagnosis is done)."""
    seen, since = -1, asyncio.get_running_loop().time()
    while True:
        now, count = asyncio.get_running_loop().time(), len(thread(w, root_ts))
        if count != seen:
            seen, since = count, now
        elif now - since >= quiet_s:
            return
        await asyncio.sleep(0.1)


async def dry_run_tier2(w: Replicas, root_ts: str) -> tuple[str, dict[str, Any]]:
    """Press tier 2, submit its modal: the Apply button (message ts, button)."""
    found = await until(
        lambda: find_button(thread(w, root_ts), "gpunode_tier2"), timeout_s=20, what="tier 2"
    )
    await settled(w, root_ts)
    for _attempt in range(3):  # a modal that did not open in time: the user clicks again
        assert (await w.slack.click(ALICE, CHANNEL, found[0], "gpunode_tier2")).status == 200
        try:
            views = await until(lambda: w.slack.open_views(ALICE), timeout_s=5, what="modal")
            break
        except AssertionError:
            continue
    else:
        raise AssertionError("the tier 2 modal never opened")
    values = modal_values(views[-1], {"reason": "memory incident"})
    assert (await w.slack.submit_view(ALICE, views[-1]["id"], values)).status == 200
    return await until(
        lambda: find_button(thread(w, root_ts), "gpunode_apply"), timeout_s=20, what="Apply"
    )


def executions(w: Replicas) -> int:
    """Real (not dry-run) writes of the action to the cluster, as the API server saw them."""
    return sum(
        1
        for m, path, query in w.kube.requests
        if m == "PATCH" and TARGET in path and "dryRun" not in query
    )


async def the_action(w: Replicas) -> ActionRecord:
    store = await w.db()
    incident = (await store.open_incidents(NODE))[0]
    [action] = await store.actions_for_incident(incident.id)
    return action


async def counts(w: Replicas, action_id: str) -> dict[str, int]:
    store = await w.db()
    incident = (await store.open_incidents(NODE))[0]
    audit = await store.audit_since(None)
    timeline = await store.timeline(incident.id)
    return {
        "executions": executions(w),
        "audit_rows": len(audit),
        "audit_rows_of_action": sum(1 for r in audit if r.action_id == action_id),
        "timeline_entries": len(timeline),
    }


async def assert_audit_intact(w: Replicas) -> str:
    code, out = await w.audit_verify()
    assert code == 0 and "intact" in out, out
    return out


async def test_a_hundred_clicks_split_across_two_replicas_execute_once(
    world: Replicas,
) -> None:
    w = world
    await w.start("replica-a")
    await w.start("replica-b")
    w.route_to("replica-a")
    root_ts = await diagnosed(w)
    ts, button = await dry_run_tier2(w, root_ts)

    bodies = [
        w.slack.driver.click_body(ALICE, CHANNEL, ts, "gpunode_apply", value=button["value"])
        for _ in range(100)
    ]
    statuses = await asyncio.gather(
        *(w.post_signed(("replica-a", "replica-b")[i % 2], b) for i, b in enumerate(bodies))
    )
    assert set(statuses) == {200}
    await until(
        lambda: _state_in(w, ("succeeded", "failed")), timeout_s=30, what="the action to finish"
    )
    action = await the_action(w)
    assert action.state == "succeeded"
    # the success is watched and the node re-diagnosed: wait for both, then count
    await until(lambda: _has_entry(w, "action_result", "watched:"), timeout_s=30, what="the watch")
    await settled(w, root_ts)

    found = await counts(w, action.action_id)
    print(f"\n(a) 100 clicks over 2 replicas: {found}; {await assert_audit_intact(w)}")
    assert found["executions"] == 1
    store = await w.db()
    executed = [
        r
        for r in await store.audit_since(None)
        if r.action_id == action.action_id and r.decision == "executed"
    ]
    assert len(executed) == 1
    entries = [(e.kind, e.text) for e in await _timeline(w)]
    assert entries.count(("action_result", "tier 2 succeeded")) == 1
    assert sum(k == "action_result" and t.startswith("watched:") for k, t in entries) == 1
    for kind in ("opened", "diagnosis", "evidence", "action_requested"):
        assert kind in {k for k, _ in entries}, f"no {kind} entry in the timeline"


async def _state_in(w: Replicas, states: tuple[str, ...]) -> bool:
    return (await the_action(w)).state in states


async def _has_entry(w: Replicas, kind: str, prefix: str) -> bool:
    return any(e.kind == kind and e.text.startswith(prefix) for e in await _timeline(w))


async def _timeline(w: Replicas) -> list[Any]:
    store = await w.db()
    incident = (await store.open_incidents(NODE))[0]
    return list(await store.timeline(incident.id))


async def test_a_replica_killed_mid_action_is_reconciled_once_by_the_new_leader(
    world: Replicas,
) -> None:
    w = world
    await w.start("replica-a")
    await until(lambda: w.holder() == "replica-a", timeout_s=10, what="a to lead")
    await w.start("replica-b")
    w.route_to("replica-a")
    root_ts = await diagnosed(w)
    ts, button = await dry_run_tier2(w, root_ts)
    slow = w.kube.faults.add("PATCH", TARGET, delay_s=4.0, times=-1)  # the apply hangs

    body = w.slack.driver.click_body(ALICE, CHANNEL, ts, "gpunode_apply", value=button["value"])
    assert await w.post_signed("replica-a", body) == 200
    await until(lambda: slow.hits >= 1, timeout_s=15, what="a to be mid-action")
    assert (await the_action(w)).state in ("claimed", "running")
    await w.stop("replica-a", signal.SIGKILL)
    w.kube.faults.clear()

    await until(lambda: w.holder() == "replica-b", timeout_s=15, what="b to take the Lease")
    await until(lambda: _state_in(w, ("failed",)), timeout_s=15, what="b to reconcile")
    await asyncio.sleep(1.0)  # a second reconciliation would have run by now (every 0.5 s)

    action = await the_action(w)
    assert action.result is not None and action.result["reason"] == "interrupted by a restart"
    lease = w.kube.get("leases", "gpunode", "gpunode-leader")
    assert lease is not None and lease["spec"]["leaseTransitions"] >= 1
    found = await counts(w, action.action_id)
    print(f"\n(b) SIGKILL mid-action: {found}; {await assert_audit_intact(w)}")
    assert found["executions"] == 1, "the action was sent once and never re-run"
    store = await w.db()
    decisions = [
        r.decision for r in await store.audit_since(None) if r.action_id == action.action_id
    ]
    assert decisions.count("interrupted") == 1
    texts = [e.text for e in await _timeline(w)]
    assert sum("interrupted by a restart" in t for t in texts) == 1
    assert sum(t.startswith("tier 2 requested") for t in texts) == 1
    notices = [m for m in thread(w, root_ts) if "nterrupted" in text_of(m) and m.get("bot_id")]
    assert len(notices) >= 1


async def test_a_rolling_restart_during_a_diagnosis_completes_it_once(world: Replicas) -> None:
    w = world
    await w.start("replica-a")
    await w.start("replica-b")
    w.route_to("replica-a")
    slow = w.kube.faults.add("GET", r"/pods/[^/]+/log$", delay_s=2.0, times=1)

    result = await w.slack.slash_command(ALICE, CHANNEL, f"diagnose {NODE}")
    assert result.status == 200
    await until(lambda: slow.hits >= 1, timeout_s=30, what="the diagnosis to be in flight")
    # RollingUpdate maxSurge 1 / maxUnavailable 0: the new pod is ready, then the old stops
    await w.start("replica-a2")
    w.route_to("replica-a2")
    assert await w.stop("replica-a", signal.SIGTERM) == 0

    roots = await until(lambda: incident_roots(w.slack), timeout_s=30, what="the incident")
    root_ts = str(roots[0]["ts"])
    await until(lambda: evidence_posts(w, root_ts), timeout_s=30, what="the evidence")
    await asyncio.sleep(1.0)

    assert len(incident_roots(w.slack)) == 1
    assert evidence_posts(w, root_ts) == 1, "the diagnosis was posted once"
    store = await w.db()
    incidents = await store.incidents_for_node(NODE)
    snapshots = await store.snapshots(incidents[0].id)
    timeline = await store.timeline(incidents[0].id)
    audit = await store.audit_since(None)
    assert len(incidents) == 1 and len(snapshots) == 1
    kinds = [e.kind for e in timeline]
    assert kinds.count("evidence") == 1 and kinds.count("opened") == 1, kinds
    found = {
        "diagnoses_posted": evidence_posts(w, root_ts),
        "incidents": len(incidents),
        "snapshots": len(snapshots),
        "audit_rows": len(audit),
        "timeline_entries": len(timeline),
    }
    print(f"\n(c) rolling restart during a diagnosis: {found}; {await assert_audit_intact(w)}")


async def test_two_replicas_in_socket_mode_answer_each_command_exactly_once(
    world: Replicas,
) -> None:
    w = world
    w.socket_mode = True
    w.slack.use_socket_mode()
    await w.start("replica-a")
    await w.start("replica-b")
    await until(
        lambda: len([c for c in w.slack.socket.connections if not c.closed]) == 2,
        timeout_s=60,
        what="both replicas to connect",
    )

    results = await asyncio.gather(
        *(w.slack.slash_command(ALICE, CHANNEL, "status") for _ in range(20))
    )
    answers = len(w.slack.ephemerals(ALICE))  # status answers in its ack, at once
    root_ts = await diagnosed(w)
    await settled(w, root_ts)

    assert [r.status for r in results] == [200] * 20
    envelopes = w.slack.envelopes
    acked = [str(a.envelope_id) for a in w.slack.acks if a.matched]
    assert sorted(acked) == sorted(e.envelope_id for e in envelopes), "each acked exactly once"
    per_connection = {c: sum(e.connection == c for e in envelopes) for c in (1, 2)}
    assert all(per_connection.values()), f"one replica got nothing: {per_connection}"
    assert answers == 20, "one answer per status command"
    assert len(incident_roots(w.slack)) == 1 and evidence_posts(w, root_ts) == 1
    found = {
        "envelopes": len(envelopes),
        "per_connection": per_connection,
        "status_answers": answers,
        "incident_roots": len(incident_roots(w.slack)),
    }
    print(f"\n(d) Socket Mode, two connections: {found}")


async def test_a_ready_replica_lists_and_watches_the_fleet_before_any_command(
    world: Replicas,
) -> None:
    # the first `top` after a start reads the informers' memory, not a list of every pod
    # while someone waits (issue #25: 20 s at 150,000 pods)
    await world.start("a")

    def informing(path: str) -> bool:  # an informer watches once its first list is done
        return any(p == path and "watch=true" in q for _, p, q in world.kube.requests)

    await until(
        lambda: informing("/api/v1/pods") and informing("/api/v1/nodes"),
        timeout_s=60,
        what="the pods and nodes informers' first lists",
    )
    assert world.slack.messages(CHANNEL) == []  # nobody asked for anything
