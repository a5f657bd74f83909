"""The diagnose use case presented in Slack: one command or alert in, one incident thread
with evidence out. The diagnosis itself (view, Job, analysis) is ``bot.services.diagnosing``,
shared with the terminal's ``gpunode diagnose``; this module adds the incident and its thread.

Order of work (each step visible in the thread):
1. read the node first, so an unknown node is answered before any incident is opened
   (nothing is created for a typo);
2. open the node's incident or join the open one; the root message is claimed in the store
   before it is posted, so concurrent diagnoses post one root; a diagnosis already running
   for the incident in this process is joined (and the thread says so), not run twice;
3. run the diagnostic Job (shared per node by the gateway), analyze, store the snapshot;
4. post evidence, talking points and actions as thread replies; refresh the root line.
A failure at step 3 is posted in the thread with what to do; the incident stays consistent.

Many clusters: the service is given the ``ClusterRegistry`` of the clusters served (one
cluster is a registry of one, ``ClusterRegistry.single``); ``diagnose(NodeRef(cluster, node))``
works on that cluster's node, and its incident is that cluster's. A cluster that cannot be
reached is reported by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model import actors
from bot.core.model.cluster import ClusterView, NodeInfo
from bot.core.model.clusters import NodeRef, format_node_ref
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import Incident, TimelineKind
from bot.core.model.thresholds import Thresholds
from bot.core.reporting.charts import action_markers, chart_spec
from bot.core.reporting.links import dashboard_link, incident_window
from bot.core.reporting.outcomes import Diagnosed, RootLine, notice
from bot.core.reporting.postmortem_story import SYMPTOMS
from bot.errors import (
    ClusterUnreachableError,
    GpunodeError,
    KubeError,
    KubeUnavailableError,
    NotFoundError,
    StoreError,
)
from bot.services.analysing import Analyst
from bot.services.clusters import ClusterRegistry
from bot.services.current_state import STATE_KEY, show_state
from bot.services.diagnosing import check_node, run_diagnosis
from bot.services.locales import LocaleChooser
from bot.services.ports import (
    ChatPort,
    FilesPort,
    HistoryPort,
    MetricsPort,
    NoHistory,
    NoMetrics,
    StorePort,
    ThreadPort,
    VerdictWords,
)
from bot.services.recording import append_entry

log = logging.getLogger(__name__)
#: the step the root line shows under way
Progress = Literal["opening", "running_job", "failed"]


@dataclass(frozen=True)
class DiagnoseOutcome:
    incident_id: str | None
    diagnosis: Diagnosis | None
    view: ClusterView | None
    error: GpunodeError | None = None
    created: bool = False
    bundle: EvidenceBundle | None = None


#: a root message is posted in well under a second (a few with Slack's rate-limit retries);
#: a claim this old whose ts never came was left by a crash between claim and post
ROOT_CLAIM_TTL_S = 15.0
#: how long a concurrent diagnose waits for the root another one is posting
ROOT_WAIT_S = 20.0
ROOT_POLL_S = 0.05


@dataclass
class _JoinNote:
    """The one thread note saying requests joined a running diagnosis."""

    task: asyncio.Task[DiagnoseOutcome]
    first: str
    count: int = 1
    ts: str | None = None
    editing: bool = False
    posted: asyncio.Event = field(default_factory=asyncio.Event)


class DiagnoseService:
    """Runs diagnoses into incident threads. One instance per process."""

    def __init__(
        self,
        clusters: ClusterRegistry,
        store: StorePort,
        chat: ChatPort,
        *,
        thread: ThreadPort,
        clock: Callable[[], datetime],
        thresholds: Thresholds,
        replica: str | None = None,
        history: HistoryPort | None = None,
        charts: FilesPort | None = None,
        locales: LocaleChooser | None = None,
        metrics: MetricsPort | None = None,
        dashboard_url: str | None = None,
        verdict_words: VerdictWords | None = None,
        analyst: Analyst | None = None,
    ) -> None:
        #: where each diagnosis is analysed (``bot.services.analysing``; default: threads)
        self.analyst = analyst or Analyst()
        self._metrics: MetricsPort = metrics or NoMetrics()
        #: the verdict as the timeline records it (``bot.render.sentences``, wired at the edge)
        self._verdict_words = verdict_words or _verdict_code
        #: ``links.dashboard_url``: the evidence message links the node's dashboard
        self._dashboard_url = dashboard_url
        self._history: HistoryPort = history or NoHistory()
        #: each message's language: ephemeral ones follow the person, thread posts the thread
        self.locales = locales or LocaleChooser(chat)
        #: where notices go, as outcomes (the presenter picks the language and words them)
        self.thread = thread
        #: where charts go, as specs (the presenter draws them in the thread's language);
        #: None: no chart is drawn (tools, most tests)
        self.charts = charts
        self.clusters = clusters
        self._store = store
        self._chat = chat
        self._clock = clock
        self._thresholds = thresholds
        #: prefix of this process's root claims (``ensure_thread``); unique per replica
        self._replica = replica or f"replica-{secrets.token_hex(4)}"
        self._claims = itertools.count(1)
        #: the diagnosis running per incident in this process; a second one joins it
        self._running: dict[str, asyncio.Task[DiagnoseOutcome]] = {}
        #: the "already running" note of each running diagnosis that requests joined
        self._joins: dict[str, _JoinNote] = {}

    async def diagnose(
        self,
        at: NodeRef,
        *,
        channel: str,
        user: str,
        alert_fingerprint: str | None = None,
        fresh: bool = False,
        chart: bool = True,
        quiet: bool = False,
    ) -> DiagnoseOutcome:
        """Diagnose the node ``at`` (a node in a cluster) into its incident thread.
        A diagnosis already running for the incident in this process is joined, unless
        ``fresh`` (after a change to the cluster, whose effect a diagnosis started before it
        cannot show): then it runs after it. ``chart=False``: the caller posts the chart
        itself (the before/after diff does). ``quiet``: save the new evidence and refresh
        the root, but post no evidence messages (after an action, whose flow posts a compact
        before/after instead: the thread carries the evidence once)."""
        name, node = at.cluster, at.node
        try:
            kube = self.clusters.port(name)
            async with asyncio.timeout(self.clusters.timeout_s(name)):
                checked = await check_node(kube, node)  # an unknown node opens nothing
        except NotFoundError as err:
            known = await self._known_nodes(name)
            told = notice("node_not_found", node=self.label(name, node), known_nodes=known)
            await self.thread.tell(channel, user, told)
            return DiagnoseOutcome(None, None, None, error=err)
        except (KubeError, TimeoutError) as caught:
            failure = _named(caught, name)
            told = notice(
                "diagnose_failed",
                reason=failure.message,
                code=failure.code,
                error_key=failure.key,
                error_params=failure.params,
            )
            await self.thread.tell(channel, user, told)
            return DiagnoseOutcome(None, None, None, error=failure)

        now = self._clock()
        incident, created = await self._store.open_or_join_incident(
            node,
            channel,
            opened_by=user,
            at=now,
            alert_fingerprint=alert_fingerprint,
            cluster=name,
            locale=await self.locales.for_opening(channel, user),
        )
        running = self._running.get(incident.id)
        while fresh and running is not None and not running.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(running)
            running = self._running.get(incident.id)
        if running is None or running.done():
            task = asyncio.create_task(
                self._measured(
                    self._run(
                        incident,
                        checked,
                        channel,
                        created=created,
                        user=user,
                        chart=chart,
                        quiet=quiet,
                    )
                ),
                name=f"diagnosis-{incident.id}",
            )
            self._running[incident.id] = task
            task.add_done_callback(lambda t: self._forget(incident.id, t))
            return await task
        # one diagnosis per incident at a time in this process: join it, and say so in ONE
        # note per running diagnosis, edited as more requests join (100 joins, not 100 posts)
        incident, thread_ts = await self._ensure_thread(incident, channel)
        label = self.label(name, node)
        await self._note(incident.id, "diagnosis", user, f"diagnose {label} requested")
        await self._say_joined(incident, running, label, user, thread_ts)
        joined = await asyncio.shield(running)
        return dataclasses.replace(joined, created=False)

    async def _say_joined(
        self,
        incident: Incident,
        running: asyncio.Task[DiagnoseOutcome],
        label: str,
        user: str,
        thread_ts: str | None,
    ) -> None:
        """The first request joining ``running`` posts the note; later ones count in it (one
        edit for all that joined meanwhile, after the post)."""
        note = self._joins.get(incident.id)
        if note is None or note.task is not running:
            note = self._joins[incident.id] = _JoinNote(running, user)
            told = notice("diagnose_joined_running", node=label, user=user)
            try:
                note.ts = await self.thread.post(
                    incident.channel, told, incident=incident, thread_ts=thread_ts
                )
            finally:
                note.posted.set()
            return
        note.count += 1
        if note.editing:
            return  # the edit under way shows this request too (it loops until current)
        note.editing = True
        try:
            await note.posted.wait()
            shown = 1
            while note.ts is not None and shown != note.count:
                await asyncio.sleep(0)  # let the requests arriving together count first
                shown = note.count
                told = notice(
                    "diagnose_joined_running", node=label, user=note.first, others=shown - 1
                )
                await self.thread.update(incident.channel, note.ts, told, incident=incident)
        except GpunodeError as err:  # the note is a courtesy; the diagnosis goes on
            log.warning("could not update the joined note of %s: %s", incident.id, err)
        finally:
            note.editing = False

    async def _measured(self, run: Awaitable[DiagnoseOutcome]) -> DiagnoseOutcome:
        """Time one diagnosis run into the metrics: ``ok``; ``failed`` with the failure's
        code (the Job, the API); ``error`` when something else broke it (posting, the store);
        ``cancelled`` at shutdown. Joined diagnoses are not counted again."""
        started = time.perf_counter()
        outcome, code = "error", "internal"
        try:
            result = await run
            if result.error is None:
                outcome, code = "ok", "none"
            else:
                outcome, code = "failed", result.error.code
            return result
        except GpunodeError as err:
            code = err.code
            raise
        except asyncio.CancelledError:
            outcome, code = "cancelled", "none"
            raise
        finally:
            self._metrics.diagnosis(
                time.perf_counter() - started, outcome=outcome, failure_code=code
            )

    def _forget(self, incident_id: str, task: asyncio.Task[DiagnoseOutcome]) -> None:
        if self._running.get(incident_id) is task:
            del self._running[incident_id]
        note = self._joins.get(incident_id)
        if note is not None and note.task is task:
            del self._joins[incident_id]

    async def _run(
        self,
        incident: Incident,
        known: NodeInfo,
        channel: str,
        *,
        created: bool,
        user: str,
        chart: bool,
        quiet: bool = False,
    ) -> DiagnoseOutcome:
        # the analysis worker is kept from the Job's start to the chart's upload, then ends
        # (its memory, matplotlib's, is not kept between diagnoses: #25's RSS budget)
        async with self.analyst.held():
            node = known.name
            incident, thread_ts = await self._ensure_thread(incident, channel)
            label = self.label(incident.cluster, node)
            await self._note(incident.id, "diagnosis", user, f"diagnose {label} requested")
            channel = incident.channel
            if not created and not quiet:
                told = notice("diagnose_joined", node=label, user=user)
                await self.thread.post(channel, told, incident=incident, thread_ts=thread_ts)
            # the incident and its thread as _ensure_thread just read them: no second read
            await self._refresh_root(incident, progress="running_job", fresh=incident)

            try:
                done = await run_diagnosis(
                    self.clusters.port(incident.cluster),
                    known,
                    thresholds=self._thresholds,
                    clock=self._clock,
                    history=self._history,
                    analyst=self.analyst,
                )
            except KubeError as err:
                return await self._report_failure(
                    incident, _named(err, incident.cluster), thread_ts
                )
            except TimeoutError:
                timeout = KubeError(
                    "the diagnostic Job did not report in time; check the node, then retry",
                    code="timeout",
                )
                return await self._report_failure(incident, timeout, thread_ts)

            bundle, view, diagnosis = done.bundle, done.view, done.diagnosis
            await self._store.save_snapshot(
                incident.id,
                at=self._clock(),
                bundle=bundle,
                view=view,
                diagnosis=diagnosis,
            )
            diagnosed = Diagnosed(
                incident_id=incident.id,
                diagnosis=diagnosis,
                bundle=bundle,
                dashboard=self._dashboard(incident, diagnosis),
            )
            # after an action (quiet) the state is edited in place; the action says what changed
            state_ts = await show_state(
                self.thread,
                self._chat,
                self._store,
                incident,
                diagnosed,
                thread_ts=thread_ts,
                quiet=quiet,
            )
            if chart:
                await self.upload_chart(
                    incident, diagnosis, bundle, name="memory", thread_ts=thread_ts
                )
            await self._note(
                incident.id,
                "evidence",
                actors.GPUNODE,
                f"verdict: {self._verdict_words(diagnosis)}",
                data={
                    "findings": [f.code for f in diagnosis.findings],
                    STATE_KEY: state_ts,
                    # the verdict as data: the postmortem words it in the thread's language
                    "verdict": {
                        "cause": diagnosis.verdict.cause,
                        "subject": diagnosis.verdict.subject,
                        "params": diagnosis.verdict.params,
                    },
                },
            )
            await self._refresh_root(incident, progress=None, diagnosis=diagnosis)
            return DiagnoseOutcome(incident.id, diagnosis, view, created=created, bundle=bundle)

    def _dashboard(
        self, incident: Incident, diagnosis: Diagnosis
    ) -> tuple[str, datetime, datetime] | None:
        """The node's dashboard for the incident's window (from the first OOM kill or
        eviction in the evidence, or the history's start), when a URL is configured."""
        if self._dashboard_url is None:
            return None
        history = diagnosis.history
        marks = [m.at for m in (history.markers if history else []) if m.kind in SYMPTOMS]
        start, end = incident_window(
            diagnosis.collected_at,
            first_symptom=min(marks) if marks else None,
            history_start=history.start if history and history.source != "snapshot" else None,
        )
        url = dashboard_link(
            self._dashboard_url, node=incident.node, cluster=incident.cluster, start=start, end=end
        )
        return url, start, end

    async def upload_chart(
        self,
        incident: Incident,
        diagnosis: Diagnosis,
        bundle: EvidenceBundle | None,
        *,
        name: str,
        title: str | None = None,
        earlier: Sequence[tuple[Diagnosis, EvidenceBundle | None]] = (),
        thread_ts: str | None = None,
    ) -> None:
        """The diagnosis chart (PNG) into the incident thread, gpunode's actions marked.

        A chart is an illustration of evidence already posted: when it cannot be drawn or
        uploaded the thread says nothing more and the log says why."""
        thread_ts = thread_ts or incident.thread_ts
        if self.charts is None or not thread_ts:
            return
        marks = action_markers(await self._store.timeline(incident.id), node=incident.node)
        spec = chart_spec(diagnosis, bundle, actions=marks, earlier=earlier, title=title)
        # microseconds: two snapshots within one second (an action's before/after) differ
        await self.charts.chart(
            incident, spec, name=f"{name}-{diagnosis.collected_at:%H%M%S%f}", thread_ts=thread_ts
        )

    async def close(self) -> None:
        """Release the Prometheus client (if any) and the analysis process (if any)."""
        await self._history.close()
        await asyncio.to_thread(self.analyst.close)

    async def refresh_root(self, incident_id: str) -> None:
        """Re-render the root status line from the store (after resolve, actions...)."""
        incident = await self._store.get_incident(incident_id)
        if incident is not None:  # as just read: no second read
            await self._refresh_root(incident, progress=None, fresh=incident)

    async def show_root(self, incident: Incident) -> None:
        """Re-render the root status line of ``incident`` as the caller just wrote it (its
        state moved): no read of the store."""
        await self._refresh_root(incident, progress=None, fresh=incident)

    def label(self, cluster: str, node: str) -> str:
        """How messages name a node: ``prod-eu/gpu-node-01`` when gpunode serves several
        clusters, plain ``gpu-node-01`` when it serves one."""
        return format_node_ref(cluster, node, show_cluster=self.clusters.multi)

    async def _known_nodes(self, cluster: str) -> list[str]:
        try:
            async with asyncio.timeout(self.clusters.timeout_s(cluster)):
                nodes = await self.clusters.port(cluster).list_gpu_nodes()
        except (GpunodeError, TimeoutError):
            return []
        return [n.name for n in nodes][:20]

    async def _ensure_thread(self, incident: Incident, channel: str) -> tuple[Incident, str]:
        """The incident and its thread, posting the root first if nobody has. ``incident``
        must be as just read from the store: it is only read again while another caller is
        posting the root (a claim fails only when the thread exists or is being opened).

        Claim, post, fill in the ts: ``store.claim_root`` lets exactly one caller post (on
        any replica); the others wait for its ts. A root that could not be posted releases
        the claim; a claim left by a crash is taken over after ``ROOT_CLAIM_TTL_S``. An
        incident without a thread yet belongs to no channel: it opens in the caller's."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ROOT_WAIT_S
        claimer = f"{self._replica}-{next(self._claims)}"
        fresh = incident  # as the caller just read it (``store.open_or_join_incident``)
        while True:
            if fresh.thread_ts:
                return fresh, str(fresh.thread_ts)
            now = self._clock()
            stale = now - timedelta(seconds=ROOT_CLAIM_TTL_S)
            if await self._store.claim_root(incident.id, claimer, at=now, stale_before=stale):
                return await self._post_root(fresh, channel or fresh.channel, claimer)
            if loop.time() > deadline:
                raise StoreError(
                    f"the thread of {incident.id} is being opened by another diagnose that "
                    "has not finished; run diagnose again in a minute",
                    key="thread_being_opened",
                    params={"incident": incident.id},
                )
            await asyncio.sleep(ROOT_POLL_S)
            fresh = await self._store.get_incident(incident.id) or incident

    async def _post_root(
        self, incident: Incident, channel: str, claimer: str
    ) -> tuple[Incident, str]:
        try:
            ts = await self.thread.post(
                channel, self._root(incident, progress="opening"), incident=incident
            )
        except BaseException:
            await self._store.release_root(incident.id, claimer)
            raise
        # no "opened" entry here: store.open_or_join_incident wrote it with the incident
        stored = await self._store.set_incident_thread(incident.id, root_ts=ts, channel=channel)
        if stored.thread_ts != ts:  # our claim went stale and another caller posted first
            log.warning("incident %s got two roots; %s is not its thread", incident.id, ts)
        return stored, str(stored.thread_ts)

    def _root(
        self,
        incident: Incident,
        *,
        progress: Progress | None,
        diagnosis: Diagnosis | None = None,
        failure_code: str = "",
    ) -> RootLine:
        return RootLine(
            incident_id=incident.id,
            node=self.label(incident.cluster, incident.node),
            state=incident.state,  # the presenter words it
            opened_by=incident.opened_by,
            progress=progress,
            failure_code=failure_code,
            diagnosis=diagnosis,
        )

    async def _refresh_root(
        self,
        incident: Incident,
        *,
        progress: Progress | None,
        diagnosis: Diagnosis | None = None,
        fresh: Incident | None = None,
        failure_code: str = "",
    ) -> None:
        """Re-render the root line; ``fresh``: the incident as just read (else read now)."""
        fresh = fresh or await self._store.get_incident(incident.id)
        if fresh is None or not fresh.thread_ts:
            return
        root = self._root(fresh, progress=progress, diagnosis=diagnosis, failure_code=failure_code)
        await self.thread.update(fresh.channel, fresh.thread_ts, root, incident=fresh)

    async def _report_failure(
        self, incident: Incident, err: KubeError, thread_ts: str
    ) -> DiagnoseOutcome:
        told = notice(
            "diagnose_failed",
            reason=err.message,
            code=err.code,
            error_key=err.key,
            error_params=err.params,
        )
        await self.thread.post(incident.channel, told, incident=incident, thread_ts=thread_ts)
        await self._note(incident.id, "diagnosis", actors.GPUNODE, f"diagnosis failed: {err.code}")
        await self._refresh_root(incident, progress="failed", failure_code=err.code)
        return DiagnoseOutcome(incident.id, None, None, error=err)

    async def _note(
        self,
        incident_id: str,
        kind: TimelineKind,
        actor: str,
        text: str,
        *,
        data: dict[str, Any] | None = None,
    ) -> None:
        await append_entry(self._store, incident_id, kind, actor, text, at=self._clock(), data=data)


def _verdict_code(diagnosis: Diagnosis) -> str:
    """The verdict's cause code: the timeline's record when no words are wired (tools)."""
    return diagnosis.verdict.cause


def _named(err: GpunodeError | TimeoutError, cluster: str) -> KubeError:
    """A cluster that did not answer is named; other errors stay as they are."""
    if isinstance(err, TimeoutError):
        return ClusterUnreachableError(cluster)
    if isinstance(err, KubeUnavailableError) and not isinstance(err, ClusterUnreachableError):
        return ClusterUnreachableError(cluster, cause=err)
    if isinstance(err, KubeError):
        return err
    return KubeError(err.message, code=err.code)
