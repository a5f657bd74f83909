"""Workload controllers of the stand-in: replacement pods, and rollouts per strategy.

- Pods a controller creates have no ``nodeName``: the scheduler (``scheduler``) binds them,
  or they stay ``Pending`` with a ``FailedScheduling`` event. A pod the API server refuses
  (a missing PriorityClass, an admission policy) is a ``FailedCreate`` event on the
  controller, as the ReplicaSet/StatefulSet controllers record it; the change that started
  the rollout was already accepted (never a 403 on the controller's own patch).
- Deployment ``RollingUpdate``: a new ReplicaSet scales up while the total stays within
  ``replicas + maxSurge`` (25% rounded up by default) and the old ones scale down while at
  least ``replicas - maxUnavailable`` (25% rounded down) pods are available. A surge pod that
  fits nowhere stays Pending, and with ``maxUnavailable: 0`` the old pods keep running.
  ``Recreate``: every old pod goes before a new one is created.
- StatefulSet ``RollingUpdate``: one pod at a time, highest ordinal first (down to
  ``partition``), the next only once the recreated one runs. ``OnDelete`` (StatefulSet,
  DaemonSet): nothing restarts; a pod deleted later comes back with the new template.
- DaemonSet ``RollingUpdate``: node by node.
Rollouts run as tasks of the controller loop (``step_s`` apart); Pending pods are retried
whenever a pod goes away.
"""

from __future__ import annotations

import asyncio
import copy
import math
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import pods, stamps
from gpunode_sandbox.kubesim.crud import now_iso
from gpunode_sandbox.kubesim.defaults import stable_uid, template_hash
from gpunode_sandbox.kubesim.recording import record_event
from gpunode_sandbox.kubesim.resources import STORED
from gpunode_sandbox.kubesim.scheduler import Scheduler
from gpunode_sandbox.kubesim.statuses import ApiError

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
REVISION_LABEL = "controller-revision-hash"
PLURALS = {"ReplicaSet": "replicasets", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets"}
#: a rollout that makes no progress keeps waiting this many steps for room, then gives up
MAX_IDLE_STEPS = 600


def scaled(value: Any, replicas: int, *, round_up: bool) -> int:
    text = str(value)
    if text.endswith("%"):
        raw = int(text[:-1]) * replicas / 100
        return math.ceil(raw) if round_up else math.floor(raw)
    return int(text)


class Rollouts:
    sim: KubeSim

    def _spawn(self, coro: Any) -> None:  # provided by Controllers
        raise NotImplementedError

    @property
    def scheduler(self) -> Scheduler:
        return Scheduler(self.sim.api)

    # ---- pods ---------------------------------------------------------------------------
    def _owned(self, owner: Obj) -> list[Obj]:
        uid = owner["metadata"]["uid"]
        return [
            p
            for p in self.sim.api.store.list("pods", owner["metadata"]["namespace"])
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]

    def _set_status(self, ns: str, name: str, status: Obj) -> None:
        pod = self.sim.api.store.get("pods", ns, name)
        if pod is not None:
            pod = copy.deepcopy(pod)
            pod["status"] = status
            self.sim.api.store.put("pods", pod)

    def _bind(self, pod: Obj, preferred: str | None) -> bool:
        """Schedule a pod without a node: bind it and start it, or leave it Pending."""
        api, sched = self.sim.api, self.scheduler
        decision = sched.decide(pod, preferred=preferred)
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if decision.node is None:
            status = copy.deepcopy(pod.get("status") or {})
            status["phase"] = "Pending"
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": decision.message,
                    "lastTransitionTime": now_iso(),
                }
            ]
            self._set_status(ns, name, status)
            record_event(
                api,
                pod,
                reason="FailedScheduling",
                message=decision.message,
                component="default-scheduler",
            )
            return False
        current = api.store.get("pods", ns, name)
        if current is None:
            return False
        bound = copy.deepcopy(current)
        bound["spec"]["nodeName"] = decision.node
        api.store.put("pods", bound)
        if decision.victims:  # after binding: the victims' replacements must not take the room
            sched.preempt(pod, decision)
        status = pods.running_status(
            bound,
            self.sim.scenario.node(decision.node),
            phase="Running",
            started=stamps.T0,
            restarts={},
        )
        status["startTime"] = now_iso()
        self._set_status(ns, name, status)
        return True

    def _create_pod(
        self, owner: Obj, tmpl: Obj, *, name: str, preferred: str | None, node: str | None = None
    ) -> Obj | None:
        """Create one pod for ``owner``; a refusal is a FailedCreate event, not an error."""
        ns = owner["metadata"]["namespace"]
        extra = {REVISION_LABEL: template_hash(tmpl)} if owner["kind"] == "StatefulSet" else {}
        pod = pods.pod_from_template(
            tmpl, name=name, namespace=ns, node=node, owner=owner, extra_labels=extra
        )
        pod["metadata"]["uid"] = stable_uid("pod", ns, name, now_iso(), str(self.sim.api.store.rv))
        try:
            created = self.sim.api.create(STORED["pods"], ns, pod)
        except ApiError as err:
            message = str(err.status().get("message") or err)
            record_event(
                self.sim.api,
                owner,
                reason="FailedCreate",
                message=f"Error creating: {message}",
                component=f"{owner['kind'].lower()}-controller",
            )
            return None
        if node is None:
            self._bind(created, preferred)
        else:
            status = pods.running_status(
                created,
                self.sim.scenario.node(node),
                phase="Running",
                started=stamps.T0,
                restarts={},
            )
            status["startTime"] = now_iso()
            self._set_status(ns, name, status)
        return created

    def retry_pending(self) -> None:
        """Try again to schedule every controller pod that is Pending without a node (not
        re-entered: binding may preempt, and a preempted pod's replacement comes back here)."""
        if getattr(self, "_retrying", False):
            return
        self._retrying = True
        try:
            self._retry_pending()
        finally:
            self._retrying = False

    def _retry_pending(self) -> None:
        for pod in list(self.sim.api.store.list("pods")):
            if pod["spec"].get("nodeName") or (pod.get("status") or {}).get("phase") != "Pending":
                continue
            if not pod["metadata"].get("ownerReferences"):
                continue
            if self.sim.api.store.get(
                "pods", pod["metadata"]["namespace"], pod["metadata"]["name"]
            ):
                self._bind(pod, None)

    def _replace(self, old: Obj) -> None:
        refs = [r for r in old["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if not refs or refs[0]["kind"] not in PLURALS or refs[0].get("apiVersion") != "apps/v1":
            self.retry_pending()
            return
        ref, ns = refs[0], old["metadata"]["namespace"]
        owner = self.sim.api.store.get(PLURALS[ref["kind"]], ns, ref["name"])
        if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
            self.retry_pending()
            return
        owned = self._owned(owner)
        want = int(owner["spec"].get("replicas", 1)) if ref["kind"] != "DaemonSet" else None
        if want is not None and len(owned) >= want:
            self.retry_pending()
            return
        tmpl = owner["spec"]["template"]
        old_node = old["spec"].get("nodeName")
        fresh = f"{ref['name']}-{stamps.suffix(ref['name'], now_iso(), str(self.sim.api.store.rv))}"
        if ref["kind"] == "DaemonSet":
            self._create_pod(owner, tmpl, name=fresh, preferred=None, node=old_node)
        elif ref["kind"] == "StatefulSet":
            self._create_pod(owner, tmpl, name=old["metadata"]["name"], preferred=old_node)
        else:
            self._create_pod(owner, tmpl, name=fresh, preferred=old_node)
        self.retry_pending()

    def _running(self, pod: Obj | None) -> bool:
        return pod is not None and (pod.get("status") or {}).get("phase") == "Running"

    # ---- rollouts -----------------------------------------------------------------------
    def rollout(self, plural: str, ctrl: Obj) -> None:
        ns, name = ctrl["metadata"]["namespace"], ctrl["metadata"]["name"]
        strategy = ctrl["spec"].get("updateStrategy") or ctrl["spec"].get("strategy") or {}
        if plural in ("statefulsets", "daemonsets") and strategy.get("type") == "OnDelete":
            return  # nothing restarts until someone deletes a pod
        runner = {
            "deployments": self._roll_deployment,
            "statefulsets": self._roll_statefulset,
            "daemonsets": self._roll_daemonset,
        }[plural]
        self._spawn(runner(ns, name, template_hash(ctrl["spec"]["template"])))

    def _superseded(self, plural: str, ns: str, name: str, h: str) -> Obj | None:
        ctrl = self.sim.api.store.get(plural, ns, name)
        if ctrl is None or template_hash(ctrl["spec"]["template"]) != h:
            return None
        return ctrl

    async def _roll_deployment(self, ns: str, name: str, h: str) -> None:
        api, step = self.sim.api, self.sim.step_s
        ctrl = self._superseded("deployments", ns, name, h)
        if ctrl is None:
            return
        tmpl = ctrl["spec"]["template"]
        labels = {**(tmpl.get("metadata") or {}).get("labels", {}), "pod-template-hash": h}
        rs_tmpl = copy.deepcopy(tmpl)
        rs_tmpl.setdefault("metadata", {})["labels"] = labels
        rs_name = f"{name}-{h}"
        new_rs = api.store.get("replicasets", ns, rs_name)
        if new_rs is None:
            sel = copy.deepcopy(ctrl["spec"]["selector"])
            sel.setdefault("matchLabels", {})["pod-template-hash"] = h
            new_rs = api.create(
                STORED["replicasets"],
                ns,
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": rs_name,
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [pods.owner_ref(ctrl)],
                    },
                    "spec": {"replicas": 0, "selector": sel, "template": rs_tmpl},
                },
            )
        idle = 0
        while idle < MAX_IDLE_STEPS:
            ctrl = self._superseded("deployments", ns, name, h)
            if ctrl is None:
                return
            if not self._deployment_step(ctrl, rs_name):
                if self._deployment_done(ctrl, rs_name):
                    return
                idle += 1
            else:
                idle = 0
            await asyncio.sleep(step)

    def _rs_of(self, ctrl: Obj) -> list[Obj]:
        uid = ctrl["metadata"]["uid"]
        return [
            rs
            for rs in self.sim.api.store.list("replicasets", ctrl["metadata"]["namespace"])
            if any(r.get("uid") == uid for r in rs["metadata"].get("ownerReferences") or [])
        ]

    def _scale(self, rs: Obj, replicas: int) -> None:
        rs2 = copy.deepcopy(rs)
        rs2["spec"]["replicas"] = replicas
        self.sim.api.store.put("replicasets", rs2)

    def _deployment_done(self, ctrl: Obj, rs_name: str) -> bool:
        sets = self._rs_of(ctrl)
        new = [p for rs in sets if rs["metadata"]["name"] == rs_name for p in self._owned(rs)]
        old = [p for rs in sets if rs["metadata"]["name"] != rs_name for p in self._owned(rs)]
        replicas = int(ctrl["spec"].get("replicas", 1))
        return not old and sum(self._running(p) for p in new) >= replicas

    def _deployment_step(self, ctrl: Obj, rs_name: str) -> bool:
        """One move of the rollout; False when nothing could move now."""
        spec, ns = ctrl["spec"], ctrl["metadata"]["namespace"]
        replicas = int(spec.get("replicas", 1))
        sets = self._rs_of(ctrl)
        new_rs = next((rs for rs in sets if rs["metadata"]["name"] == rs_name), None)
        if new_rs is None:
            return False
        old_sets = [rs for rs in sets if rs is not new_rs]
        new = self._owned(new_rs)
        old = [p for rs in old_sets for p in self._owned(rs)]
        strategy = spec.get("strategy") or {}
        self.retry_pending()
        if strategy.get("type") == "Recreate":
            if old:
                for rs in old_sets:
                    self._scale(rs, 0)
                for p in old:
                    self.sim.api.delete(STORED["pods"], ns, p["metadata"]["name"])
                return True
            if len(new) < replicas:
                self._scale(new_rs, replicas)
                return self._add_new(ctrl, new_rs, old) is not None
            return False
        rolling = strategy.get("rollingUpdate") or {}
        surge = scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True)
        unavailable = scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
        if len(new) < replicas and len(new) + len(old) < replicas + surge:
            self._scale(new_rs, len(new) + 1)
            return self._add_new(ctrl, new_rs, old) is not None
        available = sum(self._running(p) for p in new + old)
        victim = min(old, key=self._running) if old else None  # a pod not running goes first
        if victim is not None and (available - self._running(victim) >= replicas - unavailable):
            owner = next(
                rs
                for rs in old_sets
                if any(
                    r.get("uid") == rs["metadata"]["uid"]
                    for r in victim["metadata"].get("ownerReferences") or []
                )
            )
            self._scale(owner, max(0, len(self._owned(owner)) - 1))
            self.sim.api.delete(STORED["pods"], ns, victim["metadata"]["name"])
            return True
        return False

    def _add_new(self, ctrl: Obj, rs: Obj, old: list[Obj]) -> Obj | None:
        name = rs["metadata"]["name"]
        fresh = f"{name}-{stamps.suffix(name, now_iso(), str(self.sim.api.store.rv))}"
        preferred = next((p["spec"].get("nodeName") for p in old), None)
        return self._create_pod(rs, rs["spec"]["template"], name=fresh, preferred=preferred)

    async def _roll_statefulset(self, ns: str, name: str, h: str) -> None:
        api, step = self.sim.api, self.sim.step_s
        ctrl = self._superseded("statefulsets", ns, name, h)
        if ctrl is None:
            return
        strategy = ctrl["spec"].get("updateStrategy") or {}
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        replicas = int(ctrl["spec"].get("replicas", 1))
        for ordinal in range(replicas - 1, partition - 1, -1):
            pname = f"{name}-{ordinal}"
            pod = api.store.get("pods", ns, pname)
            if pod is not None and pod["metadata"].get("labels", {}).get(REVISION_LABEL) == h:
                continue
            node = pod["spec"].get("nodeName") if pod is not None else None
            if pod is not None:
                api.store.remove("pods", ns, pname)  # recreated below, not by _replace
                self.retry_pending()
            ctrl = self._superseded("statefulsets", ns, name, h)
            if ctrl is None:
                return
            self._create_pod(ctrl, ctrl["spec"]["template"], name=pname, preferred=node)
            for _ in range(MAX_IDLE_STEPS):  # the next ordinal waits for this one to run
                if self._running(api.store.get("pods", ns, pname)):
                    break
                if self._superseded("statefulsets", ns, name, h) is None:
                    return
                self.retry_pending()
                await asyncio.sleep(step)
            else:
                return

    async def _roll_daemonset(self, ns: str, name: str, h: str) -> None:
        ctrl = self._superseded("daemonsets", ns, name, h)
        if ctrl is None:
            return
        for p in self._owned(ctrl):
            node = p["spec"].get("nodeName")
            self.sim.api.store.remove("pods", ns, p["metadata"]["name"])
            fresh = f"{name}-{stamps.suffix(p['metadata']['name'], now_iso())}"
            self._create_pod(ctrl, ctrl["spec"]["template"], name=fresh, preferred=None, node=node)
            await asyncio.sleep(self.sim.step_s)
