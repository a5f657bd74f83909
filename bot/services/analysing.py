"""``Analyst``: where a diagnosis's analysis runs, on the bot's interpreter or beside it.

The analysis (``bot.core.reporting.analysis.analyze``, then the history's
``bot.core.diagnosis.rules.growth.attach``) is pure and CPU-bound: 50 ms of CPU for a
real-size bundle, 150 ms for a 5,000-process node. On a thread it still holds the bot's
interpreter lock while it runs, and the event loop (the acks Slack waits for) waits behind it:
issue #25 measured 235 ms stalls of the loop on a loaded machine. ``Analyst(process=True)``
or ``Analyst(offload=...)`` (``gpunode serve``: the worker its charts are drawn in too) runs
both in a worker process (``bot.offloading.Offloader``, started by the first analysis), so
the bot only pickles the evidence out and the diagnosis back. The worker calls the same pure
functions, so the diagnosis is the same as on a thread.

One worker, its calls answered in order (the diagnoses in flight are bounded by the service;
one core's worth of analysis is what a 2-core node can spare). A worker that exits fails only
the analyses in flight there: each is computed again on a thread, with the reason logged, and
the next starts another worker; where no process can be started at all, every analysis runs
on a thread from then on. ``process=False`` (one-shot commands, tests): always a thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.history import History
from bot.core.diagnosis.rules.growth import attach
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.thresholds import Thresholds
from bot.core.reporting.analysis import analyze
from bot.offloading import Offloader


class Analyst:
    """``analyze`` and ``attach`` through an ``Offloader`` (its own unless given: the bot
    shares one worker between its analyses and its charts). ``close`` ends it, unless
    ``close_offload`` is false: a worker its giver keeps beyond this analyst (the test
    suite's demos share one a process)."""

    def __init__(
        self,
        *,
        process: bool = False,
        offload: Offloader | None = None,
        close_offload: bool = True,
    ) -> None:
        self.offload = offload or Offloader(process=process, name="analysis")
        self._close_offload = close_offload

    @property
    def pid(self) -> int | None:
        """The worker process's id, or None when none runs (none started yet, or it exited)."""
        return self.offload.pid

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """The worker kept for a diagnosis (started now, its imports overlapping the Job's
        wait) and ended once no diagnosis holds it (``Offloader.held``)."""
        async with self.offload.held():
            yield

    async def analyze(
        self, bundle: EvidenceBundle, view: ClusterView, *, thresholds: Thresholds, now: datetime
    ) -> Diagnosis:
        """``analyze(bundle, view, thresholds=, now=)``, in the worker where there is one."""
        return await self.offload.run(analyze, bundle, view, thresholds=thresholds, now=now)

    async def attach(
        self,
        diagnosis: Diagnosis,
        past: History | None,
        *,
        bundle: EvidenceBundle,
        view: ClusterView,
        now: datetime,
    ) -> Diagnosis:
        """``attach(diagnosis, past, bundle=, view=, now=)``: the history's findings."""
        return await self.offload.run(attach, diagnosis, past, bundle=bundle, view=view, now=now)

    def close(self) -> None:
        """End the worker (what it was computing is dropped); later analyses run on threads.
        A worker given with ``close_offload=False`` is left to its giver."""
        if self._close_offload:
            self.offload.close()
