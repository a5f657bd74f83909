"""The interfaces the use-cases depend on. ``bot.kube.Gateway`` implements ``KubePort``.

Keeping the use-cases on these Protocols lets tests run them over the real gateway against
the Kubernetes stand-in, or over a fake, without changing a line of the use-case.
"""

from __future__ import annotations

from typing import Protocol

from bot.core.changes import Change, EnvValues, EvictionOutcome, ResourceValues
from bot.core.cluster import ClusterView, NodeInfo, NodeLoad
from bot.core.evidence import EvidenceBundle
from bot.core.watching import RolloutProgress


class KubePort(Protocol):
    async def get_cluster_view(self, node: str) -> ClusterView:
        """Node, its non-terminated pods, recent events, allocation. NotFoundError if absent."""

    async def get_node(self, node: str) -> NodeInfo:
        """The node as the API server has it now. NotFoundError if absent."""

    async def list_gpu_nodes(self) -> list[NodeInfo]:
        """Nodes with nvidia.com/gpu in allocatable."""

    async def gpu_node_loads(self) -> list[NodeLoad]:
        """Every GPU node's allocation and measured working set, in one pass over the fleet."""

    async def run_diagnostic(self, node: str, *, known: NodeInfo | None = None) -> EvidenceBundle:
        """Run the diagnostic Job on ``node``; concurrent calls for one node share one Job.
        ``known``: the node as the caller just read it (``get_node``), so the Job's
        readiness and GPU checks do not read it again; None: read it first.
        Raises DiagnosticJobError with a reason code; never leaves a Job behind."""

    async def cordon(self, node: str, *, dry_run: bool) -> Change: ...

    async def uncordon(self, node: str, *, dry_run: bool) -> Change: ...

    async def evict(self, namespace: str, name: str, *, dry_run: bool) -> EvictionOutcome: ...

    async def ensure_priority_class(
        self,
        name: str,
        value: int,
        *,
        description: str,
        dry_run: bool,
        preemption_policy: str = "Never",
    ) -> Change:
        """Create the class if missing (``preemptionPolicy`` Never by default: a restarted
        pod waits for room instead of preempting other workloads)."""

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
        requests: ResourceValues,
        limits: ResourceValues,
        env: EnvValues,
        dry_run: bool,
    ) -> Change:
        """Strategic-merge patch of one container in a controller's pod template."""

    async def resize_pod(
        self,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: ResourceValues,
        limits: ResourceValues,
        dry_run: bool,
    ) -> Change:
        """In-place resize of one container through ``pods/<name>/resize`` (1.33+)."""

    async def read_controller(self, kind: str, namespace: str, name: str) -> dict[str, object]:
        """The controller object as JSON (for staleness checks and undo)."""

    async def rollout_progress(
        self, kind: str, namespace: str, name: str, *, since: str = ""
    ) -> RolloutProgress:
        """Where the controller's rollout stands: its pods, which run the current template,
        and the FailedCreate/FailedScheduling events since ``since`` (RFC 3339)."""

    async def resize_progress(self, namespace: str, name: str, container: str) -> RolloutProgress:
        """An in-place resize as a one-pod rollout: current once the kubelet actuated it."""

    async def pods_present(self, pods: list[tuple[str, str, str]]) -> list[str]:
        """Of (namespace, name, uid), the "namespace/name" keys of those still there (same
        uid: a pod recreated under the same name is a new pod)."""


class ChatPort(Protocol):
    """What the use-cases need from the chat surface (``bot.slack.chatting.SlackChat``).

    Blocks are plain Block Kit dicts already within Slack's limits (``bot.render``).
    Every method raises ``SlackError`` after the client's own rate-limit retries.
    """

    async def post(
        self, channel: str, *, text: str, blocks: list[dict[str, object]], thread_ts: str | None
    ) -> str:
        """Post a message (a thread reply when ``thread_ts``); return its ts."""

    async def update(
        self, channel: str, ts: str, *, text: str, blocks: list[dict[str, object]]
    ) -> None: ...

    async def post_ephemeral(
        self,
        channel: str,
        user: str,
        *,
        text: str,
        blocks: list[dict[str, object]],
        thread_ts: str | None = None,
    ) -> None: ...

    async def upload(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        filename: str,
        title: str,
        content: str | bytes,
        alt_txt: str | None = None,
    ) -> None:
        """Share a file (text or bytes, e.g. a PNG chart) into the channel or thread."""

    async def upload_files(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        files: list[tuple[str, str, str]],
        comment: str,
    ) -> None:
        """Share several text files, given as ``(filename, title, content)``, as one message
        with ``comment`` as its text (one ``files.completeUploadExternal``)."""

    async def open_view(self, trigger_id: str, view: dict[str, object]) -> str:
        """Open a modal; return its view id."""

    async def usergroup_members(self, usergroup_id: str) -> list[str]: ...

    async def user_name(self, user_id: str) -> str:
        """A person's display name (``users.info``); the id itself when it cannot be read."""

    async def user_locale(self, user_id: str) -> str | None:
        """A person's Slack locale as Slack spells it (``zh-CN``, ``en-US``), from
        ``users.info`` with ``include_locale``; None when it cannot be read."""
