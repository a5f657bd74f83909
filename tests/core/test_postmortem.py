"""The postmortem draft as data: who did what, what exactly changed, what it bought."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.diagnosis.history import History, Marker
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import Incident, TimelineEntry
from bot.core.reporting.analysis import analyze
from bot.core.reporting.postmortem import ActionInput, Snapshot, build_postmortem, object_changes
from tests.core.analysis_builders import bundle, meminfo

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
NAMES = {"U0ALICE": "alice (Alice Ng)", "U0BOB": "bob (Bob Okafor)"}


def _snap(minutes: int, free_gib: float, *oom: tuple[int, str]) -> Snapshot:
    at = T0 + timedelta(minutes=minutes)
    d = analyze(bundle(meminfo=meminfo(256, free=free_gib)), None, now=at)
    marks = [
        Marker(
            at=T0 + timedelta(seconds=s),
            kind="oom_kill",
            subject=who,
            label="global OOM kill python",
            source="kmsg:/dev/kmsg",
        )
        for s, who in oom
    ]
    history = History(node="n1", source="snapshot", start=T0, end=at, step_s=0, markers=marks)
    return Snapshot(at=at, diagnosis=d.model_copy(update={"history": history}))


RESULT = {
    "changes": [
        {
            "kind": "Deployment",
            "namespace": "data-prep",
            "name": "preprocess",
            "verb": "patch_resources",
            "dry_run": False,
            "noop": False,
            "before": {
                "container": "pandas",
                "resourceVersion": "1",
                "resources": {"limits": {"memory": "64Gi"}},
            },
            "after": {
                "generation": 2,
                "resourceVersion": "2",
                "resources": {"limits": {"memory": "49Gi", "cpu": "12"}},
            },
        },
        {
            "kind": "Node",
            "name": "n1",
            "verb": "cordon",
            "dry_run": True,
            "noop": False,
            "before": {"unschedulable": False},
            "after": {"unschedulable": True},
        },
    ],
    "evictions": [
        {"namespace": "serving", "name": "cache-0", "status": "blocked", "reason": "PDB"},
    ],
}


def test_object_changes_are_the_fields_that_moved_without_bookkeeping_or_dry_runs() -> None:
    [change] = object_changes(RESULT)
    assert (change.kind, change.name, change.verb) == (
        "Deployment",
        "data-prep/preprocess",
        "patch_resources",
    )
    assert [(f.field, f.before, f.after) for f in change.fields] == [
        ("resources.limits.memory", "64Gi", "49Gi"),
        ("resources.limits.cpu", "unset", "12"),
    ]


def test_the_draft_names_people_measures_each_action_and_counts_each_kill_once() -> None:
    start = _snap(0, 2, (60, "ml/train-0"))
    # the same kill re-read a minute later by the next collection, its pod gone by then
    end = _snap(30, 60, (120, "d8b62765-uid"))
    incident = Incident(
        id="INC-0007",
        number=7,
        node="n1",
        channel="C1",
        thread_ts="1.0",
        state="mitigating",
        opened_at=T0,
        opened_by="U0ALICE",
        cluster=DEFAULT_CLUSTER,
    )
    entries = [
        TimelineEntry(
            incident_id="INC-0007", at=T0 + timedelta(minutes=m), kind=k, actor=who, text=t, data=d
        )
        for m, k, who, t, d in [
            (0, "opened", "U0ALICE", "incident opened", {}),
            (5, "approval", "U0BOB", "approved", {}),
            (6, "action_result", "U0BOB", "tier 3 succeeded", {"action_id": "A1"}),
        ]
    ]
    action = ActionInput(
        action_id="A1",
        tier=3,
        requester="U0ALICE",
        state="succeeded",
        created_at=T0 + timedelta(minutes=4),
        updated_at=T0 + timedelta(minutes=6),
        plan={
            "target": "Deployment/data-prep/preprocess",
            "reason": "starving the node",
            "restarts": ["data-prep/preprocess-1"],
        },
        result=RESULT,
        approvers=["U0BOB"],
    )
    pm = build_postmortem(
        incident,
        entries,
        snapshots=[end, start],
        actions=[action],
        names=NAMES,
        cluster="prod-eu",
        now=T0 + timedelta(hours=1),
    )
    assert pm.participants == ["alice (Alice Ng)", "bob (Bob Okafor)"]
    assert pm.duration_s == 3600 and not pm.resolved
    assert pm.start is start and pm.end is end
    assert pm.oom_kills == ["global OOM kill python (ml/train-0) at 2026-12-01 02:01 UTC"]
    assert pm.restarted == ["data-prep/preprocess-1 (tier 3, gpunode)"] and pm.evicted == []
    [a] = pm.actions
    assert (a.requested_by, a.approved_by, a.reason) == (
        "alice (Alice Ng)",
        ["bob (Bob Okafor)"],
        "starving the node",
    )
    assert [e.status for e in a.evictions] == ["blocked"]
    assert a.effect is not None
    assert a.effect.available_before_bytes is not None
    assert a.effect.available_after_bytes is not None
    assert a.effect.available_after_bytes > a.effect.available_before_bytes
    assert [r.actor for r in pm.timeline] == [
        "alice (Alice Ng)",
        "bob (Bob Okafor)",
        "bob (Bob Okafor)",
    ]


BLOCKED = {
    "changes": [
        {
            "kind": "Node",
            "name": "n1",
            "verb": "cordon",
            "dry_run": False,
            "noop": False,
            "before": {"unschedulable": False},
            "after": {"unschedulable": True},
        },
    ],
    "evictions": [
        {
            "namespace": "serving",
            "name": "cache-0",
            "status": "blocked",
            "reason": "PDB",
            "pdb_name": "cache",
            "pdb_needs": 1,
            "pdb_has": 1,
        },
    ],
}


def test_a_tier_1_whose_only_eviction_was_blocked_is_not_applied_and_says_why() -> None:
    from bot.core.reporting.outcomes import action_outcome

    done = action_outcome("succeeded", BLOCKED)
    assert (done.outcome, done.evicted, done.to_evict) == ("not_applied", 0, 1)
    assert done.blocked == ["serving/cache-0 (PodDisruptionBudget cache: needs 1 healthy, has 1)"]
    evicted = {"namespace": "ml", "name": "x", "status": "evicted"}
    both = {**BLOCKED, "evictions": [*BLOCKED["evictions"], evicted]}
    assert action_outcome("succeeded", both).outcome == "partly"
    assert action_outcome("succeeded", {"changes": BLOCKED["changes"]}).outcome == "applied"
    assert action_outcome("failed", BLOCKED).outcome == "failed"


def test_the_story_starts_at_the_first_oom_kill_and_blocked_actions_become_items() -> None:
    start = _snap(0, 2, (-1800, "ml/train-0"))  # killed half an hour before the incident
    end = _snap(10, 3)
    incident = Incident(
        id="INC-0008",
        number=8,
        node="n1",
        channel="C1",
        thread_ts="1.0",
        state="mitigating",
        opened_at=T0,
        opened_by="U0ALICE",
        cluster=DEFAULT_CLUSTER,
    )
    entries = [
        TimelineEntry(
            incident_id="INC-0008",
            at=T0,
            kind="opened",
            actor="U0ALICE",
            text="incident opened",
            data={"node": "n1"},
        ),
        TimelineEntry(
            incident_id="INC-0008",
            at=T0 + timedelta(minutes=5),
            kind="action_result",
            actor="U0BOB",
            text="tier 1 not applied: 0 of 1 pods evicted",
            data={"action_id": "A2"},
        ),
    ]
    action = ActionInput(
        action_id="A2",
        tier=1,
        requester="U0ALICE",
        state="succeeded",
        created_at=T0 + timedelta(minutes=4),
        updated_at=T0 + timedelta(minutes=5),
        plan={"target": "Node/n1", "reason": "stop the cascade"},
        result=BLOCKED,
        approvers=["U0BOB"],
    )
    pm = build_postmortem(
        incident,
        entries,
        snapshots=[start, end],
        actions=[action],
        names=NAMES,
        cluster="prod-eu",
        now=T0 + timedelta(minutes=20),
    )
    assert pm.cluster == "prod-eu"
    assert [r.code for r in pm.story] == ["symptom_oom_kill", "opened", "action_result"]
    assert pm.story[0].at == T0 - timedelta(seconds=1800)
    assert pm.story[1].who == "alice (Alice Ng)"
    assert pm.story[2].values["outcome"] == "not_applied"
    assert pm.detection is not None and pm.detection.gap_s == 1800
    assert [p.code for p in pm.went_badly][:2] == ["late_detection", "action_not_applied"]
    assert pm.actions[0].outcome == "not_applied"
    assert pm.action_items[-1].code == "pdb" and pm.action_items[-1].owner == ""
    assert [(i.pod, i.oom_kills) for i in pm.impact] == [("ml/train-0", 1)]
