"""Scenario workload -> controller (Deployment + ReplicaSet, StatefulSet, DaemonSet, Job) or
bare pod, its pods placed on nodes, and a settled controller status.

``Placement`` is the one place that decides pod names and nodes; ``usage`` counts pods per
node the same way without building them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.pods import owner_ref, pod_from_template, pod_template, running_status
from gpunode_sandbox.kubesim.stamps import T0, rs_hash, suffix, ts

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore
    from gpunode_sandbox.kubesim.draclaims import Allocator

Obj = dict[str, Any]


class Placement:
    """Where each workload's pods go: ``names[i] -> node``, deterministic."""

    @staticmethod
    def pods(w: sc.Workload, all_nodes: list[str]) -> list[tuple[str, str | None]]:
        if w.kind == "DaemonSet":
            targets = w.nodes or all_nodes
            return [(f"{w.name}-{suffix(w.namespace, w.name, n)}", n) for n in targets]
        nodes = w.nodes or [None]  # type: ignore[list-item]
        out: list[tuple[str, str | None]] = []
        taken: set[str] = set()
        for i in range(w.replicas if w.kind != "Pod" else 1):
            node = nodes[i % len(nodes)]
            if w.kind == "StatefulSet":
                name = f"{w.name}-{i}"
            elif w.kind == "Pod":
                name = w.name
            else:
                prefix = f"{w.name}-{rs_hash(w)}-" if w.kind == "Deployment" else f"{w.name}-"
                name = prefix + suffix(w.namespace, w.name, str(i))
                retry = 0
                while name in taken:  # generateName's collision: the controller tries again
                    retry += 1
                    name = prefix + suffix(w.namespace, w.name, str(i), f"retry-{retry}")
            taken.add(name)
            out.append((name, node))
        return out


def _seed_owner(api: ApiCore, w: sc.Workload) -> Obj | None:
    """The workload's custom-resource owner (a gang), once per name."""
    if w.owner is None:
        return None
    o = w.owner
    from gpunode_sandbox.kubesim.resources import BY_API

    res = BY_API[(o.api_version, o.kind)]
    found = api.store.get(res.key, w.namespace, o.name)
    if found is not None:
        return found
    return api.seed(
        {
            "apiVersion": o.api_version,
            "kind": o.kind,
            "metadata": {"name": o.name, "namespace": w.namespace},
            "spec": dict(o.spec),
        }
    )


def seed_workload(
    api: ApiCore, w: sc.Workload, nodes: dict[str, sc.Node], claims: Allocator | None = None
) -> None:
    """Seed ``w``'s owners and pods; ``claims`` allocates its DRA claims (``draclaims``)."""
    tmpl = pod_template(w)
    owner: Obj | None = _seed_owner(api, w)
    if w.kind != "Pod":
        api_version = "batch/v1" if w.kind == "Job" else "apps/v1"
        spec: Obj = {"selector": {"matchLabels": {"app": w.name}}, "template": tmpl}
        if w.kind in ("Deployment", "StatefulSet"):
            spec["replicas"] = w.replicas
        if w.kind == "StatefulSet":
            spec["serviceName"] = w.name
        if w.kind == "Job":
            spec.pop("selector")
            spec["manualSelector"] = False
        spec.update(w.controller_spec)
        meta: Obj = {
            "name": w.name,
            "namespace": w.namespace,
            "labels": {"app": w.name, **w.controller_labels},
        }
        if w.controller_annotations:
            meta["annotations"] = dict(w.controller_annotations)
        if owner is not None:
            meta["ownerReferences"] = [owner_ref(owner)]
        ctrl = api.seed(
            {"apiVersion": api_version, "kind": w.kind, "metadata": meta, "spec": spec},
            validate=True,
        )
        owner = ctrl
        if w.kind == "Deployment":
            rs_spec: Obj = {
                "replicas": w.replicas,
                "selector": {"matchLabels": {"app": w.name, "pod-template-hash": rs_hash(w)}},
                "template": {
                    "metadata": {
                        "labels": {**tmpl["metadata"]["labels"], "pod-template-hash": rs_hash(w)}
                    },
                    "spec": tmpl["spec"],
                },
            }
            owner = api.seed(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": f"{w.name}-{rs_hash(w)}",
                        "namespace": w.namespace,
                        "labels": rs_spec["template"]["metadata"]["labels"],
                        "ownerReferences": [owner_ref(ctrl)],
                    },
                    "spec": rs_spec,
                },
                validate=False,
            )
        set_controller_status(api, owner if w.kind != "Deployment" else ctrl, w)
    restarts = {c.name: (c.restart_count, c.last_terminated_reason) for c in w.running_containers()}
    template_hash = rs_hash(w)
    for i, (name, node_name) in enumerate(Placement.pods(w, list(nodes))):
        pod = pod_from_template(
            tmpl,
            name=name,
            namespace=w.namespace,
            node=node_name,
            owner=owner,
            extra_labels=(
                {"pod-template-hash": template_hash}
                if w.kind == "Deployment"
                else {"job-name": w.name}
                if w.kind == "Job"
                else {}
            ),
        )
        node = nodes.get(node_name or "")
        phase = w.phase if node is not None else "Pending"
        pod["status"] = running_status(pod, node, phase=phase, started=T0, restarts=restarts)
        if claims is not None and w.resource_claims and node is not None:
            claims.seed(api, w, pod)
        api.seed(pod, validate=i == 0, owned=True)  # built above for this call alone


def set_controller_status(api: ApiCore, obj: Obj, w: sc.Workload) -> None:
    n = w.replicas
    if w.kind == "DaemonSet":
        n = len(w.nodes) if w.nodes else len(api.store.list("nodes"))
        obj["status"] = {
            "currentNumberScheduled": n,
            "desiredNumberScheduled": n,
            "numberAvailable": n,
            "numberReady": n,
            "numberMisscheduled": 0,
            "updatedNumberScheduled": n,
            "observedGeneration": 1,
        }
    elif w.kind == "Job":
        obj["status"] = {"active": n, "startTime": ts(T0), "ready": n}
    else:
        obj["status"] = {
            "replicas": n,
            "readyReplicas": n,
            "availableReplicas": n,
            "updatedReplicas": n,
            "observedGeneration": 1,
        }
    api.store.put(
        {
            "Deployment": "deployments",
            "StatefulSet": "statefulsets",
            "DaemonSet": "daemonsets",
            "ReplicaSet": "replicasets",
            "Job": "jobs",
        }[obj["kind"]],
        obj,
    )
