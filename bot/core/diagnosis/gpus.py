"""What a node's GPUs are, from the API and the evidence: whether it has any, and how the
device plugin shares them. Pure: no I/O. The one home of "is this a GPU node" (every GPU word
in a message depends on it) and of the GPU sharing configuration.

Sharing, as NVIDIA's device plugin and GPU feature discovery (GFD) publish it:

==========================================  =============================================
node label / resource                        meaning
==========================================  =============================================
``nvidia.com/gpu.sharing-strategy``          ``none`` (default), ``time-slicing``, ``mps``
``nvidia.com/gpu.replicas``                  pods one physical GPU is handed out to
``nvidia.com/gpu.product`` ending            the product of a node whose GPUs are shared
``-SHARED``                                  (``renameByDefault: false``)
``nvidia.com/gpu.shared`` resource           the renamed resource (``renameByDefault: true``)
==========================================  =============================================

Time-sliced replicas of one physical GPU share its memory with no isolation (unlike MIG):
one process can take what the others need. Under MPS the device plugin caps each client's
device memory at its share, but a fault in one client still reaches the others; either way
"GPU isolation holds" is never said.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.model.cluster import ClusterView, NodeInfo, is_accelerator_resource
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.quantity import quantity_value

SHARING_STRATEGY_LABEL = "nvidia.com/gpu.sharing-strategy"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
PRODUCT_LABEL = "nvidia.com/gpu.product"
SHARED_RESOURCE = "nvidia.com/gpu.shared"
SHARED_PRODUCT_SUFFIX = "-SHARED"


def _advertises_accelerators(node: NodeInfo) -> bool:
    for resources in (node.allocatable, node.capacity):
        for name, value in resources.items():
            if is_accelerator_resource(name) and (quantity_value(value) or 0) > 0:
                return True
    return False


def node_has_gpus(bundle: EvidenceBundle | None, view: ClusterView | None) -> bool:
    """True when the node has accelerators: the API's one definition of a GPU node
    (``NodeInfo.has_gpus``: whole, shared and MIG NVIDIA resources, AMD GPUs, GPU DRA
    drivers' ResourceSlices), any accelerator resource in its capacity, or GPU devices in the
    evidence. Every GPU word in a message hangs on this one predicate."""
    if bundle is not None and bundle.gpus:
        return True
    return view is not None and (view.node.has_gpus or _advertises_accelerators(view.node))


@dataclass(frozen=True)
class GpuSharing:
    """How the device plugin shares the node's GPUs. ``strategy``: ``none``,
    ``time-slicing`` or ``mps``; ``replicas``: pods per physical GPU (1: not shared)."""

    strategy: str
    replicas: int
    source: str

    @property
    def shared(self) -> bool:
        return self.strategy != "none" or self.replicas > 1


NOT_SHARED = GpuSharing("none", 1, "")


def gpu_sharing(node: NodeInfo | None) -> GpuSharing:
    """The node's GPU sharing from GFD's labels (and the renamed ``nvidia.com/gpu.shared``
    resource); ``NOT_SHARED`` when nothing says so."""
    if node is None:
        return NOT_SHARED
    labels = node.labels
    strategy = (labels.get(SHARING_STRATEGY_LABEL) or "").strip().lower()
    try:
        replicas = int(labels.get(REPLICAS_LABEL) or 1)
    except ValueError:
        replicas = 1
    renamed = (quantity_value(node.allocatable.get(SHARED_RESOURCE)) or 0) > 0
    suffixed = (labels.get(PRODUCT_LABEL) or "").endswith(SHARED_PRODUCT_SUFFIX)
    if strategy in ("time-slicing", "mps"):
        return GpuSharing(strategy, max(replicas, 1), f"k8s:node/labels/{SHARING_STRATEGY_LABEL}")
    if replicas > 1 or renamed or suffixed:
        # an older GFD without the strategy label: replicas > 1 means time-slicing
        source = (
            f"k8s:node/labels/{REPLICAS_LABEL}"
            if replicas > 1
            else "k8s:node/status.allocatable"
            if renamed
            else f"k8s:node/labels/{PRODUCT_LABEL}"
        )
        return GpuSharing("time-slicing", max(replicas, 1), source)
    return NOT_SHARED


def process_origin(cgroup_path: str | None) -> tuple[str, str, str]:
    """Where a process outside pods runs, from its cgroup: (origin, unit, user id).

    ``login_session``: ``user.slice/user-UID.slice/session-N.scope`` (someone's SSH or
    console session); ``user_service``: another unit under ``user-UID.slice``;
    ``system_unit``: ``system.slice/x.service``; ``stale_pod``: a kubepods scope whose pod is
    gone; ``""`` unknown (the root cgroup, or no cgroup read)."""
    parts = [p for p in (cgroup_path or "").split("/") if p and p not in (".", "..")]
    leaf = parts[-1] if parts else ""
    user = next(
        (
            p[len("user-") : -len(".slice")]
            for p in parts
            if p.startswith("user-") and p.endswith(".slice")
        ),
        "",
    )
    if user and leaf.startswith("session-") and leaf.endswith(".scope"):
        return ("login_session", leaf, user)
    if user:
        return ("user_service", leaf, user)
    if any(p.startswith("kubepods") for p in parts):
        return ("stale_pod", leaf, "")
    if parts and parts[0] == "system.slice":
        return ("system_unit", leaf, "")
    return ("", leaf, "")
