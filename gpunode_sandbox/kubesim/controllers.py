"""Controllers: Jobs (see ``jobs``) and the workload controllers (see ``rollouts``:
replacement pods through the scheduler, rollouts per strategy, FailedCreate events).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.jobs import JobRunner
from gpunode_sandbox.kubesim.rollouts import Rollouts

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]


class Controllers(JobRunner, Rollouts):
    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.writing: set[asyncio.Future[Any]] = set()
        sim.api.on_change.append(self._on_change)
        sim.api.terminate = self._terminate

    def _terminate(self, pod: Obj, grace_s: int) -> None:
        """The kubelet's side of a graceful deletion: SIGTERM, then the pod is gone when its
        containers exit (``sim.sigterm_exit_s``) or its grace period ends, whichever first."""
        meta = pod["metadata"]
        delay = min(float(grace_s), self.sim.sigterm_exit_s)
        args = (meta["namespace"], meta["name"], meta["uid"])
        if delay <= 0 or self.loop is None:
            self.sim.api.finish_termination(*args)
        else:
            self.loop.call_later(delay, self.sim.api.finish_termination, *args)

    def _spawn(self, coro: Any) -> None:
        if self.loop is None:
            coro.close()
            return
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def stop(self) -> None:
        tasks = list(self.tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks.clear()
        # host trees still being written in a thread: let them finish before the sim
        # removes its work directory (a cancelled job cannot stop the thread)
        await asyncio.gather(*list(self.writing), return_exceptions=True)

    # ---- dispatch ---------------------------------------------------------------------------
    def _on_change(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        if plural == "jobs" and old is None and new is not None:
            self._spawn(self.run_job(new["metadata"]["namespace"], new["metadata"]["name"]))
        elif plural in ("deployments", "statefulsets", "daemonsets") and new:
            if old is None or (old.get("spec") or {}).get("template") != new["spec"].get(
                "template"
            ):
                self.rollout(plural, new)
        elif plural == "pods" and old is not None and new is None:
            self._replace(old)
        elif plural == "nodes" and old and new and old.get("spec") != new.get("spec"):
            self.retry_pending()  # an uncordon or a removed taint makes room
