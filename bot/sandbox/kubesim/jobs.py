"""The job controller: a diagnostic Job's pod runs the REAL collector on a generated host tree.

A Job whose pod template sets ``spec.nodeName`` gets one pod on that node (labels and an
ownerReference to the Job): Pending -> Running -> Succeeded/Failed in steps of ``sim.step_s``.
While Running, ``python -m bot collect --root TREE [--fake-nvml SPEC] --node-name N --format
json`` runs as a subprocess against a host tree generated now from the scenario; its stdout
becomes the pod log. ``activeDeadlineSeconds`` -> Job Failed, reason DeadlineExceeded (pod
removed); exhausted ``backoffLimit`` -> BackoffLimitExceeded; ``ttlSecondsAfterFinished``
deletes the Job and its pods.

A pod the API server refuses (quota, RuntimeClass admission: ``kubesim/admission.py``) is a
``FailedCreate`` event on the Job ("Error creating: ..."), retried until the deadline, as the
real Job controller does. The node's kubelet admits the bound pod first (``kubesim/kubelet.py``:
pressure conditions, the pod count, resource fit; critical pods preempt): a refused pod is
Failed with the kubelet's reason and "Pod was rejected: ..." plus a pod event.

What the collector can read follows the pod spec like a real node: NVML only when the pod
names an existing RuntimeClass and sets ``NVIDIA_VISIBLE_DEVICES`` (else the fake NVML fails
as nvidia-ml-py does without the injected library); ``smaps_rollup`` of other processes only
with ptrace rights (``capabilities.add: [SYS_PTRACE]`` or ``privileged``): without them the
files are mode 0 and the collector runs without CAP_DAC_* (``setpriv``), so reads fail EACCES.

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
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubesim import kubelet, pods, recorder, stamps
from bot.sandbox.kubesim.crud import now_iso
from bot.sandbox.kubesim.hosttree import write_host_tree
from bot.sandbox.kubesim.resources import STORED
from bot.sandbox.kubesim.statuses import ApiError

if TYPE_CHECKING:
    from bot.sandbox.kubesim.sim import KubeSim

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
    """Mixin of :class:`~bot.sandbox.kubesim.controllers.Controllers`: the Job side."""

    sim: KubeSim

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
        verdict = self._admit(pod, node)
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

    def _admit(self, pod: Obj, node: str) -> kubelet.Admission:
        """The kubelet's admission of ``pod`` on ``node``; preempted victims are failed."""
        sim = self.sim
        node_obj = sim.api.store.get("nodes", None, node) or {}
        others = [
            p
            for p in sim.api.store.list("pods")
            if (p.get("spec") or {}).get("nodeName") == node
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            and p["metadata"]["uid"] != pod["metadata"]["uid"]
        ]
        verdict = kubelet.admit(pod, node_obj, others)
        for victim in verdict.victims:
            meta = victim["metadata"]
            status = copy.deepcopy(victim.get("status") or {})
            status.update(
                phase="Failed",
                reason="Preempting",
                message="Preempted in order to admit critical pod",
            )
            self._pod_status(meta["namespace"], meta["name"], status)
            recorder.record(
                sim.api,
                victim,
                "Preempting",
                "Preempted in order to admit critical pod",
                component="kubelet",
                host=node,
            )
        return verdict

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
        nvml, ptrace = self._nvml_injected(pod), _ptrace(pod)
        # /proc/sys/kernel/hostname shows the reader's UTS namespace: the node's only with
        # hostNetwork (the kubelet shares the host's UTS namespace then), else the pod's name
        uts = node if (pod.get("spec") or {}).get("hostNetwork") else pod["metadata"]["name"]

        def prepare() -> Path | None:
            spec = write_host_tree(sim, node, root)
            if spec is not None and not nvml:
                _fail_nvml(spec)
            hostname = root / "proc" / "sys" / "kernel" / "hostname"
            hostname.parent.mkdir(parents=True, exist_ok=True)
            hostname.write_text(uts[:63] + "\n", encoding="utf-8")
            if not ptrace:
                _deny_smaps(root)
            return spec

        writing = asyncio.ensure_future(asyncio.to_thread(prepare))
        try:
            spec = await asyncio.shield(writing)
        except asyncio.CancelledError:
            await writing  # finish the files before the sim may remove its workdir
            raise
        prefix: list[str] = []
        if not ptrace and os.geteuid() == 0 and shutil.which("setpriv"):
            prefix = list(NO_DAC)
        cmd = [
            *prefix,
            sys.executable,
            "-m",
            "bot",
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
            proc.kill()
            await proc.wait()
            return 124, "", "collector timed out\n"
        return proc.returncode or 0, out.decode(), err.decode()

    def _nvml_injected(self, pod: Obj) -> bool:
        """The NVIDIA runtime injects NVML only for a pod with an existing RuntimeClass and
        NVIDIA_VISIBLE_DEVICES set (a pod requesting no GPU gets no devices otherwise)."""
        spec = pod.get("spec") or {}
        handler = spec.get("runtimeClassName")
        if not handler or self.sim.api.store.get("runtimeclasses", None, handler) is None:
            return False
        return any(
            e.get("name") == "NVIDIA_VISIBLE_DEVICES" and e.get("value")
            for c in spec.get("containers") or []
            for e in c.get("env") or []
        )

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


#: run the collector without the capabilities that bypass file permissions, as a container
#: with ``capabilities.drop: [ALL]`` runs (root in the sandbox would read mode-0 files)
NO_DAC = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--")


def _ptrace(pod: Obj) -> bool:
    """Ptrace read rights over other processes: CAP_SYS_PTRACE added, or privileged."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        sc = c.get("securityContext") or {}
        added = {
            str(x).upper().removeprefix("CAP_")
            for x in (sc.get("capabilities") or {}).get("add") or []
        }
        if sc.get("privileged") or "SYS_PTRACE" in added:
            return True
    return False


def _deny_smaps(root: Path) -> None:
    """smaps_rollup of every process fails the ptrace check without CAP_SYS_PTRACE."""
    for path in (root / "proc").glob("[0-9]*/smaps_rollup"):
        path.chmod(0)


def _fail_nvml(spec: Path) -> None:
    """No NVIDIA runtime injection: nvmlInit fails with LIBRARY_NOT_FOUND."""
    doc = json.loads(spec.read_text(encoding="utf-8"))
    doc["fail"] = "library_not_found"
    spec.write_text(json.dumps(doc, indent=1), encoding="utf-8")
