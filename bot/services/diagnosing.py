"""The diagnose use case, the same for every surface: the node checked, the diagnostic Job
(with the node's Prometheus history fetched alongside), one cluster view, the analysis.

Two presenters use it: ``bot.services.diagnose.DiagnoseService`` posts the result into the
node's incident thread (Slack's ``/gpunode diagnose``, ``@gpunode diagnose``, alerts, the
re-diagnosis after an action) and ``bot.cli.diagnose`` prints it in a terminal (text,
Markdown, JSON or Block Kit). Both parse the command with ``bot.core.governance.commands.parse``.

Reads per diagnosis: ``check_node`` reads the node (an unknown node is answered before
anything else happens); the Job reuses that read (``run_diagnostic(node, known=...)``); the
cluster view is built once, after the Job, so it shows the pods as the evidence found them
(a rollout that replaced a pod while the Job ran is seen, and no plan targets the old pod);
it reads pod metrics only for the pods the collector did not measure (``measured_pods``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.core.diagnosis.attribution import norm_uid
from bot.core.diagnosis.dcgm import join, needs_dcgm
from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView, NodeInfo
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.thresholds import Thresholds
from bot.services.analysing import Analyst
from bot.services.ports import HistoryPort, KubePort, NoHistory


@dataclass(frozen=True)
class Diagnosed:
    """What one diagnosis saw and concluded."""

    view: ClusterView
    bundle: EvidenceBundle
    diagnosis: Diagnosis


async def check_node(kube: KubePort, node: str) -> NodeInfo:
    """The node as the cluster has it now. NotFoundError for an unknown node, KubeError when
    the cluster cannot be read: nothing has been started either way."""
    return await kube.get_node(node)


def measured_pods(bundle: EvidenceBundle) -> frozenset[str]:
    """Pods whose working set the collector read from their cgroups. The analysis takes that
    figure over the metrics API's (``bot.core.diagnosis.attribution``), so the view does not read
    their metrics: a diagnosis makes no metrics call when the collector saw every pod."""
    return frozenset(
        uid for p in bundle.pods if p.working_set_bytes is not None and (uid := norm_uid(p.pod_uid))
    )


async def run_diagnosis(
    kube: KubePort,
    node: NodeInfo,
    *,
    thresholds: Thresholds,
    clock: Callable[[], datetime],
    history: HistoryPort | None = None,
    analyst: Analyst | None = None,
) -> Diagnosed:
    """Run the diagnostic Job on ``node`` (as ``check_node`` just read it; Prometheus queried
    alongside, bounded by its own timeout), build the cluster view, analyze, attach the
    history. ``analyst``: where the analysis runs (``Analyst``; None: on a thread).

    Raises what the Job or the view raise (``KubeError`` with a reason code,
    ``TimeoutError``); the history query is cancelled then."""
    service: HistoryPort = history or NoHistory()
    history_task = asyncio.create_task(service.fetch(node.name, now=clock()))
    try:
        bundle = await kube.run_diagnostic(node.name, known=node)
        if needs_dcgm(
            bundle, nvidia=node.has_nvidia_gpus
        ):  # no per-pod GPU memory from NVML or the exporter's endpoint
            bundle = join(bundle, await service.pod_gpu_memory(node.name, now=clock()))
        view = await kube.get_cluster_view(node.name, measured=measured_pods(bundle))
    except BaseException:
        history_task.cancel()
        raise
    # the analysis is pure and CPU-bound (150 ms for a 5,000-process node, seconds on a
    # loaded machine): off the event loop, in a process of its own for a long-running bot
    where = analyst or Analyst()
    diagnosis = await where.analyze(bundle, view, thresholds=thresholds, now=clock())
    past = await history_task
    diagnosis = await where.attach(diagnosis, past, bundle=bundle, view=view, now=clock())
    return Diagnosed(view, bundle, diagnosis)
