"""The diagnose use case, the same for every surface: one cluster view, the diagnostic Job
(with the node's Prometheus history fetched alongside), the analysis.

Two presenters use it: ``bot.services.diagnose.DiagnoseService`` posts the result into the
node's incident thread (Slack's ``/gpunode diagnose``, ``@gpunode diagnose``, alerts, the
re-diagnosis after an action) and ``bot.cli.diagnose`` prints it in a terminal (text,
Markdown, JSON or Block Kit). Both parse the command with ``bot.core.commands.parse``.

Each diagnosis reads the cluster once: ``read_view`` builds the view (and answers an unknown
node with ``NotFoundError`` before anything else happens), and the Job reuses the view's node
instead of reading it again (``KubePort.run_diagnostic(node, known=view.node)``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.core.analysis import analyze
from bot.core.cluster import ClusterView
from bot.core.evidence import EvidenceBundle
from bot.core.findings import Diagnosis
from bot.core.thresholds import Thresholds
from bot.services.history import HistoryService, attach
from bot.services.ports import KubePort


@dataclass(frozen=True)
class Diagnosed:
    """What one diagnosis saw and concluded."""

    view: ClusterView
    bundle: EvidenceBundle
    diagnosis: Diagnosis


async def read_view(kube: KubePort, node: str) -> ClusterView:
    """The node's cluster view, built once per diagnosis. NotFoundError for an unknown node,
    KubeError when the cluster cannot be read: nothing has been started either way."""
    return await kube.get_cluster_view(node)


async def run_diagnosis(
    kube: KubePort,
    view: ClusterView,
    *,
    thresholds: Thresholds,
    clock: Callable[[], datetime],
    history: HistoryService | None = None,
) -> Diagnosed:
    """Run the diagnostic Job on ``view.node`` (Prometheus queried alongside, bounded by its
    own timeout), analyze the evidence against ``view`` and attach the history.

    Raises what the Job raises (``KubeError`` with a reason code, ``TimeoutError``); the
    history query is cancelled then."""
    node = view.node.name
    service = history or HistoryService(None)
    history_task = asyncio.create_task(service.fetch(node, now=clock()))
    try:
        bundle = await kube.run_diagnostic(node, known=view.node)
    except BaseException:
        history_task.cancel()
        raise
    diagnosis = analyze(bundle, view, thresholds=thresholds, now=clock())
    diagnosis = attach(diagnosis, await history_task, bundle=bundle, view=view, now=clock())
    return Diagnosed(view, bundle, diagnosis)
