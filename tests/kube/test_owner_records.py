"""An owner informer's record reads, to every reader of a controller or a budget, as the
object the API serves: generated objects carry each field a reader reads, in every shape the
API allows, beside fields no reader reads (which the record drops)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.kube.objects import controller_ref, parse_budget
from bot.kube.ownerrecords import (
    CHAIN_ONLY,
    INFORMED_CONTROLLERS,
    api_version,
    budget_records_page,
    budget_text,
    controller_record,
    controller_records_page,
    controller_text,
    read_record,
)
from bot.kube.rollouts import parse_workload
from bot.kube.surveying import WATCHED_KINDS, _selector

Obj = dict[str, Any]
names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
KINDS = sorted(INFORMED_CONTROLLERS)
ANNOTATION_KEYS = [
    "argocd.argoproj.io/tracking-id",
    "meta.helm.sh/release-name",
    "meta.helm.sh/release-namespace",
    "gpunode.io/helm-values-key.memory-limit",
    "gpunode.io/helm-values-key.priority-class",
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
]
LABEL_KEYS = [
    "app",
    "argocd.argoproj.io/instance",
    "kustomize.toolkit.fluxcd.io/name",
    "kustomize.toolkit.fluxcd.io/namespace",
    "helm.toolkit.fluxcd.io/name",
    "app.kubernetes.io/managed-by",
    "helm.sh/chart",
]
int_or_percent = st.one_of(st.integers(0, 9), st.sampled_from(["25%", "50%", "100%"]))
selectors = st.fixed_dictionaries(
    {},
    optional={
        "matchLabels": st.dictionaries(st.sampled_from(LABEL_KEYS), names, max_size=3),
        "matchExpressions": st.lists(
            st.fixed_dictionaries(
                {
                    "key": st.sampled_from(LABEL_KEYS),
                    "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]),
                },
                optional={"values": st.lists(names, max_size=3)},
            ),
            max_size=2,
        ),
    },
)
owner_refs = st.lists(
    st.fixed_dictionaries(
        {
            "apiVersion": st.sampled_from(["apps/v1", "batch/v1", "kubeflow.org/v1"]),
            "kind": st.sampled_from(["Deployment", "CronJob", "PyTorchJob", "ConfigMap"]),
            "name": names,
            "uid": names,
        },
        optional={"controller": st.booleans(), "blockOwnerDeletion": st.booleans()},
    ),
    max_size=3,
)
metadata = st.fixed_dictionaries(
    {"name": names, "namespace": names},
    optional={
        "uid": names,
        "resourceVersion": st.integers(1, 10**6).map(str),
        "generation": st.integers(1, 9),
        "labels": st.dictionaries(st.sampled_from(LABEL_KEYS), names, max_size=4),
        "annotations": st.dictionaries(st.sampled_from(ANNOTATION_KEYS), names, max_size=5),
        "ownerReferences": owner_refs,
        "managedFields": st.just([{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]),
        "creationTimestamp": st.just("2026-12-01T10:00:00Z"),
    },
)
strategies = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["RollingUpdate", "Recreate", "OnDelete"]),
        "rollingUpdate": st.fixed_dictionaries(
            {},
            optional={
                "maxSurge": int_or_percent,
                "maxUnavailable": int_or_percent,
                "partition": st.integers(0, 5),
            },
        ),
    },
)
failure_policies = st.fixed_dictionaries(
    {
        "rules": st.lists(
            st.fixed_dictionaries(
                {"action": st.sampled_from(["Ignore", "FailJob", "Count"])},
                optional={
                    "onPodConditions": st.lists(
                        st.fixed_dictionaries(
                            {"type": st.sampled_from(["DisruptionTarget", "Ready"])},
                            optional={"status": st.sampled_from(["True", "False"])},
                        ),
                        max_size=2,
                    )
                },
            ),
            max_size=2,
        )
    }
)
containers = st.lists(
    st.fixed_dictionaries(
        {"image": st.just("registry.example/app:1")},
        optional={
            "name": names,
            "resources": st.just({"limits": {"memory": "1Gi"}}),
            "env": st.just([{"name": "A", "value": "1"}]),
        },
    ),
    max_size=3,
)
specs = st.fixed_dictionaries(
    {},
    optional={
        "replicas": st.integers(0, 50),
        "selector": selectors,
        "strategy": strategies,
        "updateStrategy": strategies,
        "podManagementPolicy": st.sampled_from(["OrderedReady", "Parallel"]),
        "backoffLimit": st.integers(0, 6),
        "podFailurePolicy": failure_policies,
        "revisionHistoryLimit": st.integers(0, 10),
        "template": st.fixed_dictionaries(
            {"spec": st.fixed_dictionaries({}, optional={"containers": containers})},
            optional={"metadata": st.just({"labels": {"app": "x"}})},
        ),
    },
)
statuses = st.fixed_dictionaries(
    {},
    optional={
        "failed": st.integers(0, 5),
        "succeeded": st.integers(0, 5),
        "desiredNumberScheduled": st.integers(0, 500),
        "readyReplicas": st.integers(0, 50),
    },
)


@st.composite
def controllers(draw: st.DrawFn) -> tuple[str, Obj]:
    kind = draw(st.sampled_from(KINDS))
    obj: Obj = {
        "apiVersion": api_version(INFORMED_CONTROLLERS[kind][0]),
        "kind": kind,
        "metadata": draw(metadata),
        "spec": draw(specs),
    }
    status = draw(statuses)
    if status:
        obj["status"] = status
    return kind, obj


budgets = st.fixed_dictionaries(
    {
        "apiVersion": st.just("policy/v1"),
        "kind": st.just("PodDisruptionBudget"),
        "metadata": metadata,
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "selector": selectors,
                "minAvailable": int_or_percent,
                "maxUnavailable": int_or_percent,
                "unhealthyPodEvictionPolicy": st.sampled_from(["IfHealthyBudget", "AlwaysAllow"]),
            },
        ),
        "status": st.fixed_dictionaries(
            {},
            optional={
                "disruptionsAllowed": st.integers(0, 3),
                "currentHealthy": st.integers(0, 9),
                "desiredHealthy": st.integers(0, 9),
                "expectedPods": st.integers(0, 9),
                "observedGeneration": st.integers(0, 9),
                "conditions": st.just([{"type": "DisruptionAllowed", "status": "True"}]),
            },
        ),
    }
)


def as_listed(obj: Obj) -> Obj:
    """An item of a list answer: the API server leaves out each item's kind and apiVersion."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


@settings(max_examples=300, deadline=None)
@given(controllers())
def test_a_controller_record_reads_as_the_controller_to_every_reader(
    drawn: tuple[str, Obj],
) -> None:
    kind, obj = drawn
    version = obj["apiVersion"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    for text in (  # as the informer holds it, then reads it back
        controller_text(kind, version, obj),
        controller_text(kind, version, as_listed(obj)),
    ):
        if kind == "ReplicaSet" and not spec.get("replicas") and not status.get("replicas"):
            assert text is None  # an old revision: not kept (a pod of one is read by GET)
            continue
        assert text is not None
        record = read_record(text)
        assert controller_ref(record) == controller_ref(obj)  # the chain walk
        if kind in CHAIN_ONLY:
            continue  # nothing else of it is read
        assert parse_workload(record) == parse_workload(obj)
        assert _selector(record["spec"]) == _selector(spec)


def test_no_remedy_reads_the_rollout_facts_of_a_kind_kept_for_its_chain_only() -> None:
    assert CHAIN_ONLY.isdisjoint(WATCHED_KINDS)
    assert CHAIN_ONLY.isdisjoint({"Deployment", "StatefulSet"})  # each owner's pods elsewhere


@settings(max_examples=200, deadline=None)
@given(budgets)
def test_a_budget_record_reads_as_the_budget(budget: Obj) -> None:
    assert parse_budget(read_record(budget_text(budget))) == parse_budget(budget)
    assert parse_budget(read_record(budget_text(as_listed(budget)))) == parse_budget(budget)


def test_a_record_keeps_none_of_what_no_reader_reads() -> None:
    big = "x" * 100_000
    obj: Obj = {
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": big},
            "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": big}}],
        },
        "spec": {
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "app", "env": [{"value": big}]}]}},
        },
    }
    record = controller_record("Deployment", "apps/v1", obj)
    assert record is not None and len(json.dumps(record)) < 300
    assert record["spec"]["template"] == {"spec": {"containers": [{"name": "app"}]}}


def test_a_list_page_is_cut_to_records_with_its_token_and_version() -> None:
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}
    items = [
        {
            "metadata": {"name": f"web-{i}", "namespace": "shop", "ownerReferences": [owner]},
            "spec": {"replicas": i},
        }
        for i in range(3)
    ]
    body = json.dumps(
        {
            "kind": "ReplicaSetList",
            "apiVersion": "apps/v1",
            "metadata": {"resourceVersion": "42", "continue": "next"},
            "items": items,
        }
    ).encode()
    page = controller_records_page("ReplicaSet", "apps/v1", body)
    assert (page.token, page.resource_version) == ("next", "42")
    # web-0 wants no pod and has none (an old revision): left out
    assert [(ns, name) for ns, name, _ in page.items] == [("shop", "web-1"), ("shop", "web-2")]
    records = [read_record(text) for _, _, text in page.items]
    assert [r["kind"] for r in records] == ["ReplicaSet"] * 2
    assert [controller_ref(r) for r in records] == [owner, owner]
    empty = budget_records_page(b'{"metadata":{"resourceVersion":"7"},"items":[]}')
    assert (empty.token, empty.resource_version, empty.items) == (None, "7", [])
