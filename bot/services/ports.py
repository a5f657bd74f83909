"""The interfaces the use-cases depend on. ``bot.kube.Gateway`` implements ``KubePort``,
``bot.slack.chatting.SlackChat`` ``ChatPort``, ``bot.store.Store`` ``StorePort``, and
``bot.slack.presenter.SlackPresenter`` ``ThreadPort`` and ``FilesPort``: the use cases hand
it outcomes (``bot.core.reporting.outcomes``), chart specs and postmortem drafts, and it picks the
reader's language, words, draws and renders them. ``bot.prom.history.HistoryService``
implements ``HistoryPort`` (``NoHistory`` without Prometheus), and
``bot.telemetry.metrics.Metrics`` ``MetricsPort`` (``NoMetrics`` counts nothing). The
timeline's verdict sentence is a ``VerdictWords`` wired at the edge
(``bot.wiring.runtime.verdict_sentence``).

Keeping the use-cases on these Protocols lets tests run them over the real gateway against
the Kubernetes stand-in, or over a fake, without changing a line of the use-case. Every
implementation, real or fake, is checked against its port by mypy and at run time
(``tests/contract/test_ports_conform.py``); ``tests/contract/test_kube_port.py`` runs the
same cases over the fake and the real Kubernetes port.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from bot.core.diagnosis.dcgm import DcgmAttempt
from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.history import History
from bot.core.governance.approvals import ApprovalRequest
from bot.core.governance.impersonation import ActingAs
from bot.core.model.changes import Change, EnvValues, EvictionOutcome, ResourceValues
from bot.core.model.cluster import ClusterView, NodeInfo, NodeLoad
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import Incident, IncidentState, TimelineEntry, TimelineRow
from bot.core.remedies.prevention import KitSource, PreventionParams
from bot.core.remedies.watching import RolloutProgress
from bot.core.reporting.charts import ChartSpec
from bot.core.reporting.home import HomeSummary
from bot.core.reporting.outcomes import ActionForm, Diagnosed, Told
from bot.core.reporting.postmortem import Postmortem
from bot.core.reporting.records import (
    ActionRecord,
    ActionState,
    AuditRecord,
    ChainReport,
    EvidenceSnapshot,
)
from bot.core.reporting.state_change import StateChange

T = TypeVar("T")


class KubePort(Protocol):
    @property
    def cluster_name(self) -> str:
        """How reports name this cluster when it is the only one: the kubeconfig context,
        else the API server URL ('' when nothing names it)."""

    async def get_cluster_view(
        self, node: str, *, measured: frozenset[str] = frozenset()
    ) -> ClusterView:
        """Node, its non-terminated pods, recent events, allocation. NotFoundError if absent.
        ``measured``: UIDs of pods the evidence already measured; their metrics are not read."""

    async def get_node(self, node: str) -> NodeInfo:
        """The node as the API server has it now. NotFoundError if absent."""

    async def list_gpu_nodes(self) -> list[NodeInfo]:
        """GPU nodes by the one definition (``NodeInfo.has_gpus``: accelerator resources,
        MIG slices, AMD, DRA ResourceSlices of a GPU driver)."""

    async def gpu_node_loads(self) -> list[NodeLoad]:
        """Every GPU node's allocation and measured working set, in one pass over the fleet."""

    async def run_diagnostic(self, node: str, *, known: NodeInfo | None = None) -> EvidenceBundle:
        """Run the diagnostic Job on ``node``; concurrent calls for one node share one Job.
        ``known``: the node as the caller just read it (``get_node``), so the Job's
        readiness and GPU checks do not read it again; None: read it first.
        Raises DiagnosticJobError with a reason code; never leaves a Job behind."""

    async def cordon(self, node: str, *, dry_run: bool) -> Change: ...

    async def uncordon(self, node: str, *, dry_run: bool) -> Change: ...

    async def annotate_node(
        self, node: str, annotations: dict[str, str | None], *, dry_run: bool
    ) -> Change:
        """Set (None: remove) the node's scale-down protection annotations; ``before``
        holds each key's previous value (``bot.core.remedies.autoscalers``)."""

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

    async def read_target(self, kind: str, namespace: str, name: str) -> dict[str, object] | None:
        """A remedy step's object as it is now (node, pod, PriorityClass or controller JSON;
        None when it does not exist): the re-read after a write that got no answer."""

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

    def impersonating(self, acting: ActingAs) -> KubePort:
        """This port, acting as ``acting`` (impersonation, issue 21 §2): the cluster's RBAC
        decides each call, and a refusal says who may not do what
        (``ForbiddenError`` with code ``cluster_refused``)."""


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

    async def publish_home(self, user: str, view: dict[str, object]) -> None:
        """``views.publish``: ``view`` becomes ``user``'s Home tab."""

    async def pin(self, channel: str, ts: str) -> None:
        """Pin message ``ts`` in ``channel`` (``pins.add``; already pinned is not an error)."""

    async def usergroup_members(self, usergroup_id: str) -> list[str]: ...

    async def user_name(self, user_id: str) -> str:
        """A person's display name (``users.info``); the id itself when it cannot be read."""

    async def user_locale(self, user_id: str) -> str | None:
        """A person's Slack locale as Slack spells it (``zh-CN``, ``en-US``), from
        ``users.info`` with ``include_locale``; None when it cannot be read."""


class ThreadPort(Protocol):
    """Where the use cases put what they have to say: outcomes, never words. The presenter
    of the surface (``bot.slack.presenter``) chooses the language (``bot.core.model.locales``):
    the person's for ``tell``, the incident thread's for a post in it, else the channel's.
    Every method raises ``SlackError`` (after the client's own retries), as ``ChatPort``."""

    async def tell(
        self, channel: str, user: str, told: Told, *, thread_ts: str | None = None
    ) -> None:
        """Only ``user`` sees it (ephemeral), in their language."""

    async def post(
        self,
        channel: str,
        told: Told,
        *,
        incident: Incident | None = None,
        thread_ts: str | None = None,
    ) -> str:
        """Post into ``thread_ts`` (a reply; default: the incident's thread) or the channel,
        in the incident thread's language (without one: the channel's); its ts (of a
        ``Diagnosed``, which posts several messages: the first one's)."""

    async def update(
        self, channel: str, ts: str, told: Told, *, incident: Incident | None = None
    ) -> None:
        """Replace message ``ts`` with ``told`` (the thread's language, as ``post``)."""

    async def show(self, trigger_id: str, channel: str, user: str, form: ActionForm) -> None:
        """Open ``form`` for ``user`` (a modal, in their language) on the click that
        carried ``trigger_id``."""

    async def show_home(self, user: str, home: HomeSummary) -> None:
        """Publish ``home`` as ``user``'s Home tab, in their language."""

    async def show_state(
        self,
        channel: str,
        told: Diagnosed,
        *,
        incident: Incident,
        thread_ts: str | None = None,
        replace: Sequence[str] = (),
        change: StateChange | None = None,
    ) -> list[str]:
        """The incident's current state: ``told``'s messages posted in the thread, or
        written over the messages ``replace`` (their ts; a message left over says it was
        merged), then ``change`` as one line when given. The ts of the state's messages."""


class ActionMetrics(Protocol):
    """Where the action flow counts its decisions (``bot.telemetry.metrics.Metrics``)."""

    def action(self, *, tier: int | str, step: str, outcome: str) -> None:
        """One audited decision of an action: its tier, step and decision."""


class NoActionMetrics:
    """Counts nothing: the action flow without a metrics registry (tests, the CLI)."""

    def action(self, *, tier: int | str, step: str, outcome: str) -> None:
        return None


class FilesPort(Protocol):
    """Where the use cases put what is shared as files, as data, never drawn or worded: a
    chart (``ChartSpec``, ``bot.core.reporting.charts``), the postmortem draft, the prevention kit's
    parameters. The presenter (``bot.slack.presenter.SlackPresenter``) draws
    (``bot.charts``) and renders (``bot.render``) them in the reader's language and uploads
    them. A chart only illustrates evidence already posted: when it cannot be drawn or
    shared, the presenter logs why and the thread says nothing more."""

    async def chart(
        self, incident: Incident, spec: ChartSpec, *, name: str, thread_ts: str | None = None
    ) -> None:
        """Draw ``spec`` in the thread's language and share it into ``thread_ts`` (default:
        the incident's thread); ``name`` tells the file apart (``memory``, ``after``...)."""

    async def postmortem(
        self, incident: Incident, draft: Postmortem, charts: dict[str, ChartSpec]
    ) -> list[str]:
        """Share the postmortem draft into the incident thread, in its language: the charts
        (``start``/``end``), the Markdown and the HTML; the names of the files shared.
        Raises ``SlackError`` as ``ChatPort.upload``."""

    async def kit(
        self,
        channel: str,
        user: str,
        params: PreventionParams,
        source: KitSource,
        *,
        incident: Incident | None = None,
    ) -> list[str]:
        """Share the prevention kit: its explanation (one line per value), then its files
        in one upload; into ``incident``'s thread in its language, else into ``channel`` in
        the channel's language, else ``user``'s. The names of the files shared."""


class MetricsPort(Protocol):
    """What the use cases count (``bot.telemetry.metrics.Metrics`` serves them on
    ``/metrics``; ``NoMetrics`` counts nothing)."""

    def command(self, command: str, outcome: str) -> None: ...

    def diagnosis(self, duration_s: float, *, outcome: str, failure_code: str = "none") -> None:
        """One diagnosis run ended: ``ok``, ``failed`` (with its code), ``error``,
        ``cancelled``."""

    def action(self, *, tier: int | str, step: str, outcome: str) -> None: ...


class NoMetrics:
    """A ``MetricsPort`` that counts nothing (tools and tests that serve no ``/metrics``)."""

    def command(self, command: str, outcome: str) -> None:
        pass

    def diagnosis(self, duration_s: float, *, outcome: str, failure_code: str = "none") -> None:
        pass

    def action(self, *, tier: int | str, step: str, outcome: str) -> None:
        pass


class HistoryPort(Protocol):
    """The node's recent history from metrics (``bot.prom.history.HistoryService`` reads
    Prometheus; ``NoHistory`` when none is configured). Never raises for Prometheus: what
    it cannot read is a gap in the answer."""

    async def fetch(self, node: str, *, now: datetime) -> History | None:
        """Every series and marker of the window ending ``now``, within the deadline;
        None when there is no metrics source."""

    async def pod_gpu_memory(self, node: str, *, now: datetime) -> DcgmAttempt:
        """dcgm-exporter's latest per-pod GPU memory on ``node``, or why there is none."""

    async def close(self) -> None: ...


class NoHistory:
    """A ``HistoryPort`` without a metrics source: no history, and says so for GPU memory."""

    async def fetch(self, node: str, *, now: datetime) -> History | None:
        return None

    async def pod_gpu_memory(self, node: str, *, now: datetime) -> DcgmAttempt:
        return DcgmAttempt(
            "Prometheus",
            failure="not asked: prometheus.url is not set",
            via="prometheus",
            code="prometheus_not_set",
        )

    async def close(self) -> None:
        pass


class VerdictWords(Protocol):
    """The verdict as one plain sentence for the incident's timeline record (the record
    is kept in the operators' language, English; ``bot.render.sentences`` words it, wired
    at the edge)."""

    def __call__(self, diagnosis: Diagnosis) -> str: ...


class StorePort(Protocol):
    """What the use-cases need from the incident store (``bot.store.Store``, SQLite today).

    Engine-neutral: rows are the models of ``bot.core.reporting.records`` and the core; times are
    timezone-aware and passed in (the store never reads the clock). Claims
    (``claim_root``, ``claim_action``, ``claim_undo``) and ``update_approval`` are atomic
    across every replica sharing the store: exactly one caller wins. Failures of the engine
    raise ``StoreError``; a missing row is ``None`` (or ``False`` for an update)."""

    # incidents and their timeline ---------------------------------------------------------

    async def open_or_join_incident(
        self,
        node: str,
        channel: str,
        *,
        opened_by: str,
        at: datetime,
        alert_fingerprint: str | None = None,
        cluster: str,
        locale: str,
    ) -> tuple[Incident, bool]:
        """The node's open incident in ``cluster`` (created=False) or a new one
        (created=True), whose "opened" timeline entry is written with it; a new one keeps
        ``locale`` as its thread's language."""

    async def adopt_unclustered(self, cluster: str) -> int:
        """Give incidents, timeline entries and actions recorded before clusters existed
        to ``cluster`` (the default one); how many incidents."""

    async def claim_root(
        self, incident_id: str, claimer: str, *, at: datetime, stale_before: datetime
    ) -> bool:
        """True for exactly one caller, who posts the root and then ``set_incident_thread``;
        a claim older than ``stale_before`` may be taken over."""

    async def release_root(self, incident_id: str, claimer: str) -> None: ...

    async def set_incident_thread(
        self, incident_id: str, *, root_ts: str, channel: str | None = None
    ) -> Incident: ...

    async def set_incident_state(
        self,
        incident_id: str,
        state: IncidentState,
        *,
        at: datetime,
        actor: str = ...,
        note: str = "",
    ) -> tuple[Incident, TimelineEntry | None]:
        """Apply the core transition (IncidentStateError when not allowed) and record it."""

    async def get_incident(self, incident_id: str) -> Incident | None: ...

    async def find_incident_by_thread(self, channel: str, thread_ts: str) -> Incident | None: ...

    async def open_incidents(
        self, node: str | None = None, cluster: str | None = None
    ) -> list[Incident]:
        """Open incidents (of ``node``; in ``cluster``, or in any when None), oldest first;
        may lag another replica's writes by a moment (a status listing, not a decision)."""

    async def recent_incidents(self, limit: int) -> list[Incident]:
        """The ``limit`` newest incidents, open or resolved, newest first."""

    async def append_timeline(self, entry: TimelineEntry) -> int:
        """Append one entry, kept with its incident's cluster (``TimelineRow``); returns its
        sequence number."""

    async def timeline(self, incident_id: str) -> list[TimelineRow]: ...

    async def state_messages(self, incident_id: str) -> list[str]:
        """The ts of the incident's pinned current-state messages ([] when none yet)."""

    async def set_state_messages(self, incident_id: str, state_ts: list[str]) -> None:
        """Keep ``state_ts`` as the incident's current-state messages."""

    async def save_snapshot(
        self,
        incident_id: str,
        *,
        at: datetime,
        bundle: EvidenceBundle,
        view: ClusterView,
        diagnosis: Diagnosis,
    ) -> str:
        """Store one evidence capture; returns its sha256 (shown in the thread)."""

    async def snapshots(self, incident_id: str) -> list[EvidenceSnapshot]:
        """Every evidence capture of the incident, oldest first (for before/after diffs)."""

    async def latest_snapshot(self, incident_id: str) -> EvidenceSnapshot | None: ...

    # actions and approvals ----------------------------------------------------------------

    async def create_action(self, record: ActionRecord) -> None: ...

    async def get_action(self, action_id: str) -> ActionRecord | None: ...

    async def claim_action(self, action_id: str, replica_id: str, *, at: datetime) -> bool:
        """True for exactly one caller across threads, connections and processes."""

    async def claim_undo(self, action_id: str, replica_id: str, *, at: datetime) -> bool:
        """True for exactly one caller: the undo of a succeeded action runs once."""

    async def set_action_state(
        self,
        action_id: str,
        state: ActionState,
        *,
        at: datetime,
        result: dict[str, object] | None = None,
    ) -> bool:
        """Move the action along ``ACTION_TRANSITIONS``; False when not allowed from its
        state (or no such action). ``result`` replaces the stored result."""

    async def set_action_message(self, action_id: str, message_ts: str) -> None: ...

    async def note_action(self, action_id: str, values: dict[str, object]) -> bool:
        """Merge ``values`` into the action's result without changing its state."""

    async def actions_for_incident(self, incident_id: str) -> list[ActionRecord]: ...

    async def interrupted_actions(
        self, *, orphaned_before: datetime | None = None
    ) -> list[ActionRecord]:
        """Actions left ``claimed`` or ``running`` (a replica died mid-way); with
        ``orphaned_before``, only those of replicas not alive since then."""

    async def beat(self, replica_id: str, *, at: datetime) -> None:
        """Record that ``replica_id`` is alive."""

    async def live_replicas(self, since: datetime) -> list[str]:
        """Replicas that said they were alive at or after ``since``."""

    async def save_approval(self, req: ApprovalRequest) -> None: ...

    async def get_approval(self, approval_id: str) -> ApprovalRequest | None: ...

    async def approval_for_action(self, action_id: str) -> ApprovalRequest | None: ...

    async def pending_approvals(self) -> list[ApprovalRequest]: ...

    async def update_approval(
        self, approval_id: str, change: Callable[[ApprovalRequest], tuple[ApprovalRequest, T]]
    ) -> tuple[ApprovalRequest, T]:
        """Apply a pure change atomically: read, change, write in one write transaction."""

    # dedupe and audit ---------------------------------------------------------------------

    async def remember_event(self, key: str, *, at: datetime) -> bool:
        """True the first time ``key`` is seen (Slack retries and double clicks get False)."""

    async def seen_event(self, key: str) -> bool:
        """Whether ``remember_event(key)`` happened already (no replication lag)."""

    async def append_audit(self, record: AuditRecord) -> int:
        """Append one audit row (rows can never be changed or deleted); returns its id."""

    async def verify_audit(self) -> ChainReport:
        """Check the audit hash chain; the first bad row and why, or how many rows hold."""

    async def audit_since(self, since: datetime | None = None) -> list[AuditRecord]: ...
