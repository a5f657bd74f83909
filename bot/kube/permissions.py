"""Every (apiGroup, resource, verb) the gateway calls, for the ClusterRole check in deploy/.

``scope``: ``cluster`` = any namespace or cluster-scoped; ``own_namespace`` = only the
bot's namespace (``kube.namespace``, where the diagnostic Jobs run). Server-side dry run
uses the real verb. Discovery (``/api``, ``/apis``, ``/version``) is non-resource and granted
to every authenticated user by ``system:discovery``.

``API_CALLS`` is the default collector mode's (``job``); ``api_calls(mode)`` gives the calls
of either mode: in ``daemonset`` mode (bot.kube.resident) the bot creates no Job and reads no
pod log; it finds the node's agent pod with the reads it already makes (the DaemonSet, the
pods on the node).
"""

from __future__ import annotations

from typing import NamedTuple


class ApiCall(NamedTuple):
    api_group: str
    resource: str
    verb: str
    scope: str = "cluster"


_CONTROLLERS = (
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
    ("", "replicationcontrollers"),
)

API_CALLS: tuple[ApiCall, ...] = (
    # reads for the cluster view
    ApiCall("", "nodes", "get"),
    ApiCall("", "nodes", "list"),
    ApiCall("", "nodes", "watch"),  # the nodes informer: the fleet for `top` and the plans
    ApiCall("", "pods", "list"),
    ApiCall("", "pods", "watch"),  # the pods informer (bot.kube.informing, slim records)
    ApiCall("", "pods", "get"),
    ApiCall("", "events", "list"),
    ApiCall("", "events", "watch"),  # the pod-events informer (bot.kube.informing)
    ApiCall("scheduling.k8s.io", "priorityclasses", "list"),
    ApiCall("metrics.k8s.io", "pods", "list"),
    # template patches check the rollout they rely on: a VPA targeting the workload
    ApiCall("autoscaling.k8s.io", "verticalpodautoscalers", "list"),
    # a restarted Kueue workload re-enters admission: is quota left in its queue?
    ApiCall("kueue.x-k8s.io", "localqueues", "get"),
    # where an evicted or restarted pod can go: its PersistentVolumes' node affinity
    ApiCall("", "persistentvolumeclaims", "get"),
    ApiCall("", "persistentvolumes", "get"),
    # ... and a required pod (anti-)affinity term's namespaceSelector: namespaces' labels
    ApiCall("", "namespaces", "list"),
    # ... and an autoscaler pool with no node yet: Karpenter's NodePools
    ApiCall("karpenter.sh", "nodepools", "list"),
    # ... and the cluster autoscaler's Cluster API node groups (scale-from-zero annotations)
    ApiCall("cluster.x-k8s.io", "machinedeployments", "list"),
    ApiCall("cluster.x-k8s.io", "machinesets", "list"),
    ApiCall("kueue.x-k8s.io", "clusterqueues", "get"),
    # ... and the restarted pods' Kueue Workloads (admission, PodsReady, evictions)
    ApiCall("kueue.x-k8s.io", "workloads", "list"),
    *(ApiCall(group, plural, "get") for group, plural in _CONTROLLERS),
    # the owner informers (bot.kube.ownerrecords): every kind but ReplicationController
    *(
        ApiCall(group, plural, verb)
        for group, plural in _CONTROLLERS
        if plural != "replicationcontrollers"
        for verb in ("list", "watch")
    ),
    # the diagnostic Job: the NVIDIA RuntimeClass preflight, then the Job (its FailedCreate
    # events come from the events list above)
    ApiCall("node.k8s.io", "runtimeclasses", "get"),
    # DRA GPU nodes: which drivers publish devices on a node (bot.kube.dra)
    ApiCall("resource.k8s.io", "resourceslices", "list"),
    # DRA pods: which devices (driver, pool, device) their ResourceClaims hold (bot.kube.dra)
    ApiCall("resource.k8s.io", "resourceclaims", "list"),
    # the third GPU-evidence rung: dcgm-exporter's endpoint on the node (bot.kube.dcgm)
    ApiCall("discovery.k8s.io", "endpointslices", "list"),
    ApiCall("batch", "jobs", "create", "own_namespace"),
    ApiCall("batch", "jobs", "delete", "own_namespace"),
    ApiCall("", "pods", "watch", "own_namespace"),
    ApiCall("", "pods/log", "get", "own_namespace"),
    # the audit chain's head, anchored outside the store as an Event on the bot's Deployment
    ApiCall("", "events", "create", "own_namespace"),
    # gpunode doctor: the admission policies bounding the writes below are installed, bound
    ApiCall("admissionregistration.k8s.io", "validatingadmissionpolicies", "list"),
    ApiCall("admissionregistration.k8s.io", "validatingadmissionpolicybindings", "list"),
    # remedies
    ApiCall("", "nodes", "patch"),
    ApiCall("", "pods/eviction", "create"),
    ApiCall("", "pods/resize", "patch"),
    # the budgets of the node's namespaces (tier 1 names the pods they pin) and of evicted pods
    ApiCall("policy", "poddisruptionbudgets", "list"),
    ApiCall("policy", "poddisruptionbudgets", "watch"),  # their informer
    ApiCall("scheduling.k8s.io", "priorityclasses", "get"),
    ApiCall("scheduling.k8s.io", "priorityclasses", "create"),
    # tier 2 / 3 patch pod templates of these kinds only (bot.core.model.actions.PATCHABLE_KINDS)
    ApiCall("apps", "deployments", "patch"),
    ApiCall("apps", "statefulsets", "patch"),
    ApiCall("apps", "daemonsets", "patch"),  # tier 3 only (tier 2 never patches one)
)

#: the calls only the diagnostic Job makes (the RuntimeClass preflight is for its pod)
JOB_ONLY: frozenset[ApiCall] = frozenset(
    {
        ApiCall("node.k8s.io", "runtimeclasses", "get"),
        ApiCall("batch", "jobs", "create", "own_namespace"),
        ApiCall("batch", "jobs", "delete", "own_namespace"),
        ApiCall("", "pods", "watch", "own_namespace"),
        ApiCall("", "pods/log", "get", "own_namespace"),
    }
)
#: what the agent's ServiceAccount needs (deploy/overlays/daemonset): nothing but reviews
AGENT_CALLS: tuple[ApiCall, ...] = (ApiCall("authentication.k8s.io", "tokenreviews", "create"),)


def api_calls(mode: str = "job") -> tuple[ApiCall, ...]:
    """The calls the bot makes in collector ``mode`` (``job`` or ``daemonset``)."""
    if mode == "job":
        return API_CALLS
    if mode == "daemonset":
        return tuple(c for c in API_CALLS if c not in JOB_ONLY)
    raise ValueError(f"unknown collector mode {mode!r} (job or daemonset)")
