"""Controllers: Jobs (see ``jobs``) and minimal workload controllers (replacement pods,
rollouts when a pod template changes).

Workloads: a deleted/evicted pod owned by a ReplicaSet, StatefulSet or DaemonSet is replaced
(placed on its old node if schedulable, else the first schedulable node that fits, else
Pending); a changed pod template rolls every pod (Deployment: a new ReplicaSet).
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubesim import pods, stamps
from bot.sandbox.kubesim.crud import now_iso
from bot.sandbox.kubesim.defaults import stable_uid, template_hash
from bot.sandbox.kubesim.jobs import JobRunner
from bot.sandbox.kubesim.resources import STORED

if TYPE_CHECKING:
    from bot.sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]


class Controllers(JobRunner):
    def __init__(self, sim: KubeSim) -> None:
        self.sim = sim
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.writing: set[asyncio.Future[Any]] = set()
        sim.api.on_change.append(self._on_change)

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
        elif plural in ("deployments", "statefulsets", "daemonsets") and old and new:
            if (old.get("spec") or {}).get("template") != (new.get("spec") or {}).get("template"):
                self.rollout(plural, new)
        elif plural == "pods" and old is not None and new is None:
            self._replace(old)

    # ---- workloads ---------------------------------------------------------------------------
    def _schedulable(self, preferred: str | None, pod_spec: Obj) -> str | None:
        nodes = {n["metadata"]["name"]: n for n in self.sim.api.store.list("nodes")}
        wants_gpu = any(
            "nvidia.com/gpu" in ((c.get("resources") or {}).get("limits") or {})
            for c in pod_spec.get("containers") or []
        )

        def fits(n: Obj) -> bool:
            if n.get("spec", {}).get("unschedulable"):
                return False
            alloc = n.get("status", {}).get("allocatable") or {}
            return not wants_gpu or str(alloc.get("nvidia.com/gpu", "0")) != "0"

        if preferred in nodes and fits(nodes[preferred]):
            return preferred
        return next((n for n, obj in sorted(nodes.items()) if fits(obj)), None)

    def _start_pod(
        self, tmpl: Obj, *, name: str, ns: str, node: str | None, owner: Obj, extra: dict[str, str]
    ) -> None:
        pod = pods.pod_from_template(
            tmpl, name=name, namespace=ns, node=node, owner=owner, extra_labels=extra
        )
        pod["metadata"]["uid"] = stable_uid("pod", ns, name, now_iso(), str(self.sim.api.store.rv))
        created = self.sim.api.create(STORED["pods"], ns, pod)
        sc_node = self.sim.scenario.node(node) if node else None
        status = pods.running_status(
            created,
            sc_node,
            phase="Running" if node else "Pending",
            started=stamps.T0,
            restarts={},
        )
        status["startTime"] = now_iso()
        self._pod_status(ns, name, status)

    def _replace(self, old: Obj) -> None:
        refs = [r for r in old["metadata"].get("ownerReferences") or [] if r.get("controller")]
        if not refs or refs[0]["kind"] not in ("ReplicaSet", "StatefulSet", "DaemonSet"):
            return
        ref, ns = refs[0], old["metadata"]["namespace"]
        plural = {
            "ReplicaSet": "replicasets",
            "StatefulSet": "statefulsets",
            "DaemonSet": "daemonsets",
        }[ref["kind"]]
        owner = self.sim.api.store.get(plural, ns, ref["name"])
        if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
            return
        owned = [
            p
            for p in self.sim.api.store.list("pods", ns)
            if any(r.get("uid") == ref["uid"] for r in p["metadata"].get("ownerReferences") or [])
        ]
        want = int(owner["spec"].get("replicas", 1)) if ref["kind"] != "DaemonSet" else None
        if want is not None and len(owned) >= want:
            return
        tmpl = owner["spec"]["template"]
        old_node = old["spec"].get("nodeName")
        fresh = f"{ref['name']}-{stamps.suffix(ref['name'], now_iso(), str(self.sim.api.store.rv))}"
        if ref["kind"] == "DaemonSet":
            node: str | None = old_node
            name = fresh
        elif ref["kind"] == "StatefulSet":
            node, name = self._schedulable(old_node, tmpl["spec"]), old["metadata"]["name"]
        else:
            node, name = self._schedulable(old_node, tmpl["spec"]), fresh
        self._start_pod(tmpl, name=name, ns=ns, node=node, owner=owner, extra={})

    def rollout(self, plural: str, ctrl: Obj) -> None:
        """Replace every pod of ``ctrl`` with one from its new template."""
        api, ns = self.sim.api, ctrl["metadata"]["namespace"]
        tmpl = ctrl["spec"]["template"]
        if plural == "deployments":
            h = template_hash(tmpl)
            old_rs = [
                rs
                for rs in api.store.list("replicasets", ns)
                if any(
                    r.get("uid") == ctrl["metadata"]["uid"]
                    for r in rs["metadata"].get("ownerReferences") or []
                )
            ]
            nodes = [p["spec"].get("nodeName") for rs in old_rs for p in self._owned(rs)]
            labels = {**(tmpl.get("metadata") or {}).get("labels", {}), "pod-template-hash": h}
            rs_tmpl = copy.deepcopy(tmpl)
            rs_tmpl.setdefault("metadata", {})["labels"] = labels
            sel = copy.deepcopy(ctrl["spec"]["selector"])
            sel.setdefault("matchLabels", {})["pod-template-hash"] = h
            new_rs = api.create(
                STORED["replicasets"],
                ns,
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": f"{ctrl['metadata']['name']}-{h}",
                        "namespace": ns,
                        "labels": labels,
                        "ownerReferences": [pods.owner_ref(ctrl)],
                    },
                    "spec": {
                        "replicas": ctrl["spec"].get("replicas", 1),
                        "selector": sel,
                        "template": rs_tmpl,
                    },
                },
            )
            for rs in old_rs:
                rs2 = copy.deepcopy(rs)
                rs2["spec"]["replicas"] = 0
                api.store.put("replicasets", rs2)
                for p in self._owned(rs):
                    api.store.remove("pods", ns, p["metadata"]["name"])
            replicas = int(ctrl["spec"].get("replicas", 1))
            for i in range(replicas):
                prev = nodes[i] if i < len(nodes) else None
                name = f"{new_rs['metadata']['name']}-{stamps.suffix(h, str(i), now_iso())}"
                self._start_pod(
                    rs_tmpl,
                    name=name,
                    ns=ns,
                    node=self._schedulable(prev, rs_tmpl["spec"]),
                    owner=new_rs,
                    extra={},
                )
            return
        for p in self._owned(ctrl):
            pname, node = p["metadata"]["name"], p["spec"].get("nodeName")
            api.store.remove("pods", ns, pname)
            if plural == "daemonsets":
                pname = f"{ctrl['metadata']['name']}-{stamps.suffix(pname, now_iso())}"
            else:
                node = self._schedulable(node, tmpl["spec"])
            self._start_pod(tmpl, name=pname, ns=ns, node=node, owner=ctrl, extra={})

    def _owned(self, owner: Obj) -> list[Obj]:
        uid = owner["metadata"]["uid"]
        return [
            p
            for p in self.sim.api.store.list("pods", owner["metadata"]["namespace"])
            if any(r.get("uid") == uid for r in p["metadata"].get("ownerReferences") or [])
        ]
