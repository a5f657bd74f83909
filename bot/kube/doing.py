"""What a Kubernetes request was doing, said as a key and raw params (``Doing``).

A failing request's error names the request ("read node gpu-1: the API server did not
answer..."). The label is structured so each presenter words it for its reader: the error
carries its English text as ``doing`` (logs, audit rows, English messages) and its key and
params as ``doing_key``/``doing_params`` (``bot.kube.errors.translate``), which
``templates/slack/doing.j2`` words per language (one macro per key below).

``LABELS`` is the vocabulary: key -> the English words, with ``%(name)s`` placeholders for
the request's node, namespace, name... ``str(Doing)`` is those words filled in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

#: every request label: key -> its English words (also the catalog's msgid, in doing.j2)
LABELS: dict[str, str] = {
    # reads of the node, the fleet, the cluster's discovery
    "read_node": "read node %(node)s",
    "list_nodes": "list nodes",
    "list_nodes_and_pods": "list nodes and pods",
    "list_slices": "list ResourceSlices",
    "list_slices_of": "list ResourceSlices of %(node)s",
    "list_claims": "list ResourceClaims",
    "list_claims_in": "list ResourceClaims in %(namespace)s",
    "list_pod_metrics": "list pod metrics",
    "discover_groups": "discover API groups",
    "discover_core": "discover /api/v1",
    "read_server_version": "read server version",
    "list_priority_classes": "list priority classes",
    "list_pods_on": "list pods on %(node)s",
    "list_events_of": "list events of %(node)s",
    "read_pod_owners": "read pod owners",
    "list_budgets": "list PodDisruptionBudgets",
    "read_object": "read %(kind)s %(namespace)s/%(name)s",
    "reread_object": "re-read %(kind)s %(namespace)s/%(name)s",
    "reread_cluster_object": "re-read %(kind)s %(name)s",
    # what the plans read around the node (bot.kube.surveying)
    "list_pods_selected": "list pods selected by %(selector)s",
    "list_namespaces": "list namespaces",
    "read_pvc": "read PVC %(namespace)s/%(name)s",
    "read_pv": "read PV %(name)s",
    "read_local_queue": "read LocalQueue %(namespace)s/%(name)s",
    "read_cluster_queue": "read ClusterQueue %(name)s",
    "list_kueue_workloads": "list Kueue Workloads in %(namespace)s",
    "list_nodepools": "list Karpenter NodePools",
    "list_machine_deployments": "list MachineDeployments",
    "list_machine_sets": "list MachineSets",
    "list_vpas": "list VPAs in %(namespace)s",
    "list_pods_in": "list pods in %(namespace)s",
    "list_pods_of": "list pods of %(namespace)s/%(name)s",
    # the diagnosis (the collector Job, the node's agent, dcgm-exporter)
    "read_runtime_class": "read RuntimeClass %(name)s",
    "ask_agent": "ask the agent on %(node)s",
    "find_agent": "find the agent on %(node)s",
    "create_job": "create diagnostic Job %(namespace)s/%(name)s",
    "watch_job": "watch diagnostic Job %(namespace)s/%(name)s",
    "read_log": "read log of %(namespace)s/%(name)s",
    "read_job": "read Job %(namespace)s/%(name)s",
    "delete_job": "delete Job %(namespace)s/%(name)s",
    "read_dcgm": "read dcgm-exporter on %(node)s",
    "dry_run_job": "dry-run the diagnostic Job on %(node)s",
    # the audit anchors and the self-check
    "post_anchor": "post audit anchor %(row)s",
    "list_anchors": "list audit anchors",
    "review_rules": "review the token's rules in %(namespace)s",
    "list_admission_policies": "list admission policies",
    # remedies and watching them land
    "cordon": "cordon %(node)s",
    "uncordon": "uncordon %(node)s",
    "annotate": "annotate %(node)s",
    "evict": "evict pod %(namespace)s/%(name)s",
    "ensure_priority_class": "ensure PriorityClass %(name)s",
    "create_priority_class": "create PriorityClass %(name)s",
    "set_priority_class_name": "set priorityClassName on %(kind)s %(namespace)s/%(name)s",
    "patch_resources": "patch %(kind)s %(namespace)s/%(name)s container %(container)s",
    "patch_object": "patch %(kind)s %(namespace)s/%(name)s",
    "resize_pod": "resize pod %(namespace)s/%(name)s",
    "read_rollout": "read the rollout of %(kind)s %(namespace)s/%(name)s",
    "read_resize": "read the resize of pod %(namespace)s/%(name)s",
    "read_evicted_pods": "read evicted pods",
    # the configuration and the leader's Lease
    "load_config": "load Kubernetes configuration",
    "read_lease": "read lease %(namespace)s/%(name)s",
    "create_lease": "create lease %(namespace)s/%(name)s",
    "update_lease": "update lease %(namespace)s/%(name)s",
}

_PLACEHOLDER = re.compile(r"%\((\w+)\)s")


@cache
def placeholders(key: str) -> frozenset[str]:
    """The params label ``key`` takes."""
    return frozenset(_PLACEHOLDER.findall(LABELS[key]))


@dataclass(frozen=True, slots=True)
class Doing:
    """A request's label: a ``LABELS`` key and its raw params (strings). ``str()`` gives the
    English words. Build with ``Doing.of("read_node", node="gpu-1")``."""

    key: str
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, key: str, **params: object) -> Doing:
        """The label ``key`` with ``params``; ValueError for an unknown key or for params
        that are not exactly its placeholders (a bug at the call site)."""
        if key not in LABELS:
            raise ValueError(f"unknown request label {key!r}")
        if set(params) != placeholders(key):
            raise ValueError(f"request label {key!r} takes {sorted(placeholders(key))}")
        return cls(key, tuple(sorted((k, str(v)) for k, v in params.items())))

    def as_params(self) -> dict[str, str]:
        """The params, as an error's ``doing_params`` (JSON-ready)."""
        return dict(self.params)

    def __str__(self) -> str:
        return LABELS[self.key] % self.as_params()
