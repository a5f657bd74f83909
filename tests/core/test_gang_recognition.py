"""Gang recognition by API group and kind, or by the members' labels (pure)."""

from __future__ import annotations

import pytest

from bot.core.model.cluster import OwnerRef, PodInfo
from bot.core.model.gangs import builtin_kind, gang_of, role_of


def _pod(
    owners: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> PodInfo:
    return PodInfo(
        namespace="ml",
        name="p",
        uid="u",
        owners=[OwnerRef(api_version=a, kind=k, name=n) for a, k, n in owners],
        labels=labels or {},
        annotations=annotations or {},
    )


@pytest.mark.parametrize(
    ("pod", "key"),
    [
        (_pod([("kubeflow.org/v1", "PyTorchJob", "llm")]), "kubeflow.org/PyTorchJob ml/llm"),
        (_pod([("kubeflow.org/v2beta1", "MPIJob", "m")]), "kubeflow.org/MPIJob ml/m"),
        (
            _pod([("batch/v1", "Job", "js-w-0"), ("jobset.x-k8s.io/v1alpha2", "JobSet", "js")]),
            "jobset.x-k8s.io/JobSet ml/js",
        ),
        (
            _pod(
                [
                    ("apps/v1", "StatefulSet", "l-0"),
                    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "l"),
                ],
                labels={"leaderworkerset.sigs.k8s.io/group-index": "0"},
            ),
            "leaderworkerset.x-k8s.io/LeaderWorkerSet ml/l-0",
        ),
        (_pod([("ray.io/v1", "RayCluster", "rc")]), "ray.io/RayCluster ml/rc"),
        (_pod([("batch.volcano.sh/v1alpha1", "Job", "vc")]), "batch.volcano.sh/Job ml/vc"),
        (
            _pod(annotations={"scheduling.k8s.io/group-name": "pg"}),
            "scheduling.volcano.sh/PodGroup ml/pg",
        ),
        (
            _pod(labels={"scheduling.x-k8s.io/pod-group": "pg"}),
            "scheduling.x-k8s.io/PodGroup ml/pg",
        ),
        (
            _pod([("batch/v1", "Job", "j")], labels={"kueue.x-k8s.io/queue-name": "q"}),
            "kueue.x-k8s.io/Workload ml/job-j",
        ),
        (
            _pod([("v1", "Pod", "driver")], labels={"sparkoperator.k8s.io/app-name": "etl"}),
            "sparkoperator.k8s.io/SparkApplication ml/etl",
        ),
        (
            _pod([("sparkoperator.k8s.io/v1beta2", "SparkApplication", "etl")]),
            "sparkoperator.k8s.io/SparkApplication ml/etl",
        ),
        (_pod([("batch/v1", "Job", "j")]), None),
        (_pod([("apps/v1", "ReplicaSet", "r"), ("apps/v1", "Deployment", "d")]), None),
        # a kind alone is not enough: an unknown group's "PyTorchJob" is not Kubeflow's
        (_pod([("example.com/v1", "PyTorchJob", "x")]), None),
    ],
)
def test_a_gang_is_recognised_by_group_and_kind_or_labels(pod: PodInfo, key: str | None) -> None:
    gang = gang_of(pod)
    assert (gang.key if gang else None) == key


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("batch/v1", "Job", "Job"),
        ("batch.volcano.sh/v1alpha1", "Job", None),
        ("apps/v1", "Deployment", "Deployment"),
        ("example.com/v1", "Deployment", None),
        ("", "StatefulSet", "StatefulSet"),
    ],
)
def test_built_in_controllers_are_checked_by_group(
    api_version: str, kind: str, expected: str | None
) -> None:
    assert builtin_kind(OwnerRef(api_version=api_version, kind=kind, name="x")) == expected


@pytest.mark.parametrize(
    ("labels", "role"),
    [
        ({"training.kubeflow.org/replica-type": "Launcher"}, "launcher"),
        ({"ray.io/node-type": "head"}, "head"),
        ({"spark-role": "driver"}, "driver"),
        (
            {
                "leaderworkerset.sigs.k8s.io/name": "l",
                "leaderworkerset.sigs.k8s.io/worker-index": "0",
            },
            "leader",
        ),
        ({}, None),
    ],
)
def test_member_roles_come_from_the_controllers_labels(
    labels: dict[str, str], role: str | None
) -> None:
    assert role_of(_pod(labels=labels)) == role
