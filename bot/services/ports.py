"""The interfaces the use-cases depend on. ``bot.kube.Gateway`` implements ``KubePort``.

Keeping the use-cases on these Protocols lets tests run them over the real gateway against
the Kubernetes stand-in, or over a fake, without changing a line of the use-case.
"""

from __future__ import annotations

from typing import Protocol

from bot.core.changes import Change, EvictionOutcome
from bot.core.cluster import ClusterView, NodeInfo
from bot.core.evidence import EvidenceBundle


class KubePort(Protocol):
    async def get_cluster_view(self, node: str) -> ClusterView:
        """Node, its non-terminated pods, recent events, allocation. NotFoundError if absent."""

    async def list_gpu_nodes(self) -> list[NodeInfo]:
        """Nodes with nvidia.com/gpu in allocatable."""

    async def run_diagnostic(self, node: str) -> EvidenceBundle:
        """Run the diagnostic Job on ``node``; concurrent calls for one node share one Job.
        Raises DiagnosticJobError with a reason code; never leaves a Job behind."""

    async def cordon(self, node: str, *, dry_run: bool) -> Change: ...

    async def uncordon(self, node: str, *, dry_run: bool) -> Change: ...

    async def evict(self, namespace: str, name: str, *, dry_run: bool) -> EvictionOutcome: ...

    async def ensure_priority_class(
        self, name: str, value: int, *, description: str, dry_run: bool
    ) -> Change: ...

    async def set_priority_class_name(
        self, kind: str, namespace: str, name: str, priority_class: str | None, *, dry_run: bool
    ) -> Change: ...

    async def patch_container_resources(
        self,
        kind: str,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: dict[str, str],
        limits: dict[str, str],
        env: dict[str, str],
        dry_run: bool,
    ) -> Change:
        """Strategic-merge patch of one container in a controller's pod template."""

    async def read_controller(self, kind: str, namespace: str, name: str) -> dict[str, object]:
        """The controller object as JSON (for staleness checks and undo)."""
