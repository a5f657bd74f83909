"""Training gangs: pods that only make progress together. Pure: no I/O.

A gang is recognised by its owner's API *group* and kind, never by kind alone (a Volcano
``Job`` is ``batch.volcano.sh``, not ``batch/v1``), or by the labels and annotations the
gang controllers put on every member:

==========================  =========================================  ==========================
owner (group / kind)         member labels / annotations                 roles (CPU-only members)
==========================  =========================================  ==========================
kubeflow.org / PyTorchJob,   ``training.kubeflow.org/job-name``          ``.../replica-type``:
TFJob, MPIJob, XGBoostJob,                                                launcher, master, ps
PaddleJob, JAXJob
jobset.x-k8s.io / JobSet     ``jobset.sigs.k8s.io/jobset-name``
leaderworkerset.x-k8s.io /   ``leaderworkerset.sigs.k8s.io/name`` and     worker-index 0: leader
LeaderWorkerSet              ``.../group-index`` (one gang per group)
ray.io / RayCluster, RayJob  ``ray.io/cluster``                          ``ray.io/node-type``: head
batch.volcano.sh / Job       ``volcano.sh/job-name``; annotation
                             ``scheduling.k8s.io/group-name`` (PodGroup)
scheduling.x-k8s.io /        label ``scheduling.x-k8s.io/pod-group``
PodGroup
kueue.x-k8s.io (workload)    ``kueue.x-k8s.io/pod-group-name``; a pod
                             with ``kueue.x-k8s.io/queue-name`` is
                             admitted as part of its owner's Workload
sparkoperator.k8s.io /       ``sparkoperator.k8s.io/app-name``           ``spark-role``: driver
SparkApplication
==========================  =========================================  ==========================
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.core.model.annotations import ANNOTATION_KEYS as ANNOTATION_KEYS
from bot.core.model.annotations import VOLCANO_GROUP_ANNOTATION as VOLCANO_GROUP_ANNOTATION
from bot.core.model.cluster import OwnerRef, PodInfo

#: (group, kind) of owners that run gangs
GANG_OWNERS: frozenset[tuple[str, str]] = frozenset(
    {
        *(
            ("kubeflow.org", k)
            for k in ("PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob")
        ),
        ("trainer.kubeflow.org", "TrainJob"),
        ("jobset.x-k8s.io", "JobSet"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("ray.io", "RayCluster"),
        ("ray.io", "RayJob"),
        ("batch.volcano.sh", "Job"),
        ("scheduling.volcano.sh", "PodGroup"),
        ("scheduling.x-k8s.io", "PodGroup"),
        ("sparkoperator.k8s.io", "SparkApplication"),
    }
)
#: label -> (group, kind) of the gang it names
GANG_LABELS: tuple[tuple[str, str, str], ...] = (
    ("training.kubeflow.org/job-name", "kubeflow.org", ""),
    ("jobset.sigs.k8s.io/jobset-name", "jobset.x-k8s.io", "JobSet"),
    ("leaderworkerset.sigs.k8s.io/name", "leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    ("ray.io/cluster", "ray.io", "RayCluster"),
    ("volcano.sh/job-name", "batch.volcano.sh", "Job"),
    ("scheduling.x-k8s.io/pod-group", "scheduling.x-k8s.io", "PodGroup"),
    ("kueue.x-k8s.io/pod-group-name", "kueue.x-k8s.io", "Workload"),
    ("sparkoperator.k8s.io/app-name", "sparkoperator.k8s.io", "SparkApplication"),
)
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
LWS_GROUP_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
#: labels whose value names a member's role; the roles that hold the gang together
ROLE_LABELS = (
    "training.kubeflow.org/replica-type",
    "ray.io/node-type",
    "spark-role",
)
COORDINATOR_ROLES = frozenset({"launcher", "master", "chief", "ps", "head", "driver", "leader"})


class Gang(BaseModel):
    """One gang; ``key`` identifies it across pods (``group/Kind namespace/name``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    group: str
    kind: str
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.group}/{self.kind} {self.namespace}/{self.name}"

    @property
    def label(self) -> str:
        """How people name it: ``PyTorchJob team/llm``."""
        return f"{self.kind} {self.namespace}/{self.name}"


def api_group(api_version: str) -> str:
    """``kubeflow.org/v1`` -> ``kubeflow.org``; ``v1`` (core) -> ``""``."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


#: built-in controller kinds and their API group
BUILTIN_GROUPS: dict[str, str] = {
    "Deployment": "apps",
    "StatefulSet": "apps",
    "ReplicaSet": "apps",
    "DaemonSet": "apps",
    "Job": "batch",
    "CronJob": "batch",
    "ReplicationController": "",
}


def builtin_kind(owner: OwnerRef | None) -> str | None:
    """The owner's kind when it is a built-in controller (checked by group: a Volcano
    ``Job`` is not a ``batch/v1`` Job); None otherwise. An owner recorded without an
    apiVersion (hand-built data) is taken by kind."""
    if owner is None or owner.kind not in BUILTIN_GROUPS:
        return None
    if owner.api_version and api_group(owner.api_version) != BUILTIN_GROUPS[owner.kind]:
        return None
    return owner.kind


def gang_of(pod: PodInfo) -> Gang | None:
    """The gang ``pod`` belongs to, or None for a pod that can leave alone."""
    for owner in pod.owners:
        group = api_group(owner.api_version)
        if (group, owner.kind) in GANG_OWNERS:
            name = owner.name
            if (group, owner.kind) == ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"):
                name = _lws_group(pod, name)
            return Gang(group=group, kind=owner.kind, namespace=pod.namespace, name=name)
    for label, group, kind in GANG_LABELS:
        value = pod.labels.get(label)
        if not value:
            continue
        if not kind:  # kubeflow: the kind is the owner's (PyTorchJob, MPIJob...)
            kind = next(
                (o.kind for o in pod.owners if api_group(o.api_version) == group), "TrainingJob"
            )
        if kind == "LeaderWorkerSet":
            value = _lws_group(pod, value)
        return Gang(group=group, kind=kind, namespace=pod.namespace, name=value)
    if group_name := pod.annotations.get(VOLCANO_GROUP_ANNOTATION):
        return Gang(
            group="scheduling.volcano.sh", kind="PodGroup", namespace=pod.namespace, name=group_name
        )
    top = pod.top_owner
    if pod.labels.get(KUEUE_QUEUE_LABEL) and top is not None:
        return Gang(
            group="kueue.x-k8s.io",
            kind="Workload",
            namespace=pod.namespace,
            name=f"{top.kind.lower()}-{top.name}",
        )
    return None


def _lws_group(pod: PodInfo, name: str) -> str:
    index = pod.labels.get(LWS_GROUP_LABEL)
    return f"{name}-{index}" if index is not None else name


def role_of(pod: PodInfo) -> str | None:
    """The member's role when its labels say it (``launcher``, ``head``, ``driver``...)."""
    for label in ROLE_LABELS:
        if value := pod.labels.get(label):
            return value.lower()
    if "leaderworkerset.sigs.k8s.io/name" in pod.labels:
        return (
            "leader"
            if pod.labels.get("leaderworkerset.sigs.k8s.io/worker-index") == "0"
            else ("worker")
        )
    return None


def members(gang: Gang, pods: list[PodInfo]) -> list[PodInfo]:
    """The pods of ``pods`` that belong to ``gang`` (sorted by key)."""
    return sorted((p for p in pods if (g := gang_of(p)) and g.key == gang.key), key=lambda p: p.key)
