"""``FakeKube``: ``KubePort`` in memory, for the use-case tests.

Built over a ``ClusterView`` and an ``EvidenceBundle`` (the analysis fixtures in
tests/fixtures/bundles/<scenario>/, or a view the real gateway read): controllers are derived
from the pods' top owners (their pod template = the pod's containers), effects change that
state as the API server would and answer with the gateway's ``Change`` shapes, dry runs
change nothing. Every call is recorded with its ``dry_run`` flag; ``fail(method, exc,
nth=...)`` injects a fault on the Nth matching call. tests/contract runs the same cases over
this fake and over the real gateway against the Kubernetes stand-in, so the two cannot drift.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from bot.core.governance.impersonation import ActingAs
from bot.core.model.actions import PATCHABLE_KINDS
from bot.core.model.changes import Change, EnvValues, EvictionOutcome, ResourceValues
from bot.core.model.cluster import ClusterView, NodeInfo, NodeLoad
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.quantity import parse_quantity
from bot.core.remedies.resizes import minor_version
from bot.core.remedies.watching import RolloutProgress
from bot.errors import (
    ConflictError,
    DiagnosticJobError,
    InvalidObjectError,
    KubeError,
    NotFoundError,
)
from bot.kube.patching import container_patch
from bot.kube.prioritizing import priority_class_body
from bot.kube.reading import CONTROLLERS
from bot.kube.transport import SMP
from tests.services.fake_parts import (
    Budget,
    Call,
    Fault,
    budget_refusal,
    find_container,
    load_scenario,
    merge_resources,
    pod_template,
)

__all__ = ["Budget", "Call", "FakeKube", "load_scenario"]


class FakeKube:
    """KubePort in memory, with the gateway's answers (``tests/contract`` runs the same cases
    over both, so the two cannot drift). ``calls`` lists every call; ``effects()`` the
    non-dry-run ones. ``budgets``: PodDisruptionBudgets over the fake's pods."""

    #: nothing names the fake cluster (the gateway: its kubeconfig context or server URL)
    cluster_name = ""

    def __init__(
        self,
        bundle: EvidenceBundle,
        view: ClusterView,
        *,
        clock: Callable[[], datetime] | None = None,
        extra_nodes: tuple[str, ...] = ("gpu-node-02",),
        budgets: tuple[Budget, ...] = (),
    ) -> None:
        self.bundle, self.view, self.clock = bundle, view, clock
        self.node = view.node
        self.pods = {p.key: p for p in view.pods}
        self.extra_nodes = extra_nodes
        self.budgets = budgets
        self.priority_classes = {pc.name: pc.value for pc in view.priority_classes}
        self.controllers: dict[str, dict[str, Any]] = {}
        self._rv = itertools.count(1000)
        for pod in view.pods:
            top = pod.top_owner
            if top is None:
                continue
            key = f"{top.kind}/{pod.namespace}/{top.name}"
            self.controllers.setdefault(
                key,
                {
                    "kind": top.kind,
                    "metadata": {
                        "namespace": pod.namespace,
                        "name": top.name,
                        "resourceVersion": self._next_rv(),
                        "generation": 1,
                    },
                    "spec": {"template": pod_template(pod)},
                },
            )
        self.calls: list[Call] = []
        self._faults: list[Fault] = []
        #: every identity a use case asked to act as (impersonation), in order
        self.acting_as: list[ActingAs] = []

    def _next_rv(self) -> str:
        return str(next(self._rv))

    # -- test controls ------------------------------------------------------------------
    def fail(
        self, method: str, exc: BaseException, *, nth: int = 1, dry_run: bool | None = None
    ) -> None:
        """Raise ``exc`` on the ``nth`` call of ``method`` (counting only calls whose
        dry_run flag equals ``dry_run`` when given). ``TimeoutError()`` models a hang cut off."""
        self._faults.append(Fault(method, exc, nth, dry_run))

    def effects(self, method: str | None = None) -> list[Call]:
        """Calls that may change the cluster (dry_run=False)."""
        return [
            c for c in self.calls if c.dry_run is False and (method is None or c.method == method)
        ]

    def mutating_calls(self) -> list[Call]:
        return [c for c in self.calls if c.dry_run is not None]

    def template_container(self, key: str, name: str) -> dict[str, Any]:
        spec = self.controllers[key]["spec"]["template"]["spec"]
        return next(c for c in spec["containers"] if c["name"] == name)  # type: ignore[no-any-return]

    async def _enter(self, method: str, *args: Any, **kwargs: Any) -> None:
        call = Call(method, args, kwargs)
        self.calls.append(call)
        await asyncio.sleep(0)  # let concurrent callers interleave, as real I/O would
        for fault in self._faults:
            if fault.method != method:
                continue
            if fault.dry_run is not None and call.dry_run != fault.dry_run:
                continue
            fault.seen += 1
            if fault.seen == fault.nth:
                raise fault.exc

    def _controller(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        if kind not in CONTROLLERS:
            known = ", ".join(sorted(CONTROLLERS))
            raise InvalidObjectError(f"unsupported controller kind {kind!r}; use one of {known}")
        key = f"{kind}/{namespace}/{name}"
        if key not in self.controllers:
            raise NotFoundError(f"{key} not found")
        return self.controllers[key]

    def _patchable(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        if kind not in PATCHABLE_KINDS:
            raise InvalidObjectError(
                f"gpunode patches only {' and '.join(PATCHABLE_KINDS)} templates, not {kind} "
                f"{namespace}/{name}; change that workload's controller by hand"
            )
        return self._controller(kind, namespace, name)

    # -- reads --------------------------------------------------------------------------
    async def get_cluster_view(
        self, node: str, *, measured: frozenset[str] = frozenset()
    ) -> ClusterView:
        await self._enter("get_cluster_view", node)
        if node != self.node.name:
            raise NotFoundError(f"node {node} not found; check the name (`kubectl get nodes`)")
        return self.view.model_copy(
            update={"node": self.node, "pods": list(self.pods.values())}, deep=True
        )

    async def get_node(self, node: str) -> NodeInfo:
        await self._enter("get_node", node)
        if node != self.node.name:
            raise NotFoundError(f"node {node} not found; check the name (`kubectl get nodes`)")
        return self.node.model_copy(deep=True)

    async def list_gpu_nodes(self) -> list[NodeInfo]:
        await self._enter("list_gpu_nodes")
        return [self.node, *(NodeInfo(name=n) for n in self.extra_nodes)]

    async def gpu_node_loads(self) -> list[NodeLoad]:
        await self._enter("gpu_node_loads")
        used = None
        if self.view.metrics is not None:
            used = sum(m.memory_working_set_bytes for m in self.view.metrics)
        return [
            NodeLoad(node=self.node, allocated=list(self.view.allocated), working_set_bytes=used),
            *(NodeLoad(node=NodeInfo(name=n)) for n in self.extra_nodes),
        ]

    async def run_diagnostic(self, node: str, *, known: NodeInfo | None = None) -> EvidenceBundle:
        await self._enter("run_diagnostic", node)
        if node != self.node.name:
            raise DiagnosticJobError(f"node {node} does not exist", code="node_not_found")
        if self.clock is None:
            return self.bundle
        return self.bundle.model_copy(update={"collected_at": self.clock()})

    async def read_controller(self, kind: str, namespace: str, name: str) -> dict[str, object]:
        await self._enter("read_controller", kind, namespace, name)
        return copy.deepcopy(self._controller(kind, namespace, name))

    async def read_target(self, kind: str, namespace: str, name: str) -> dict[str, object] | None:
        """The object's fields the re-read after an unanswered write looks at."""
        await self._enter("read_target", kind, namespace, name)
        if kind == "Node":
            return {
                "metadata": {"annotations": dict(self.node.annotations)},
                "spec": {"unschedulable": self.node.unschedulable},
            }
        if kind == "PriorityClass":
            value = self.priority_classes.get(name)
            return None if value is None else {"value": value}
        if kind == "Pod":
            pod = self.pods.get(f"{namespace}/{name}")
            if pod is None:
                return None
            return {
                "metadata": {"uid": pod.uid},
                "spec": {"containers": [{"name": c.name} for c in pod.containers]},
            }
        key = f"{kind}/{namespace}/{name}"
        found = self.controllers.get(key)
        return None if found is None else copy.deepcopy(found)

    async def rollout_progress(
        self, kind: str, namespace: str, name: str, *, since: str = ""
    ) -> RolloutProgress:
        """Changes land at once here (not recorded in ``calls``: watching reads only)."""
        return RolloutProgress(kind=kind, namespace=namespace, name=name, desired=0)

    async def resize_progress(self, namespace: str, name: str, container: str) -> RolloutProgress:
        return RolloutProgress(kind="Pod", namespace=namespace, name=name, desired=0)

    async def pods_present(self, pods: list[tuple[str, str, str]]) -> list[str]:
        return []

    def impersonating(self, acting: ActingAs) -> FakeKube:
        """The same fake (same state and calls), with ``acting`` recorded in ``acting_as``:
        the fake has no RBAC of its own, so it refuses nothing for the person."""
        self.acting_as.append(acting)
        return self

    # -- effects ------------------------------------------------------------------------
    async def _node_flag(
        self, verb: Literal["cordon", "uncordon"], node: str, *, dry_run: bool
    ) -> Change:
        await self._enter(verb, node, dry_run=dry_run)
        if node != self.node.name:
            raise NotFoundError(f"node {node} not found")
        want = verb == "cordon"
        was = self.node.unschedulable
        base: dict[str, Any] = {
            "verb": verb,
            "kind": "Node",
            "name": node,
            "dry_run": dry_run,
            "patch": {"spec": {"unschedulable": want}},
            "patch_type": SMP,
            "before": {"unschedulable": was},
        }
        if was == want:
            return Change(**base, noop=True)
        rv = self.node.resource_version if dry_run else self._next_rv()
        if not dry_run:
            self.node = self.node.model_copy(update={"unschedulable": want, "resource_version": rv})
        return Change(**base, after={"unschedulable": want, "resourceVersion": rv})

    async def cordon(self, node: str, *, dry_run: bool) -> Change:
        return await self._node_flag("cordon", node, dry_run=dry_run)

    async def uncordon(self, node: str, *, dry_run: bool) -> Change:
        return await self._node_flag("uncordon", node, dry_run=dry_run)

    async def annotate_node(
        self, node: str, annotations: dict[str, str | None], *, dry_run: bool
    ) -> Change:
        await self._enter("annotate_node", node, annotations, dry_run=dry_run)
        if node != self.node.name:
            raise NotFoundError(f"node {node} not found")
        current = dict(self.node.annotations)
        base: dict[str, Any] = {
            "verb": "annotate_node",
            "kind": "Node",
            "name": node,
            "dry_run": dry_run,
            "patch": {"metadata": {"annotations": dict(annotations)}},
            "patch_type": SMP,
            "before": {"annotations": {k: current.get(k) for k in sorted(annotations)}},
        }
        if all(current.get(k) == v for k, v in annotations.items()):
            return Change(**base, noop=True)
        rv = self.node.resource_version if dry_run else self._next_rv()
        for k, v in annotations.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = v
        if not dry_run:
            self.node = self.node.model_copy(
                update={"annotations": current, "resource_version": rv}
            )
        after = {"annotations": {k: current.get(k) for k in sorted(annotations)}}
        return Change(**base, after=after | {"resourceVersion": rv})

    async def evict(self, namespace: str, name: str, *, dry_run: bool) -> EvictionOutcome:
        await self._enter("evict", namespace, name, dry_run=dry_run)
        key = f"{namespace}/{name}"
        pod = self.pods.get(key)
        if pod is None:
            return EvictionOutcome(
                namespace=namespace,
                name=name,
                status="not_found",
                reason="the pod no longer exists",
                reason_key="eviction_pod_gone",
            )
        blocked = budget_refusal(self.budgets, list(self.pods.values()), pod)
        if blocked is not None:
            return blocked
        if dry_run:
            return EvictionOutcome(namespace=namespace, name=name, status="dry_run")
        del self.pods[key]
        return EvictionOutcome(namespace=namespace, name=name, status="evicted")

    async def ensure_priority_class(
        self,
        name: str,
        value: int,
        *,
        description: str,
        dry_run: bool,
        preemption_policy: str = "Never",
    ) -> Change:
        await self._enter("ensure_priority_class", name, value, dry_run=dry_run)
        body = priority_class_body(
            name, value, description=description, preemption_policy=preemption_policy
        )
        base: dict[str, Any] = {
            "verb": "create_priority_class",
            "kind": "PriorityClass",
            "name": name,
            "dry_run": dry_run,
            "patch": body,
        }
        if name not in self.priority_classes:
            if not dry_run:
                self.priority_classes[name] = value
            return Change(**base, before={"exists": False}, after={"value": value, "exists": True})
        if self.priority_classes[name] == value:
            return Change(**base, noop=True, before={"exists": True, "value": value})
        raise ConflictError(
            f"PriorityClass {name} exists with value {self.priority_classes[name]}, not {value}"
        )

    def _commit(
        self, ctrl: dict[str, Any], spec: dict[str, Any], *, dry_run: bool
    ) -> dict[str, Any]:
        """The controller's new template ``spec`` stored (unless dry run); the answer's
        resourceVersion and generation, as ``bot.kube.patching.after_state`` reads them."""
        meta = ctrl["metadata"]
        if dry_run:
            return {
                "resourceVersion": meta["resourceVersion"],
                "generation": meta["generation"] + 1,
            }
        stored = ctrl["spec"]["template"]["spec"]
        stored.clear()  # in place: a test may hold the dict
        stored.update(spec)
        meta["resourceVersion"], meta["generation"] = self._next_rv(), meta["generation"] + 1
        return {"resourceVersion": meta["resourceVersion"], "generation": meta["generation"]}

    async def set_priority_class_name(
        self, kind: str, namespace: str, name: str, priority_class: str | None, *, dry_run: bool
    ) -> Change:
        await self._enter(
            "set_priority_class_name", kind, namespace, name, priority_class, dry_run=dry_run
        )
        ctrl = self._patchable(kind, namespace, name)
        spec = copy.deepcopy(ctrl["spec"]["template"]["spec"])
        was = spec.get("priorityClassName")
        base: dict[str, Any] = {
            "verb": "set_priority_class",
            "kind": kind,
            "namespace": namespace,
            "name": name,
            "dry_run": dry_run,
            "patch_type": SMP,
            "patch": {"spec": {"template": {"spec": {"priorityClassName": priority_class}}}},
            "before": {
                "priorityClassName": was,
                "resourceVersion": ctrl["metadata"]["resourceVersion"],
            },
        }
        if was == priority_class:
            return Change(**base, noop=True)
        if priority_class is None:
            spec.pop("priorityClassName", None)
        else:
            spec["priorityClassName"] = priority_class
        state = self._commit(ctrl, spec, dry_run=dry_run)
        return Change(**base, after={"priorityClassName": spec.get("priorityClassName"), **state})

    async def patch_container_resources(
        self,
        kind: str,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: ResourceValues,
        limits: ResourceValues,
        env: EnvValues,
        dry_run: bool,
    ) -> Change:
        await self._enter(
            "patch_container_resources",
            kind,
            namespace,
            name,
            container,
            requests=dict(requests),
            limits=dict(limits),
            env=dict(env),
            dry_run=dry_run,
        )
        ctrl = self._patchable(kind, namespace, name)
        spec = copy.deepcopy(ctrl["spec"]["template"]["spec"])
        c = find_container(spec, container, what=f"{kind} {namespace}/{name}")
        old_env = {e["name"]: e for e in c.get("env") or []}
        # the gateway's before shape (bot.kube.patching.patch_container_resources)
        before = {
            "container": container,
            "resources": copy.deepcopy(c.get("resources") or {}),
            "env": {k: copy.deepcopy(old_env.get(k)) for k in env},
            "resourceVersion": ctrl["metadata"]["resourceVersion"],
        }
        c["resources"] = merge_resources(c.get("resources") or {}, requests, limits)
        for k, v in env.items():
            if v is None:
                old_env.pop(k, None)
            elif isinstance(v, dict):
                old_env[k] = {**v, "name": k}
            else:
                old_env[k] = {"name": k, "value": v}
        if old_env or "env" in c:
            c["env"] = list(old_env.values())
        entry = container_patch(container, requests=requests, limits=limits, env=env)
        state = self._commit(ctrl, spec, dry_run=dry_run)
        return Change(
            verb="patch_resources",
            kind=kind,
            namespace=namespace,
            name=name,
            dry_run=dry_run,
            patch={"spec": {"template": {"spec": {"containers": [entry]}}}},
            patch_type=SMP,
            before=before,
            after={"resources": c["resources"], **state},
        )

    async def resize_pod(
        self,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: ResourceValues,
        limits: ResourceValues,
        dry_run: bool,
    ) -> Change:
        """In place, as ``bot.kube.resizing.resize_pod``: only where the server serves
        ``pods/resize`` (``view.in_place_resize``)."""
        await self._enter(
            "resize_pod",
            namespace,
            name,
            container,
            requests=dict(requests),
            limits=dict(limits),
            dry_run=dry_run,
        )
        if not self.view.in_place_resize:
            raise KubeError(
                f"the API server ({self.view.server_version or 'unknown version'}) does not "
                "serve pods/resize; in-place resize needs Kubernetes >= 1.33 - patch the "
                "controller instead (a rollout)",
                code="resize_unsupported",
            )
        pod = self.pods.get(f"{namespace}/{name}")
        if pod is None:
            raise NotFoundError(f"pods {name} not found")
        info = next((c for c in pod.containers if c.name == container and not c.init), None)
        if info is None:
            names = ", ".join(c.name for c in pod.containers if not c.init)
            raise NotFoundError(
                f"pod {namespace}/{name} has no container {container!r} (containers: {names})"
            )
        old_mem, new_mem = info.limits.get("memory"), limits.get("memory")
        minor = minor_version(self.view.server_version)
        lowers = (
            bool(old_mem and new_mem)
            and parse_quantity(str(new_mem)).cmp(parse_quantity(str(old_mem))) < 0
        )
        restarts = info.memory_resize_policy == "RestartContainer"
        if lowers and minor is not None and minor < 34 and not restarts:
            raise InvalidObjectError(
                f"Kubernetes 1.{minor} forbids lowering a memory limit in place unless the "
                "container's memory resizePolicy is RestartContainer; patch the controller "
                "instead (a rollout) or upgrade to >= 1.34"
            )
        old: dict[str, Any] = {}
        if info.requests:
            old["requests"] = dict(info.requests)
        if info.limits:
            old["limits"] = dict(info.limits)
        now = merge_resources(old, requests, limits)
        if not dry_run:
            updated = info.model_copy(
                update={"requests": now.get("requests", {}), "limits": now.get("limits", {})}
            )
            containers = [updated if c is info else c for c in pod.containers]
            self.pods[pod.key] = pod.model_copy(update={"containers": containers})
        entry = container_patch(container, requests=requests, limits=limits, env={})
        return Change(
            verb="resize",
            kind="Pod",
            namespace=namespace,
            name=name,
            dry_run=dry_run,
            patch={"spec": {"containers": [entry]}},
            patch_type=SMP,
            before={"container": container, "resources": old},
            after={"resources": now, "resourceVersion": None, "generation": None},
        )
