"""The job controller: a diagnostic Job's pod runs the REAL collector on a generated host tree.

A Job whose pod template sets ``spec.nodeName`` gets one pod on that node (labels and an
ownerReference to the Job): Pending -> Running -> Succeeded/Failed in steps of ``sim.step_s``.
While Running, ``python -m bot collect --root TREE [--fake-nvml SPEC] --node-name N --format
json`` runs as a subprocess against a host tree generated now from the scenario; its stdout
becomes the pod log. ``activeDeadlineSeconds`` -> Job Failed, reason DeadlineExceeded (pod
removed); exhausted ``backoffLimit`` -> BackoffLimitExceeded; ``ttlSecondsAfterFinished``
deletes the Job and its pods.

A pod the API server refuses (``admission.py``) is a ``FailedCreate`` event on the Job
("Error creating: ..."), retried until the deadline, as the real Job controller does. The
node's kubelet admits the bound pod first (``kubelet.py``); a refused pod is Failed with its
reason, "Pod was rejected: ..." and a pod event. What the collector reads follows the pod's
spec (``podview.py``: NVML, ptrace rights, hostname).

Diagnostic modes per node (``sim.diagnostic_mode[node] = MODE``, or a scenario fault):
``ok``; ``image_pull`` (Pending, ErrImagePull then ImagePullBackOff); ``container_error``
(Pending, CreateContainerError); ``not_admitted`` (pod Failed, reason OutOfmemory, whatever
the node holds); ``never_started`` (Pending until the deadline; also for an unknown node);
``hang`` (Running, the collector never ends, until the deadline); ``crash`` (exit code 1);
``bad_log`` (Succeeded, the log is not JSON); ``old_schema`` (Succeeded, the bundle says
schema_version "0.9"). An image ending in ``:bad`` behaves like ``image_pull``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import kubelet, pods, podview, recorder, stamps
from gpunode_sandbox.kubesim.crud import now_iso
from gpunode_sandbox.kubesim.resources import STORED
from gpunode_sandbox.kubesim.statuses import ApiError

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
COLLECTOR_TIMEOUT_S = 120
MODES = (
    "ok",
    "image_pull",
    "container_error",
    "not_admitted",
    "never_started",
    "hang",
    "crash",
    "bad_log",
    "old_schema",
)
FAULT_MODES = {
    "image_pull": "image_pull",
    "container_error": "container_error",
    "collector_error": "crash",
    "job_hang": "never_started",
    "collector_slow": "hang",
}


class JobRunner:
    """Mixin of :class:`~gpunode_sandbox.kubesim.controllers.Controllers`: the Job side."""

    sim: KubeSim
    writing: set[asyncio.Future[Any]]

    def _spawn(self, coro: Any) -> None:
        raise NotImplementedError

    # ---- job controller --------------------------------------------------------------------
    def _job_status(self, ns: str, name: str, status: Obj) -> None:
        job = self.sim.api.store.get("jobs", ns, name)
        if job is None:
            return
        job = copy.deepcopy(job)
        job["status"] = status
        self.sim.api.store.put("jobs", job)

    def _pod_status(self, ns: str, name: str, status: Obj) -> bool:
        pod = self.sim.api.store.get("pods", ns, name)
        if pod is None:
            return False
        pod = copy.deepcopy(pod)
        pod["status"] = status
        self.sim.api.store.put("pods", pod)
        return True

    def mode(self, node: str) -> str:
        """The diagnostic mode for ``node``: ``sim.diagnostic_mode`` first, then faults."""
        if node in self.sim.diagnostic_mode:
            return self.sim.diagnostic_mode[node]
        for f in self.sim.scenario.faults:
            if f.node in (None, node):
                return FAULT_MODES[f.kind]
        return "ok"

    async def run_job(self, ns: str, name: str) -> None:
        sim, step = self.sim, self.sim.step_s
        job = sim.api.store.get("jobs", ns, name)
        if job is None:
            return
        spec = job["spec"]
        tmpl = spec["template"]
        node = (tmpl.get("spec") or {}).get("nodeName") or ""
        start = now_iso()
        loop = asyncio.get_running_loop()
        deadline = spec.get("activeDeadlineSeconds")
        t_end = loop.time() + deadline if deadline else None
        failures, backoff = 0, int(spec.get("backoffLimit", 6))
        self._job_status(
            ns,
            name,
            {
                "startTime": start,
                "active": 1,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
            },
        )
        while True:
            if sim.api.store.get("jobs", ns, name) is None:
                return  # deleted while retrying: the controller forgets it
            pod_name = f"{name}-{stamps.suffix(name, str(failures), now_iso())}"
            pod = pods.pod_from_template(tmpl, name=pod_name, namespace=ns, node=None, owner=job)
            pod["metadata"].pop("uid")
            pod["metadata"]["labels"] = {**pod["metadata"]["labels"]}
            try:
                created = sim.api.create(STORED["pods"], ns, pod)
            except ApiError as err:
                recorder.record(
                    sim.api,
                    job,
                    "FailedCreate",
                    f"Error creating: {err.message}",
                    component="job-controller",
                )
                if t_end is not None and loop.time() >= t_end:
                    self._finish(
                        ns,
                        name,
                        start,
                        ok=False,
                        reason="DeadlineExceeded",
                        message="Job was active longer than specified deadline",
                    )
                    return
                # the controller retries with backoff (10s, 20s, ... in a real cluster)
                wait = step * 4
                if t_end is not None:
                    wait = min(wait, max(0.0, t_end - loop.time()))
                await asyncio.sleep(wait)
                continue
            outcome = await self._run_pod(created, node, t_end)
            if outcome == "ok":
                self._finish(ns, name, start, ok=True)
                return
            if outcome == "deadline":
                sim.api.store.remove("pods", ns, pod_name)
                sim.logs.pop((ns, pod_name), None)
                self._finish(
                    ns,
                    name,
                    start,
                    ok=False,
                    reason="DeadlineExceeded",
                    message="Job was active longer than specified deadline",
                )
                return
            failures += 1
            if failures > backoff:
                self._finish(
                    ns,
                    name,
                    start,
                    ok=False,
                    reason="BackoffLimitExceeded",
                    message="Job has reached the specified backoff limit",
                    failed=failures,
                )
                return
            await asyncio.sleep(step)

    async def _wait_until(self, t_end: float | None) -> str:
        """Stay Pending until the deadline (or forever: until the sim stops)."""
        if t_end is None:
            await asyncio.Event().wait()
        await asyncio.sleep(max(0.0, (t_end or 0.0) - asyncio.get_running_loop().time()))
        return "deadline"

    async def _run_pod(self, pod: Obj, node: str, t_end: float | None) -> str:
        sim, step = self.sim, self.sim.step_s
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        c = pod["spec"]["containers"][0]
        base = pods.running_status(pod, None, phase="Pending", started=stamps.T0, restarts={})
        base["startTime"] = now_iso()
        mode = self.mode(node)
        if sim.api.store.get("nodes", None, node) is None or mode == "never_started":
            base["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": now_iso(),
                    "message": f'node "{node}" not found',
                }
            ]
            self._pod_status(ns, name, base)
            return await self._wait_until(t_end)
        await asyncio.sleep(step)
        verdict = kubelet.admit_bound(sim.api, pod, node)
        if not verdict.admit:
            base.update(
                phase="Failed",
                reason=verdict.reason,
                message=f"Pod was rejected: {verdict.message}",
            )
            base.pop("containerStatuses", None)
            self._pod_status(ns, name, base)
            current = sim.api.store.get("pods", ns, name) or pod
            recorder.record(
                sim.api, current, verdict.reason, verdict.message, component="kubelet", host=node
            )
            return "failed"
        if mode == "container_error":
            for cs in base["containerStatuses"]:
                cs["state"] = {
                    "waiting": {
                        "reason": "CreateContainerError",
                        "message": f'failed to generate container "{cs["name"]}" spec: failed '
                        "to apply OCI options: failed to mount /host/proc: permission denied",
                    }
                }
            self._pod_status(ns, name, base)
            return await self._wait_until(t_end)
        if c.get("image", "").endswith(":bad") or c.get("image") == "bad" or mode == "image_pull":
            for reason in ("ErrImagePull", "ImagePullBackOff"):
                for cs in base["containerStatuses"]:
                    cs["state"] = {
                        "waiting": {
                            "reason": reason,
                            "message": f'Back-off pulling image "{c.get("image")}"'
                            if reason == "ImagePullBackOff"
                            else f'failed to pull and unpack image "{c.get("image")}": not found',
                        }
                    }
                self._pod_status(ns, name, base)
                await asyncio.sleep(step)
            return await self._wait_until(t_end)
        if mode == "not_admitted":
            base.update(
                phase="Failed",
                reason="OutOfmemory",
                message="Pod Node didn't have enough resource: memory, requested: "
                "67108864, used: 269239173120, capacity: 269509197824",
            )
            base.pop("containerStatuses", None)
            self._pod_status(ns, name, base)
            return "failed"
        running = pods.running_status(
            pod, sim.scenario.node(node), phase="Running", started=stamps.T0, restarts={}
        )
        running["startTime"] = base["startTime"]
        self._pod_status(ns, name, running)
        loop = asyncio.get_running_loop()
        budget = None if t_end is None else max(0.0, t_end - loop.time())
        try:
            code, out, err = await asyncio.wait_for(self._collect(pod, node, mode), budget)
        except TimeoutError:
            return "deadline"
        sim.logs[(ns, name)] = out if code == 0 else out + err
        done = pods.running_status(
            pod,
            sim.scenario.node(node),
            phase="Succeeded" if code == 0 else "Failed",
            started=stamps.T0,
            restarts={},
        )
        done["startTime"] = base["startTime"]
        for cs in done["containerStatuses"]:
            cs["state"]["terminated"].update(
                exitCode=code, startedAt=base["startTime"], finishedAt=now_iso()
            )
        if not self._pod_status(ns, name, done):
            return "deadline"
        return "ok" if code == 0 else "failed"

    async def _collect(self, pod: Obj, node: str, mode: str) -> tuple[int, str, str]:
        if mode == "crash":
            return 1, "", "Traceback (most recent call last):\n  ...\nRuntimeError: simulated\n"
        if mode == "bad_log":
            return 0, "gpunode collect: this is not JSON\n", ""
        if mode == "hang":
            await asyncio.Event().wait()
        code, out, err = await self._run_collector(pod, node)
        if mode == "old_schema":
            try:
                doc = json.loads(out)
            except ValueError:
                doc = {}
            doc["schema_version"] = "0.9"
            return 0, json.dumps(doc) + "\n", err
        return code, out, err

    async def _run_collector(self, pod: Obj, node: str) -> tuple[int, str, str]:
        sim = self.sim
        root = Path(sim.workdir) / "hosts" / pod["metadata"]["name"]
        write = asyncio.ensure_future(asyncio.to_thread(podview.prepare, sim, pod, node, root))
        self.writing.add(write)
        write.add_done_callback(self.writing.discard)
        spec = await asyncio.shield(write)  # Controllers.stop waits for the thread
        prefix = podview.collector_prefix(pod)
        # a pod that is not privileged: the device cgroup refuses /dev/kmsg (EPERM)
        devices = (
            ["-m", "gpunode_sandbox.kubesim.devcgroup"]
            if podview.kmsg_refused(sim, pod, node)
            else []
        )
        cmd = [
            *prefix,
            sys.executable,
            *devices,
            *(["bot"] if devices else ["-m", "bot"]),
            "collect",
            "--root",
            str(root),
            "--node-name",
            node,
            "--format",
            "json",
        ]
        if spec is not None:
            cmd += ["--fake-nvml", str(spec)]
        proc = await asyncio.create_subprocess_exec(
            *cmd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), COLLECTOR_TIMEOUT_S)
        except TimeoutError:
            return 124, "", "collector timed out\n"
        finally:
            # Cancelled (the sim stopping) or timed out: the collector must not outlive the
            # tree it reads.
            if proc.returncode is None:
                proc.kill()
                await asyncio.shield(proc.wait())
        return proc.returncode or 0, out.decode(), err.decode()

    def _finish(
        self,
        ns: str,
        name: str,
        start: str,
        *,
        ok: bool,
        reason: str = "",
        message: str = "",
        failed: int = 0,
    ) -> None:
        now = now_iso()
        if ok:
            conds = [
                {
                    "type": "SuccessCriteriaMet",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": now,
                    "lastTransitionTime": now,
                },
                {
                    "type": "Complete",
                    "status": "True",
                    "reason": "CompletionsReached",
                    "message": "Reached expected number of succeeded pods",
                    "lastProbeTime": now,
                    "lastTransitionTime": now,
                },
            ]
            status: Obj = {
                "startTime": start,
                "completionTime": now,
                "succeeded": 1,
                "active": 0,
                "ready": 0,
                "terminating": 0,
                "conditions": conds,
                "uncountedTerminatedPods": {},
            }
        else:
            conds = [
                {
                    "type": t,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastProbeTime": now,
                    "lastTransitionTime": now,
                }
                for t in ("FailureTarget", "Failed")
            ]
            status = {
                "startTime": start,
                "active": 0,
                "ready": 0,
                "terminating": 0,
                "failed": max(failed, 1),
                "conditions": conds,
                "uncountedTerminatedPods": {},
            }
        self._job_status(ns, name, status)
        job = self.sim.api.store.get("jobs", ns, name)
        ttl = (job or {}).get("spec", {}).get("ttlSecondsAfterFinished")
        if ttl is not None:
            self._spawn(self._ttl_delete(ns, name, float(ttl)))

    async def _ttl_delete(self, ns: str, name: str, ttl: float) -> None:
        await asyncio.sleep(ttl)
        if self.sim.api.store.get("jobs", ns, name) is not None:
            self.sim.api.delete(STORED["jobs"], ns, name, propagation="Background")
