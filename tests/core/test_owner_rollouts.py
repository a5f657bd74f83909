"""Owners that decide what a template change reaches: a StatefulSet's update partition and a
Helm release. Every number the plan states is checked against the pods."""

from __future__ import annotations

import re

import pytest

from bot.core.diagnosis.findings import Diagnosis, Ledger, LedgerEntry, Verdict
from bot.core.model.actions import PlanNote
from bot.core.model.cluster import ClusterView, OwnerRef, PodInfo
from bot.core.model.workloads import HelmValuesKey, WorkloadInfo, parse_helm_keys
from bot.core.remedies.planning import plan_all, plan_tier2, plan_tier3
from bot.core.remedies.relief import with_relief
from bot.render.sentences import sentence
from tests.core.analysis_builders import pod, view

GI = 1024**3


def _sts_pod(name: str, sts: str, **kw: object) -> PodInfo:
    p = pod(name, owner="StatefulSet", **kw)  # type: ignore[arg-type]
    return p.model_copy(update={"owners": [OwnerRef(kind="StatefulSet", name=sts)]})


def _diagnosis(subject: str, held: dict[str, int], shortage: int) -> Diagnosis:
    entries = [
        LedgerEntry(category="pod", label=k, bytes=b, source="test", pod_key=k)
        for k, b in held.items()
    ]
    return Diagnosis.model_validate(
        {
            "node": "n1",
            "collected_at": "2026-01-01T00:00:00Z",
            "ledger": Ledger(total_bytes=sum(held.values()), entries=entries),
            "verdict": Verdict(
                cause="host_memory_workload",
                subject=subject,
                shortage_bytes=shortage,
                params={"pod": subject, "container": "main", "working_set_bytes": held[subject]},
            ),
        }
    )


def _cache(partition: int | None, *, helm: bool = False) -> tuple[ClusterView, Diagnosis]:
    holds = {f"ml/cache-{i}": (10 + i) * GI for i in range(4)}
    pods = [_sts_pod(f"cache-{i}", "cache", req=4, lim=32) for i in range(4)]
    w = WorkloadInfo(
        kind="StatefulSet",
        namespace="ml",
        name="cache",
        replicas=4,
        strategy="RollingUpdate",
        partition=partition,
        helm_release="ml/cache" if helm else None,
        helm_chart="redis-19.0.1" if helm else None,
    )
    return view(pods, workloads=[w]), _diagnosis("ml/cache-3", holds, 6 * GI)


def test_a_partitioned_statefulset_cap_reaches_only_the_pods_at_or_above_the_partition() -> None:
    v, d = _cache(partition=2)
    plan = with_relief(plan_tier3(v, d), d, v)
    assert plan.available
    assert plan.restarts == ["ml/cache-2", "ml/cache-3"]
    assert set(plan.blast_radius) == {"ml/cache-2", "ml/cache-3"}
    [note] = [n for n in plan.notes if n.code == "partition_holds"]
    assert note.params["count"] == 2 and note.params["pods"] == "ml/cache-0, ml/cache-1"
    # relief: what the two reached pods hold above the new limit, nothing from the others
    assert plan.values is not None
    limit = plan.values.memory_limit_bytes
    reached = {"ml/cache-2": 12 * GI, "ml/cache-3": 13 * GI}
    assert plan.relief_bytes == sum(max(0, h - limit) for h in reached.values())
    # the cap is sized on the reached pods: it still covers the shortage from them alone
    assert plan.relieves


def test_without_a_partition_the_same_cap_reaches_every_replica() -> None:
    v, d = _cache(partition=None)
    plan = plan_tier3(v, d)
    assert plan.restarts == [f"ml/cache-{i}" for i in range(4)]
    assert not any(n.code == "partition_holds" for n in plan.notes)


def test_an_offender_below_the_partition_is_not_offered_a_cap_that_cannot_reach_it() -> None:
    v, d = _cache(partition=2)
    d = _diagnosis("ml/cache-1", {f"ml/cache-{i}": (10 + i) * GI for i in range(4)}, 6 * GI)
    plan = plan_tier3(v, d)
    assert (plan.available, plan.warnings) == (False, ["partition_holds_offender"])


def test_tier2_restarts_only_the_gpu_pods_its_partition_reaches() -> None:
    pods = [_sts_pod(f"train-{i}", "train", gpu=2) for i in range(3)]
    w = WorkloadInfo(
        kind="StatefulSet", namespace="ml", name="train", strategy="RollingUpdate", partition=1
    )
    plan = plan_tier2(view(pods, workloads=[w]))
    assert plan.restarts == ["ml/train-1", "ml/train-2"]
    assert any(n.code == "partition_holds" and n.params["count"] == 1 for n in plan.notes)


@pytest.mark.parametrize("tier", [2, 3])
def test_a_helm_owner_is_named_with_the_field_its_values_must_set(tier: int) -> None:
    v, d = _cache(partition=None, helm=True)
    if tier == 2:
        gpu = [_sts_pod(f"cache-{i}", "cache", gpu=1) for i in range(2)]
        v = v.model_copy(update={"pods": gpu})
        plan = plan_tier2(v)
        field = "spec.template.spec.priorityClassName"
    else:
        plan = plan_tier3(v, d)
        field = "spec.template.spec.containers[name=main].resources.limits.memory"
    [note] = [n for n in plan.notes if n.code == "helm_reverts"]
    assert note.params == {
        "workload": "StatefulSet/ml/cache",
        "release": "ml/cache",
        "chart": "redis-19.0.1",
        "field": field,
        "values_key": None,  # nobody named it, and the template's containers were not read
        "key_source": None,
        "key_where": None,
        "command": "helm get values cache -n ml -a",
    }


def _helm_note(keys: list[HelmValuesKey], containers: list[str], *, tier: int = 3) -> PlanNote:
    v, d = _cache(partition=None, helm=True)
    [w] = v.workloads
    v = v.model_copy(
        update={"workloads": [w.model_copy(update={"helm_keys": keys, "containers": containers})]}
    )
    if tier == 2:
        v = v.model_copy(
            update={"pods": [_sts_pod(f"cache-{i}", "cache", gpu=1) for i in range(2)]}
        )
        plan = plan_tier2(v)
    else:
        plan = plan_tier3(v, d)
    [note] = [n for n in plan.notes if n.code == "helm_reverts"]
    return note


ANNOTATION = "gpunode.io/helm-values-key.memory-limit"


def test_a_key_the_workload_annotation_names_is_given_with_its_source() -> None:
    keys = parse_helm_keys(
        "memory-limit", "{container}.resources.limits.memory", source="annotation", where=ANNOTATION
    )
    note = _helm_note(keys, ["main", "exporter"])
    assert note.params["values_key"] == "main.resources.limits.memory"
    assert (note.params["key_source"], note.params["key_where"]) == ("annotation", ANNOTATION)


def test_a_key_for_the_capped_container_wins_over_one_for_any_container() -> None:
    text = "exporter=metrics.resources.limits.memory,main=master.resources.limits.memory"
    keys = parse_helm_keys("memory-limit", text, source="annotation", where=ANNOTATION)
    keys += parse_helm_keys("memory-limit", "resources", source="settings", where="redis")
    assert _helm_note(keys, ["main", "exporter"]).params["values_key"] == (
        "master.resources.limits.memory"
    )


def test_a_key_named_for_another_container_only_is_not_given_for_this_one() -> None:
    keys = parse_helm_keys(
        "memory-limit", "exporter=metrics.resources", source="annotation", where=ANNOTATION
    )
    note = _helm_note(keys, ["main", "exporter"])
    assert (note.params["values_key"], note.params["key_source"]) == (None, None)


def test_a_key_from_the_settings_names_the_chart_it_was_set_for() -> None:
    keys = parse_helm_keys(
        "priority-class", "master.priorityClassName", source="settings", where="redis"
    )
    note = _helm_note(keys, ["main"], tier=2)
    assert note.params["values_key"] == "master.priorityClassName"
    assert (note.params["key_source"], note.params["key_where"]) == ("settings", "redis")


def test_one_container_and_no_named_key_gives_the_scaffold_key_marked_as_a_guess() -> None:
    note = _helm_note([], ["main"])
    assert note.params["values_key"] == "resources.limits.memory"
    assert note.params["key_source"] == "convention"
    assert note.params["command"] == "helm get values cache -n ml -a"


def test_no_key_is_guessed_for_a_priority_class_or_a_second_container() -> None:
    assert _helm_note([], ["main"], tier=2).params["values_key"] is None
    assert _helm_note([], ["main", "exporter"]).params["values_key"] is None


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
@pytest.mark.parametrize("source", ["annotation", "settings", "convention", None])
def test_the_helm_sentence_states_a_named_key_as_named_and_a_guess_as_a_guess(
    locale: str, source: str | None
) -> None:
    keys: list[HelmValuesKey] = []
    if source == "annotation":
        keys = parse_helm_keys(
            "memory-limit", "server.resources", source="annotation", where=ANNOTATION
        )
    elif source == "settings":
        keys = parse_helm_keys("memory-limit", "server.resources", source="settings", where="redis")
    note = _helm_note(keys, ["main"] if source == "convention" else ["main", "exporter"])
    assert note.params["key_source"] == source
    text = sentence("notes", note.code, note.params, fmt="text", locale=locale, strict=True)
    command = "helm get values cache -n ml -a"
    if source in ("annotation", "settings"):
        assert "server.resources" in text and command not in text
        assert (ANNOTATION if source == "annotation" else "redis") in text
    elif source == "convention":
        # the guess comes with the command that confirms it, and the field it renders
        assert "resources.limits.memory" in text and command in text
        assert "containers[name=main]" in text
    else:
        assert command in text and "containers[name=main]" in text
    if locale == "zh-CN":
        assert not re.search(r"\b(the|set|and|with|confirm)\b", text), text


def test_every_tier_of_a_partitioned_owner_keeps_its_numbers_consistent() -> None:
    v, d = _cache(partition=3)
    [plan] = [p for p in plan_all(v, d) if p.tier == 3]
    assert plan.available and plan.values is not None
    assert plan.restarts == ["ml/cache-3"]  # the one pod at or above partition 3
    assert plan.relief_bytes == max(0, 13 * GI - plan.values.memory_limit_bytes)


def test_tier2_is_not_offered_when_the_partition_holds_every_gpu_pod() -> None:
    pods = [_sts_pod(f"train-{i}", "train", gpu=2) for i in range(2)]
    w = WorkloadInfo(
        kind="StatefulSet", namespace="ml", name="train", strategy="RollingUpdate", partition=5
    )
    plan = plan_tier2(view(pods, workloads=[w]))
    assert not plan.available and plan.restarts == []
    assert "partition_holds_gpu_pods" in plan.warnings


@pytest.mark.parametrize("tier", [2, 3])
def test_restarts_of_a_kueue_workload_say_they_re_enter_admission(tier: int) -> None:
    from bot.render.sentences import sentence

    v, d = _cache(partition=1)
    queue = {"kueue.x-k8s.io/queue-name": "team-a"}
    gpu = 1 if tier == 2 else 0
    pods = [_sts_pod(f"cache-{i}", "cache", req=4, lim=32, gpu=gpu, labels=queue) for i in range(4)]
    v = v.model_copy(update={"pods": pods})
    plan = plan_tier2(v) if tier == 2 else plan_tier3(v, d)
    [note] = [n for n in plan.notes if n.code == "kueue_readmission"]
    # the pods the partition holds do not restart, so they do not re-enter admission
    assert note.params["queue"] == "team-a" and note.params["count"] == len(plan.restarts) == 3
    for locale in ("en", "zh-CN"):
        text = sentence("notes", note.code, note.params, fmt="text", locale=locale, strict=True)
        assert "team-a" in text and "3" in text


NEW_WARNINGS = [
    "guaranteed_within_requests",
    "partition_holds_offender",
    "partition_holds_gpu_pods",
    "kueue_queue_full",
    "evicted_pod_buys_gpu_node",
]
NEW_NOTES: dict[str, dict[str, str | int | None]] = {
    "partition_holds": {
        "workload": "StatefulSet/ml/cache",
        "partition": 2,
        "count": 2,
        "pods": "ml/cache-0, ml/cache-1",
    },
    "kueue_no_quota": {
        "workload": "StatefulSet/ml/cache",
        "queue": "ml/team-a",
        "cluster_queue": "gpus",
        "resources": "nvidia.com/gpu",
        "pending": 2,
    },
}


@pytest.mark.parametrize("locale", ["en", "zh-CN"])
def test_the_new_warnings_and_notes_are_worded_in_each_locale(locale: str) -> None:
    from bot.render.sentences import sentence

    for code in NEW_WARNINGS:
        assert sentence("warnings", code, {}, fmt="text", locale=locale, strict=True)
    for code, params in NEW_NOTES.items():
        text = sentence("notes", code, params, fmt="text", locale=locale, strict=True)
        for key, value in params.items():
            if (code, key) != ("kueue_no_quota", "workload"):  # kueue_readmission names it
                assert str(value) in text, (code, value)
