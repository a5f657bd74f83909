"""The diagnose use-case: one command or alert in, one incident thread with evidence out.

Order of work (each step visible in the thread):
1. read the node's cluster view first, so an unknown node is answered before any incident
   is opened (nothing is created for a typo);
2. open the node's incident or join the open one, post/refresh the root status line;
3. run the diagnostic Job (shared per node by the gateway), analyze, store the snapshot;
4. post evidence, talking points and actions as thread replies; refresh the root line.
A failure at step 3 is posted in the thread with what to do; the incident stays consistent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.analysis import analyze
from bot.core.charts import action_markers, chart_spec
from bot.core.cluster import ClusterView
from bot.core.evidence import EvidenceBundle
from bot.core.findings import Diagnosis
from bot.core.incidents import TimelineEntry
from bot.core.thresholds import Thresholds
from bot.errors import GpunodeError, KubeError, NotFoundError
from bot.render.messages import (
    render_diagnosis_messages,
    render_notice,
    render_root,
    verdict_headline,
)
from bot.render.sentences import sentence
from bot.services.history import HistoryService, attach
from bot.services.ports import ChatPort, KubePort

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DiagnoseOutcome:
    incident_id: str | None
    diagnosis: Diagnosis | None
    view: ClusterView | None
    error: GpunodeError | None = None
    created: bool = False
    bundle: EvidenceBundle | None = None


#: what to do next, by error code (the error's own message says what happened)
WHAT_TO_DO = {
    "image_pull": "Check `kube.image` and that nodes can pull it, then run diagnose again.",
    "not_admitted": "The node refused the Job's pod (taints, quota, admission); check its "
    "events, then run diagnose again.",
    "node_not_ready": "The node is NotReady: check the kubelet first; the collector cannot run.",
    "deadline_exceeded": "The collector did not finish in time; the node may be thrashing. "
    "Run diagnose again, or raise `kube.job_timeout_s`.",
    "evidence_unreadable": "The collector's output could not be read; its pod log has details.",
    "forbidden": "gpunode's service account lacks a permission; apply deploy/ RBAC again.",
    "timeout": "Run diagnose again in a minute; if it keeps timing out, check the API server.",
}
DEFAULT_WHAT_TO_DO = "Run diagnose again; if it keeps failing, check the gpunode logs."

STATE_LABEL = {"investigating": "Investigating", "mitigating": "Mitigating", "resolved": "Resolved"}


class DiagnoseService:
    """Runs diagnoses into incident threads. One instance per process."""

    def __init__(
        self,
        kube: KubePort,
        store: Any,
        chat: ChatPort,
        *,
        clock: Callable[[], datetime],
        thresholds: Thresholds,
        history: HistoryService | None = None,
        charts: bool = True,
    ) -> None:
        self._history = history or HistoryService(None)
        self._charts = charts
        self._kube = kube
        self._store = store
        self._chat = chat
        self._clock = clock
        self._thresholds = thresholds

    async def diagnose(
        self,
        node: str,
        *,
        channel: str,
        user: str,
        alert_fingerprint: str | None = None,
        chart: bool = True,
    ) -> DiagnoseOutcome:
        """``chart=False``: the caller posts the chart itself (the before/after diff does)."""
        try:
            view = await self._kube.get_cluster_view(node)
        except NotFoundError as err:
            known = await self._known_nodes()
            text, blocks = render_notice("node_not_found", node=node, known_nodes=known)
            await self._chat.post_ephemeral(channel, user, text=text, blocks=blocks)
            return DiagnoseOutcome(None, None, None, error=err)
        except KubeError as err:
            text, blocks = render_notice(
                "diagnose_failed", reason=err.message, code=err.code, what_to_do=_what_to_do(err)
            )
            await self._chat.post_ephemeral(channel, user, text=text, blocks=blocks)
            return DiagnoseOutcome(None, None, None, error=err)

        now = self._clock()
        incident, created = await self._store.open_or_join_incident(
            node, channel, opened_by=user, at=now, alert_fingerprint=alert_fingerprint
        )
        thread_ts = await self._ensure_thread(incident)
        await self._note(incident.id, "diagnosis", user, f"diagnose {node} requested")
        if not created:
            text, blocks = render_notice("diagnose_joined", node=node, user=user)
            await self._chat.post(channel, text=text, blocks=blocks, thread_ts=thread_ts)
        await self._refresh_root(incident, progress="Running the diagnostic Job on the node…")

        # Prometheus runs alongside the Job and is bounded by its own short timeout
        history_task = asyncio.create_task(self._history.fetch(node, now=now))
        try:
            bundle = await self._kube.run_diagnostic(node)
            view = await self._kube.get_cluster_view(node)
        except KubeError as err:
            history_task.cancel()
            return await self._report_failure(incident, err, thread_ts)
        except TimeoutError:
            history_task.cancel()
            timeout = KubeError(
                "the diagnostic Job did not report in time; check the node, then retry",
                code="timeout",
            )
            return await self._report_failure(incident, timeout, thread_ts)

        diagnosis = analyze(bundle, view, thresholds=self._thresholds, now=self._clock())
        diagnosis = attach(
            diagnosis, await history_task, bundle=bundle, view=view, now=self._clock()
        )
        await self._store.save_snapshot(
            incident.id,
            at=self._clock(),
            bundle_json=bundle.model_dump_json(),
            view_json=view.model_dump_json(),
            diagnosis_json=diagnosis.model_dump_json(),
        )
        for text, blocks in render_diagnosis_messages(
            diagnosis, incident_id=incident.id, bundle=bundle
        ):
            await self._chat.post(channel, text=text, blocks=blocks, thread_ts=thread_ts)
        if chart:
            await self.upload_chart(incident, diagnosis, bundle, name="memory", thread_ts=thread_ts)
        await self._note(
            incident.id,
            "evidence",
            "gpunode",
            f"verdict: {_verdict_text(diagnosis)}",
            data={"findings": [f.code for f in diagnosis.findings]},
        )
        await self._refresh_root(incident, progress=None, diagnosis=diagnosis)
        return DiagnoseOutcome(incident.id, diagnosis, view, created=created, bundle=bundle)

    async def upload_chart(
        self,
        incident: Any,
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
        if not self._charts or not thread_ts:
            return
        from bot.charts import render_png  # matplotlib loads only when a chart is drawn

        marks = action_markers(await self._store.timeline(incident.id), node=incident.node)
        spec = chart_spec(diagnosis, bundle, actions=marks, earlier=earlier, title=title)
        try:
            png = await asyncio.to_thread(render_png, spec)
        except Exception:  # a drawing bug must not cost the thread its verdict line
            log.exception("chart for %s could not be drawn", incident.id)
            return
        try:
            await self._chat.upload(
                incident.channel,
                thread_ts,
                filename=f"{incident.id}-{name}-{diagnosis.collected_at:%H%M%S}.png",
                title=spec.title,
                content=png,
                alt_txt=f"{spec.title}: host memory by consumer and GPU memory over time",
            )
        except GpunodeError as err:
            log.warning("chart for %s not uploaded: %s", incident.id, err.code)

    async def close(self) -> None:
        """Release the Prometheus client (if any)."""
        await self._history.close()

    async def refresh_root(self, incident_id: str) -> None:
        """Re-render the root status line from the store (after resolve, actions...)."""
        incident = await self._store.get_incident(incident_id)
        if incident is not None:
            await self._refresh_root(incident, progress=None)

    async def _known_nodes(self) -> list[str]:
        try:
            return [n.name for n in await self._kube.list_gpu_nodes()][:20]
        except KubeError:
            return []

    async def _ensure_thread(self, incident: Any) -> str:
        if incident.thread_ts:
            return str(incident.thread_ts)
        text, blocks = self._root(incident, progress="Opening the incident…")
        ts = await self._chat.post(incident.channel, text=text, blocks=blocks, thread_ts=None)
        await self._store.set_incident_thread(incident.id, root_ts=ts)
        # no "opened" entry here: store.open_or_join_incident wrote it with the incident
        return ts

    def _root(
        self, incident: Any, *, progress: str | None, diagnosis: Diagnosis | None = None
    ) -> tuple[str, list[dict[str, Any]]]:
        headline = ""
        if diagnosis is not None:
            headline = verdict_headline(diagnosis)
        return render_root(
            incident_id=incident.id,
            node=incident.node,
            state=STATE_LABEL.get(incident.state, incident.state),
            headline=headline,
            opened_by=incident.opened_by,
            progress=progress,
        )

    async def _refresh_root(
        self, incident: Any, *, progress: str | None, diagnosis: Diagnosis | None = None
    ) -> None:
        fresh = await self._store.get_incident(incident.id)
        if fresh is None or not fresh.thread_ts:
            return
        text, blocks = self._root(fresh, progress=progress, diagnosis=diagnosis)
        await self._chat.update(fresh.channel, fresh.thread_ts, text=text, blocks=blocks)

    async def _report_failure(
        self, incident: Any, err: KubeError, thread_ts: str
    ) -> DiagnoseOutcome:
        text, blocks = render_notice(
            "diagnose_failed", reason=err.message, code=err.code, what_to_do=_what_to_do(err)
        )
        await self._chat.post(incident.channel, text=text, blocks=blocks, thread_ts=thread_ts)
        await self._note(incident.id, "diagnosis", "gpunode", f"diagnosis failed: {err.code}")
        await self._refresh_root(incident, progress=f"Diagnosis failed ({err.code})")
        return DiagnoseOutcome(incident.id, None, None, error=err)

    async def _note(
        self,
        incident_id: str,
        kind: str,
        actor: str,
        text: str,
        *,
        data: dict[str, Any] | None = None,
    ) -> None:
        entry = TimelineEntry(
            incident_id=incident_id,
            at=self._clock(),
            kind=kind,
            actor=actor,
            text=text,
            data=data or {},
        )
        await self._store.append_timeline(entry)


def _verdict_text(diagnosis: Diagnosis) -> str:
    """The verdict as one plain sentence (the timeline export is read by people)."""
    v = diagnosis.verdict
    return sentence("verdicts", v.cause, v.params, fmt="text", subject=v.subject)


def _what_to_do(err: GpunodeError) -> str:
    return WHAT_TO_DO.get(err.code, DEFAULT_WHAT_TO_DO)
