"""A pod's effective requests, as the scheduler and the kubelet's admission sum them (pure).

The stand-in's own model of ``PodRequests`` (k8s.io/component-helpers/resource), written
from the Kubernetes documentation ("Resource sharing within containers", sidecar
containers, pod-level resources), not from gpunode's arithmetic, so that the stand-in stays
an independent check of it:

- app containers and sidecars (init containers with ``restartPolicy: Always``) are summed;
- a regular init container needs its own request plus the sidecars started before it; the
  largest of those (and of the sidecars' running sum) is the init peak;
- the pod needs the larger of the two, per resource, plus ``spec.overhead``;
- pod-level ``spec.resources.requests`` (cpu, memory and hugepages only) replace the
  containers' sum for the resources they name.

Amounts are integers in the units the kubelet prints in its refusals: millicores for cpu,
whole units (bytes, devices) for everything else, rounded up.
"""

from __future__ import annotations

from typing import Any

from gpunode_sandbox.kubesim import quantities

Obj = dict[str, Any]
Amounts = dict[str, int]
#: the resources a pod-level ``spec.resources`` may set (PodLevelResources)
_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"


def amount(resource: str, value: Any) -> int:
    """``value`` of ``resource`` in printed units: millicores for cpu, else whole units."""
    if resource == "cpu":
        return quantities.to_millicores(value)
    return quantities.to_bytes(value)


def _requests(container: Obj) -> Amounts:
    raw = (container.get("resources") or {}).get("requests") or {}
    return {name: amount(name, v) for name, v in raw.items()}


def _plus(into: Amounts, more: Amounts) -> None:
    for name, n in more.items():
        into[name] = into.get(name, 0) + n


def _at_least(into: Amounts, other: Amounts) -> None:
    for name, n in other.items():
        into[name] = max(into.get(name, 0), n)


def pod_requests(pod: Obj) -> Amounts:
    """What ``pod`` asks of a node, per resource (see the module docstring)."""
    spec = pod.get("spec") or {}
    running: Amounts = {}
    for container in spec.get("containers") or []:
        _plus(running, _requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or []:
        own = _requests(container)
        if container.get("restartPolicy") == "Always":
            _plus(running, own)
            _plus(sidecars, own)
            _at_least(init_peak, sidecars)
        else:
            needs = dict(sidecars)
            _plus(needs, own)
            _at_least(init_peak, needs)
    total = dict(running)
    _at_least(total, init_peak)
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    for name, v in pod_level.items():
        if name in _POD_LEVEL or name.startswith(_HUGEPAGES):
            total[name] = amount(name, v)
    _plus(total, {name: amount(name, v) for name, v in (spec.get("overhead") or {}).items()})
    return total
