"""The API resources the stand-in serves, as data (drives routing and discovery).

Metrics (``metrics.k8s.io``) are computed from the scenario, never stored, so they appear here
for discovery only.
"""

from __future__ import annotations

from dataclasses import dataclass

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    """One REST resource: where it lives, what it is called, which subresources it has."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    stored: bool = True
    crd: bool = False

    @property
    def key(self) -> str:
        """Where the store keeps it: the plural, or ``plural.group`` for a custom resource
        (a Volcano ``jobs`` must not share the batch/v1 ``jobs`` bucket)."""
        return f"{self.plural}.{self.group}" if self.crd else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()


_RBAC = "rbac.authorization.k8s.io"
_ADMISSION = "admissionregistration.k8s.io"
#: who may do what (served and enforced: kubesim/authz.py, admission.py)
ACCESS_RESOURCES: tuple[Resource, ...] = (
    Resource(_RBAC, "v1", "Role", "roles", True),
    Resource(_RBAC, "v1", "RoleBinding", "rolebindings", True),
    Resource(_RBAC, "v1", "ClusterRole", "clusterroles", False),
    Resource(_RBAC, "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    Resource(
        _ADMISSION,
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        False,
        (),
        ("status",),
    ),
    Resource(
        _ADMISSION,
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        False,
    ),
    Resource(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        (),
        (),
        ("create",),
        stored=False,
    ),
    Resource(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        False,
        (),
        (),
        ("create",),
        stored=False,
    ),
    Resource(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        False,
        (),
        (),
        ("create",),
        stored=False,
    ),
    Resource(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        False,
        (),
        (),
        ("create",),
        stored=False,
    ),
)

RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "Namespace", "namespaces", False, ("ns",), ("status",)),
    Resource("", "v1", "Node", "nodes", False, ("no",), ("status",)),
    Resource("", "v1", "Pod", "pods", True, ("po",), ("eviction", "log", "resize", "status")),
    Resource("", "v1", "Event", "events", True, ("ev",)),
    Resource("apps", "v1", "Deployment", "deployments", True, ("deploy",), ("scale", "status")),
    Resource("apps", "v1", "ReplicaSet", "replicasets", True, ("rs",), ("scale", "status")),
    Resource("apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), ("scale", "status")),
    Resource("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",)),
    Resource("batch", "v1", "Job", "jobs", True, (), ("status",)),
    Resource("batch", "v1", "CronJob", "cronjobs", True, ("cj",), ("status",)),
    Resource(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        True,
        ("rc",),
        ("scale", "status"),
    ),
    Resource("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    Resource(
        "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)
    ),
    Resource("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",), ("status",)),
    Resource("", "v1", "Service", "services", True, ("svc",), ("status",)),
    Resource("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    Resource("", "v1", "Secret", "secrets", True),
    Resource(
        "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), ("status",)
    ),
    Resource("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", False, ("pc",)),
    Resource("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", False),
    Resource("", "v1", "ResourceQuota", "resourcequotas", True, ("quota",), ("status",)),
    Resource("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",)),
    Resource("coordination.k8s.io", "v1", "Lease", "leases", True),
    # DRA: drivers publish a node's devices as ResourceSlices (resource.k8s.io/v1, GA in 1.34)
    Resource("resource.k8s.io", "v1", "ResourceSlice", "resourceslices", False),
    # ... and pods hold them through ResourceClaims, made from ResourceClaimTemplates
    Resource("resource.k8s.io", "v1", "ResourceClaim", "resourceclaims", True, (), ("status",)),
    Resource("resource.k8s.io", "v1", "ResourceClaimTemplate", "resourceclaimtemplates", True),
    *ACCESS_RESOURCES,
    Resource(
        "metrics.k8s.io",
        "v1beta1",
        "NodeMetrics",
        "nodes",
        False,
        (),
        (),
        ("get", "list"),
        stored=False,
    ),
    Resource(
        "metrics.k8s.io",
        "v1beta1",
        "PodMetrics",
        "pods",
        True,
        (),
        (),
        ("get", "list"),
        stored=False,
    ),
)

#: Custom resources the stand-in can serve: only those a scenario installs (``Scenario.crds``,
#: by ``plural.group``); any other is a 404, as on a cluster without the CRD. Gang owners
#: (bot.core.model.gangs) and the VerticalPodAutoscaler.
CUSTOM: tuple[Resource, ...] = tuple(
    Resource(group, version, kind, plural, True, (), ("status",), crd=True)
    for group, version, kind, plural in (
        ("kubeflow.org", "v1", "PyTorchJob", "pytorchjobs"),
        ("kubeflow.org", "v1", "TFJob", "tfjobs"),
        ("kubeflow.org", "v2beta1", "MPIJob", "mpijobs"),
        ("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets"),
        ("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet", "leaderworkersets"),
        ("ray.io", "v1", "RayCluster", "rayclusters"),
        ("batch.volcano.sh", "v1alpha1", "Job", "jobs"),
        ("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups"),
        ("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups"),
        ("kueue.x-k8s.io", "v1beta1", "Workload", "workloads"),
        ("sparkoperator.k8s.io", "v1beta2", "SparkApplication", "sparkapplications"),
        ("autoscaling.k8s.io", "v1", "VerticalPodAutoscaler", "verticalpodautoscalers"),
    )
)
#: Kueue's queues (kueue.x-k8s.io): LocalQueue is namespaced, ClusterQueue is not
CUSTOM = (
    *CUSTOM,
    # Karpenter's NodePools (karpenter.sh/v1): cluster-scoped
    Resource("karpenter.sh", "v1", "NodePool", "nodepools", False, (), ("status",), crd=True),
    # Cluster API node groups (cluster.x-k8s.io): namespaced
    Resource(
        "cluster.x-k8s.io",
        "v1beta1",
        "MachineDeployment",
        "machinedeployments",
        True,
        (),
        ("status",),
        crd=True,
    ),
    Resource(
        "cluster.x-k8s.io", "v1beta1", "MachineSet", "machinesets", True, (), ("status",), crd=True
    ),
    Resource(
        "kueue.x-k8s.io", "v1beta1", "LocalQueue", "localqueues", True, (), ("status",), crd=True
    ),
    Resource(
        "kueue.x-k8s.io",
        "v1beta1",
        "ClusterQueue",
        "clusterqueues",
        False,
        (),
        ("status",),
        crd=True,
    ),
)
RESOURCES = RESOURCES + CUSTOM

#: subresource -> (kind, group, version) as reported by discovery
SUBRESOURCE_KINDS: dict[str, tuple[str, str, str]] = {
    "eviction": ("Eviction", "policy", "v1"),
    "scale": ("Scale", "autoscaling", "v1"),
}

STORED: dict[str, Resource] = {r.key: r for r in RESOURCES if r.stored}
BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES if r.stored and not r.crd}
BY_API: dict[tuple[str, str], Resource] = {(r.api_version, r.kind): r for r in RESOURCES}


def group_versions(installed: frozenset[str] | set[str] = frozenset()) -> dict[str, list[Resource]]:
    """``"apps/v1" -> resources`` for every served group version (core is ``"v1"``); custom
    resources only when ``installed`` names them (``plural.group``)."""
    out: dict[str, list[Resource]] = {}
    for r in RESOURCES:
        if r.crd and r.key not in installed:
            continue
        out.setdefault(r.api_version, []).append(r)
    return out


def find(group: str, version: str, plural: str) -> Resource | None:
    for r in RESOURCES:
        if r.group == group and r.version == version and r.plural == plural:
            return r
    return None
