"""What a workload's controller and a pod's scheduling constraints say, as data. Pure.

Built by ``bot.kube`` from API objects; read by the remedy checks (``bot.core.remedies.rollouts``,
``bot.core.remedies.placement``). Units: cpu in millicores, memory in bytes, every other resource
(``nvidia.com/gpu``, ``amd.com/gpu``...) in whole units.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: the annotation a team sets on the workload (in its chart's template) to name the key
from bot.core.model.annotations import HELM_KEY_ANNOTATION as HELM_KEY_ANNOTATION


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Toleration(_Model):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class Requirement(_Model):
    """One node selector requirement (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``,
    ``Gt``, ``Lt``)."""

    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class LabelSelector(_Model):
    """A ``metav1.LabelSelector``: every ``matchLabels`` pair and every expression (``In``,
    ``NotIn``, ``Exists``, ``DoesNotExist``). Empty selects everything."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[Requirement] = Field(default_factory=list)


class PodAffinityTerm(_Model):
    """One required pod (anti-)affinity term, as kube-scheduler's ``AffinityTerm`` holds it:
    the pods it selects (``selector``; None: a nil ``labelSelector``, which selects none),
    in the namespaces it names or whose labels ``namespace_selector`` selects (the owning
    pod's own namespace when the term sets neither: resolved when parsed), grouped by the
    node label ``topology_key``."""

    selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespace_selector: LabelSelector | None = Field(
        None, description="None: not set (matches no namespace); empty: every namespace"
    )
    topology_key: str


class SpreadConstraint(_Model):
    """One ``topologySpreadConstraints`` entry with ``whenUnsatisfiable: DoNotSchedule`` (a
    ``ScheduleAnyway`` one only scores, never blocks), as kube-scheduler's PodTopologySpread
    holds it: ``matchLabelKeys`` already merged into ``selector`` (``key In (value)`` for each
    key the pod's labels carry), the policies defaulted."""

    max_skew: int = 1
    topology_key: str
    selector: LabelSelector | None = Field(
        None, description="None: no labelSelector (counts no pod, and the pod is no match)"
    )
    min_domains: int = Field(1, description="minDomains; unset counts as 1")
    node_affinity_policy: Literal["Honor", "Ignore"] = Field(
        "Honor", description="nodeAffinityPolicy: count only nodes the pod's node affinity takes"
    )
    node_taints_policy: Literal["Honor", "Ignore"] = Field(
        "Ignore", description="nodeTaintsPolicy: Honor counts only nodes whose taints it tolerates"
    )


class PodScheduling(_Model):
    """What the scheduler matches a pod against."""

    requests: dict[str, int] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    required_terms: list[list[Requirement]] = Field(
        default_factory=list, description="nodeAffinity required terms: any term, all of it"
    )
    preemption_policy: str | None = None
    spread_from_siblings: bool = Field(
        False,
        description="a required podAntiAffinity on kubernetes.io/hostname that selects the "
        "pod's own labels: no two of its replicas on one node",
    )
    affinity_terms: list[PodAffinityTerm] = Field(
        default_factory=list, description="podAffinity requiredDuringScheduling... terms"
    )
    anti_affinity_terms: list[PodAffinityTerm] = Field(
        default_factory=list, description="podAntiAffinity requiredDuringScheduling... terms"
    )
    spread_constraints: list[SpreadConstraint] = Field(
        default_factory=list, description="topologySpreadConstraints with DoNotSchedule"
    )
    claims: list[str] = Field(
        default_factory=list, description="spec.volumes[].persistentVolumeClaim.claimName"
    )
    volume_terms: list[list[list[Requirement]]] = Field(
        default_factory=list,
        description="per bound PersistentVolume, its nodeAffinity required terms (any term, "
        "all of it); every volume must be satisfied (a local PV pins the pod to its node)",
    )


class PeerPod(_Model):
    """A bound, non-terminated pod on some node, as the inter-pod affinity filter counts it:
    one that a term of a pod being placed may select, or one whose own required
    anti-affinity may refuse it."""

    key: str
    namespace: str
    labels: dict[str, str] = Field(default_factory=dict)
    node: str
    anti_affinity_terms: list[PodAffinityTerm] = Field(default_factory=list)
    terminating: bool = Field(
        False, description="metadata.deletionTimestamp set: topology spread does not count it"
    )


class PodSlot(_Model):
    """A pod on another node: what preempting it would free."""

    key: str
    priority: int = 0
    requests: dict[str, int] = Field(default_factory=dict)


class QueueInfo(_Model):
    """A Kueue LocalQueue and its ClusterQueue, as Kueue reports them in their status."""

    namespace: str
    name: str
    cluster_queue: str | None = None
    pending_workloads: int = Field(0, description="ClusterQueue status.pendingWorkloads")
    exhausted: list[str] = Field(
        default_factory=list,
        description="resources whose ClusterQueue usage (status.flavorsUsage) has reached the "
        "quota it may use (nominalQuota, plus borrowingLimit in a cohort)",
    )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class KueueWorkload(_Model):
    """A Kueue ``Workload`` (``kueue.x-k8s.io``) that one of the node's pods belongs to: the
    unit Kueue admits against a ClusterQueue's quota."""

    namespace: str
    name: str
    pods: list[str] = Field(default_factory=list, description="the node's pods it covers")
    cluster_queue: str | None = Field(None, description="status.admission.clusterQueue")
    admitted: bool = Field(False, description="condition Admitted is True")
    pods_ready: bool | None = Field(
        None, description="condition PodsReady (None: Kueue set none on it)"
    )
    evicted_reason: str | None = Field(
        None, description="condition Evicted's reason when True (PodsReadyTimeout...)"
    )
    requeue_count: int = Field(
        0, description="status.requeueState.count: evictions for pod readiness so far"
    )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


#: a field a plan asks a Helm chart to keep: tier 3's memory limit, tier 2's priority class
HelmField = Literal["memory-limit", "priority-class"]


class HelmValuesKey(_Model):
    """The values key a Helm chart renders one field from, as a team named it: on the
    workload (annotation ``gpunode.io/helm-values-key.<field>``) or in the bot's settings
    for the chart (``kube.helm_values_keys``). Never read from the release itself: its values
    live in Helm's release Secret, which the bot may not read."""

    field: HelmField
    key: str = Field(description="the values key; ``{container}`` stands for the container")
    container: str | None = Field(None, description="only this container (None: any)")
    source: Literal["annotation", "settings"]
    where: str = Field(description="the annotation's name, or the chart's name in the settings")


class WorkloadInfo(_Model):
    """A top controller of pods on the node, with what decides how a change reaches them."""

    kind: str
    api_version: str = ""
    namespace: str
    name: str
    replicas: int | None = None
    strategy: str | None = Field(
        None, description="Deployment strategy / StatefulSet, DaemonSet updateStrategy type"
    )
    max_surge: str | None = None
    max_unavailable: str | None = None
    pod_management_policy: str | None = None
    gitops: str | None = Field(None, description="'Argo CD' or 'Flux' when one manages it")
    gitops_name: str | None = Field(None, description="the Argo CD app / Flux object")
    vpa: str | None = Field(None, description="a VerticalPodAutoscaler that targets it")
    vpa_mode: str | None = None
    partition: int | None = Field(
        None,
        description="StatefulSet updateStrategy.rollingUpdate.partition: pods with a lower "
        "ordinal keep the old template",
    )
    helm_release: str | None = Field(
        None, description="namespace/name of the Helm release that manages it"
    )
    helm_chart: str | None = Field(None, description="label helm.sh/chart (name-version)")
    helm_keys: list[HelmValuesKey] = Field(
        default_factory=list, description="the values keys a team named for its chart's fields"
    )
    containers: list[str] = Field(
        default_factory=list, description="spec.template.spec.containers names, in order"
    )
    backoff_limit: int | None = Field(None, description="batch/v1 Job only")
    failed: int | None = None
    ignores_disruption: bool = Field(
        False, description="podFailurePolicy has action Ignore on DisruptionTarget"
    )
    elsewhere: dict[str, str] = Field(
        default_factory=dict,
        description="its running pods on other nodes: pod key -> node (a template change "
        "rolls them too)",
    )

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


HELM_FIELDS: tuple[HelmField, ...] = (
    "memory-limit",
    "priority-class",
)


#: what is wrong with a values-key text, by fault (``helm_keys_fault``), in English
HELM_KEYS_FAULTS: dict[str, str] = {
    "empty": "give a values key, or container=key pairs separated by commas",
    "mixed": "give one key, or container=key pairs for every entry, not both",
    "pair": "each container=key pair needs a container name and a key",
    "space": "a values key or container name has no spaces",
}


def helm_keys_fault(text: str) -> str | None:
    """What is wrong with a values-key text as a key of ``HELM_KEYS_FAULTS`` (None: it
    parses): either one key (``{container}`` stands for the container's name) or
    ``container=key`` pairs separated by commas."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        return "empty"
    pairs = [p for p in parts if "=" in p]
    if pairs and len(pairs) != len(parts):
        return "mixed"
    for p in pairs:
        container, _, key = p.partition("=")
        if not container.strip() or not key.strip() or "=" in key:
            return "pair"
    words = [w.strip() for p in parts for w in p.split("=")]
    if any(any(c.isspace() for c in w) for w in words):
        return "space"
    return None


def helm_keys_problem(text: str) -> str | None:
    """``helm_keys_fault`` in English (None: the text parses)."""
    fault = helm_keys_fault(text)
    return None if fault is None else HELM_KEYS_FAULTS[fault]


def parse_helm_keys(
    field: HelmField,
    text: str,
    *,
    source: Literal["annotation", "settings"],
    where: str,
) -> list[HelmValuesKey]:
    """``text`` (see ``helm_keys_problem``) as the keys it names; [] when it does not parse."""
    if helm_keys_fault(text) is not None:
        return []
    out = []
    for part in (p.strip() for p in text.split(",")):
        container, _, key = part.partition("=") if "=" in part else ("", "", part)
        out.append(
            HelmValuesKey(
                field=field,
                key=key.strip(),
                container=container.strip() or None,
                source=source,
                where=where,
            )
        )
    return out
