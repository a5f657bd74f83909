"""The stand-in kubelet admits pods bound by nodeName as the real kubelet's admit handlers do
(eviction manager, then the predicate handler's resource fit; critical pods preempt)."""

from __future__ import annotations

from typing import Any

import pytest

from gpunode_sandbox.kubesim.kubelet import admit


def _node(conditions: dict[str, str] | None = None, **alloc: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "n1"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10", **alloc},
            "conditions": [
                {"type": t, "status": s} for t, s in {"Ready": "True", **(conditions or {})}.items()
            ],
        },
    }


def _pod(
    name: str = "p",
    *,
    cpu: str | None = "100m",
    memory: str | None = "128Mi",
    priority: int = 0,
    tolerations: list[dict[str, str]] | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory, **(extra or {})}.items() if v}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {
            "priority": priority,
            "tolerations": tolerations or [],
            "containers": [{"name": "c", "resources": {"requests": requests} if requests else {}}],
        },
    }


TOLERATE_ALL = [{"operator": "Exists"}]


@pytest.mark.parametrize(
    ("conditions", "pod", "reason", "message"),
    [
        ({}, _pod(), "", ""),
        ({"MemoryPressure": "True"}, _pod(), "", ""),
        ({"MemoryPressure": "True"}, _pod(cpu=None, memory=None), "Evicted", "[MemoryPressure]"),
        ({"MemoryPressure": "True"}, _pod(cpu=None, memory=None, tolerations=TOLERATE_ALL), "", ""),
        ({"DiskPressure": "True"}, _pod(tolerations=TOLERATE_ALL), "Evicted", "[DiskPressure]"),
        ({"PIDPressure": "True"}, _pod(), "Evicted", "[PIDPressure]"),
        (
            {"MemoryPressure": "True", "DiskPressure": "True"},
            _pod(),
            "Evicted",
            "[MemoryPressure DiskPressure]",
        ),
        ({"DiskPressure": "True"}, _pod(priority=2_000_001_000), "", ""),
        ({"MemoryPressure": "False", "DiskPressure": "False"}, _pod(cpu=None, memory=None), "", ""),
    ],
)
def test_node_conditions_admit_as_the_eviction_manager_does(
    conditions: dict[str, str], pod: dict[str, Any], reason: str, message: str
) -> None:
    verdict = admit(pod, _node(conditions), [])
    assert verdict.admit is (reason == "")
    assert verdict.reason == reason
    assert message in verdict.message
    if reason:
        assert verdict.message.startswith("The node had condition: ")


@pytest.mark.parametrize(
    ("pod", "others", "alloc", "reason", "message"),
    [
        (
            _pod(cpu="1"),
            [_pod("o", cpu="3500m")],
            {},
            "OutOfcpu",
            "cpu, requested: 1000, used: 3500, capacity: 4000",
        ),
        (
            _pod(memory="1Gi"),
            [_pod("o", memory="7680Mi")],
            {},
            "OutOfmemory",
            "memory, requested: 1073741824",
        ),
        (
            _pod(),
            [_pod(f"o{i}") for i in range(2)],
            {"pods": "2"},
            "OutOfpods",
            "pods, requested: 1, used: 2, capacity: 2",
        ),
        (
            _pod(extra={"nvidia.com/gpu": "1"}),
            [],
            {"nvidia.com/gpu": "0"},
            "OutOfnvidia.com/gpu",
            "nvidia.com/gpu",
        ),
        # an extended resource the node does not advertise is ignored (kubelet behaviour)
        (_pod(extra={"example.com/foo": "1"}), [], {}, "", ""),
    ],
)
def test_resource_fit_refuses_with_the_kubelets_reason_and_message(
    pod: dict[str, Any],
    others: list[dict[str, Any]],
    alloc: dict[str, str],
    reason: str,
    message: str,
) -> None:
    verdict = admit(pod, _node(None, **alloc), others)
    assert verdict.reason == reason and message in verdict.message
    if reason:
        assert verdict.message.startswith("Node didn't have enough resource: ")


def test_a_critical_pod_preempts_best_effort_pods_first_until_it_fits() -> None:
    others = [
        _pod("burstable", cpu="2"),
        _pod("guaranteed-ish", cpu="1"),
        _pod("best-effort", cpu=None, memory=None),
        _pod("node-critical", cpu="1", priority=2_000_001_000),
    ]
    verdict = admit(_pod(cpu="500m", priority=2_000_001_000), _node(), others)
    assert verdict.admit
    names = [v["metadata"]["name"] for v in verdict.victims]
    assert names[0] == "best-effort" and "node-critical" not in names
    assert len(names) == 2  # the BestEffort pod frees no cpu; one Burstable pod does


def test_a_critical_pod_that_cannot_fit_even_after_preemption_is_refused() -> None:
    others = [_pod("node-critical", cpu="4", priority=2_000_001_000)]
    verdict = admit(_pod(cpu="500m", priority=2_000_001_000), _node(), others)
    assert not verdict.admit and verdict.reason == "OutOfcpu"
