"""Autoscaler pools that can add a node, read from their own objects: a pool may have no
node yet (scale from zero), so the nodes' labels alone do not show it. Pure: no I/O.

A Karpenter ``NodePool`` (``karpenter.sh/v1``) describes the nodes it would launch: the
template's labels, its ``requirements`` (node selector requirements over well-known and
custom labels), its taints, and ``limits`` on what all its nodes together may hold
(``status.resources`` says what they hold now). A pod can go to a node of the pool when,
as Karpenter's scheduling simulation decides:

- it tolerates every ``NoSchedule``/``NoExecute`` taint of the template;
- each key of its node selector, and of one of its required node affinity terms, is
  compatible with the pool: the template's label has that value, or the pool's requirement
  on the key allows it; a key the pool says nothing about is compatible only when it is a
  well-known label the cloud provider sets on every node (zone, instance type, arch, OS,
  capacity type), never ``kubernetes.io/hostname`` (a new node has a new name) nor a custom
  label the pool does not set;
- its bound PersistentVolumes' node affinity passes the same way (a local PV pinned to a
  hostname never does);
- the pool's limits leave room for its requests (``used`` + requests <= limit, for every
  limited resource).

A Cluster API node group (a ``MachineDeployment``, or a ``MachineSet`` no deployment owns,
annotated with the cluster autoscaler's ``...-node-group-min-size``/``max-size``) states one
new node through the scale-from-zero annotations ``capacity.cluster-autoscaler.kubernetes.io/
{cpu,memory,gpu-count,gpu-type,maxPods,labels,taints}``: the pod must fit that capacity, and
the group must be below its max size. Karpenter's instance sizes are not modelled: a NodePool
whose instance types are all too small for the pod would still be named.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.model.cluster import NodePoolInfo
from bot.core.model.workloads import PodScheduling, Requirement
from bot.core.remedies.placement import tolerates

#: labels the cloud provider puts on every node Karpenter launches (``karpenter.sh`` and
#: ``kubernetes.io`` well-known labels), so a pool need not name them
WELL_KNOWN = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "karpenter.sh/capacity-type",
        "karpenter.sh/nodepool",
    }
)
CAPI_KNOWN = frozenset({"kubernetes.io/os", "kubernetes.io/arch"})
HOSTNAME = "kubernetes.io/hostname"


def _allowed(pool: NodePoolInfo, key: str) -> tuple[bool, set[str] | None]:
    """(whether the pool's nodes carry ``key``, the values it may take or None for any)."""
    if key in pool.labels:
        return True, {pool.labels[key]}
    if key == pool.label:
        return True, {pool.name}
    reqs = [r for r in pool.requirements if r.key == key]
    if not reqs:
        return False, None
    values: set[str] | None = None
    for r in reqs:
        if r.operator == "In":
            values = set(r.values) if values is None else values & set(r.values)
        elif r.operator == "DoesNotExist":
            return False, None
    return True, values


def _compatible(pool: NodePoolInfo, req: Requirement) -> bool:
    if req.key == HOSTNAME:
        return req.operator in ("NotIn", "DoesNotExist")
    defined, values = _allowed(pool, req.key)
    excluded = {
        v for r in pool.requirements if r.key == req.key and r.operator == "NotIn" for v in r.values
    }
    # Karpenter's cloud provider sets the well-known labels on every node; the cluster
    # autoscaler's template node from a Cluster API node group carries only os and arch
    known = req.key in (WELL_KNOWN if pool.scaler == "Karpenter" else CAPI_KNOWN)
    if req.operator == "In":
        if not defined:
            return known
        options = set(req.values) - excluded
        return bool(options if values is None else options & values)
    if req.operator == "NotIn":
        return values is None or bool(values - set(req.values))
    if req.operator == "Exists":
        return defined or known
    if req.operator == "DoesNotExist":
        return not defined and not known
    return defined and values is None  # Gt/Lt: only an open requirement may satisfy it


def _terms_ok(pool: NodePoolInfo, terms: list[list[Requirement]]) -> bool:
    return not terms or any(all(_compatible(pool, r) for r in t) for t in terms)


def pool_takes(pool: NodePoolInfo, pod: PodScheduling) -> str | None:
    """Why a new node of ``pool`` would not take ``pod`` ("no_match", "limit"), or None."""
    for taint in pool.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, taint):
            return "no_match"
    selector = [Requirement(key=k, operator="In", values=[v]) for k, v in pod.node_selector.items()]
    if not all(_compatible(pool, r) for r in selector):
        return "no_match"
    if not _terms_ok(pool, pod.required_terms):
        return "no_match"
    if not all(_terms_ok(pool, volume) for volume in pod.volume_terms if volume):
        return "no_match"
    if any(t.topology_key == HOSTNAME for t in pod.affinity_terms):
        return "no_match"  # a new node holds no pod its affinity could follow
    if pool.capacity and any(
        v > 0 and k != "pods" and v > pool.capacity.get(k, 0) for k, v in pod.requests.items()
    ):
        return "no_match"  # a new node of the pool is too small for it
    if exceeds(pool.limits, pool.used, pod.requests):
        return "limit"
    if pool.max_nodes is not None and (pool.nodes or 0) >= pool.max_nodes:
        return "limit"
    return None


def exceeds(
    limits: Mapping[str, int], used: Mapping[str, int], requests: Mapping[str, int]
) -> bool:
    return any(
        requests.get(k, 0) > 0 and used.get(k, 0) + requests.get(k, 0) > limit
        for k, limit in limits.items()
    )
