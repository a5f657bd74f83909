"""The stand-in sums a pod's requests as the scheduler and the kubelet do, from its own model:
app containers and sidecars summed, a regular init container with the sidecars started
before it, the larger of the two, pod-level requests for cpu and memory, plus overhead. The
product's kubectl arithmetic (``bot.core.diagnosis.allocation``) must agree with it on every
shape."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.diagnosis.allocation import pod_requests_and_limits
from gpunode_sandbox.kubesim.podrequests import pod_requests


def _c(name: str, cpu: str, memory: str, *, sidecar: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


SHAPES: list[tuple[str, dict[str, Any], dict[str, int]]] = [
    (
        "two app containers are summed",
        {"containers": [_c("a", "100m", "1Gi"), _c("b", "250m", "1Gi")]},
        {"cpu": 350, "memory": 2 * 2**30},
    ),
    (
        "a big init container outweighs the app containers",
        {"containers": [_c("a", "100m", "1Gi")], "initContainers": [_c("i", "2", "4Gi")]},
        {"cpu": 2000, "memory": 4 * 2**30},
    ),
    (
        "a sidecar runs beside the app and under the init containers after it",
        {
            "containers": [_c("a", "1", "1Gi")],
            "initContainers": [_c("log", "500m", "512Mi", sidecar=True), _c("i", "1", "2Gi")],
        },
        # app + sidecar = 1.5 cpu, 1.5Gi; init after the sidecar = 1.5 cpu, 2.5Gi
        {"cpu": 1500, "memory": 2 * 2**30 + 512 * 2**20},
    ),
    (
        "an init container before the sidecar does not carry it",
        {
            "containers": [_c("a", "1", "1Gi")],
            "initContainers": [_c("i", "1", "2Gi"), _c("log", "500m", "512Mi", sidecar=True)],
        },
        {"cpu": 1500, "memory": 2 * 2**30},
    ),
    (
        "pod-level requests replace the containers' cpu and memory, overhead comes on top",
        {
            "containers": [_c("a", "1", "1Gi")],
            "resources": {"requests": {"memory": "3Gi"}},
            "overhead": {"memory": "100Mi", "cpu": "50m"},
        },
        {"cpu": 1050, "memory": 3 * 2**30 + 100 * 2**20},
    ),
]


@pytest.mark.parametrize(("shape", "spec", "want"), SHAPES, ids=[s[0] for s in SHAPES])
def test_the_stand_in_sums_requests_as_kubernetes_does(
    shape: str, spec: dict[str, Any], want: dict[str, int]
) -> None:
    assert pod_requests({"spec": spec}) == want


@pytest.mark.parametrize(("shape", "spec", "want"), SHAPES, ids=[s[0] for s in SHAPES])
def test_the_product_agrees_with_the_stand_in(
    shape: str, spec: dict[str, Any], want: dict[str, int]
) -> None:
    reqs, _ = pod_requests_and_limits({"spec": spec})
    assert {"cpu": reqs["cpu"].milli_value(), "memory": reqs["memory"].value()} == want
