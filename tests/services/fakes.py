"""In-memory stand-ins for the two ports, for the use-case tests.

``FakeKube`` implements ``KubePort`` over a ``ClusterView`` and an ``EvidenceBundle`` (the
analysis fixtures in tests/fixtures/bundles/<scenario>/): controllers are derived from the
pods' top owners (their pod template = the pod's containers), effects change that state as
the API server would, dry runs change nothing. Every call is recorded with its ``dry_run``
flag; ``fail(method, exc, nth=...)`` injects a fault on the Nth matching call.

``FakeChat`` implements ``ChatPort``: messages by ts (with their edit history), ephemerals,
modals, uploads; user groups from a dict.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from bot.core.changes import Change, EvictionOutcome
from bot.core.cluster import ClusterView, NodeInfo, NodeLoad, PodInfo
from bot.core.evidence import EvidenceBundle
from bot.core.watching import RolloutProgress
from bot.errors import NotFoundError, SlackError

BUNDLES = Path(__file__).resolve().parents[1] / "fixtures" / "bundles"


def load_scenario(name: str = "seed") -> tuple[EvidenceBundle, ClusterView]:
    folder = BUNDLES / name
    bundle = EvidenceBundle.model_validate_json((folder / "evidence.json").read_text())
    view = ClusterView.model_validate_json((folder / "cluster.json").read_text())
    return bundle, view


@dataclass
class Call:
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    @property
    def dry_run(self) -> bool | None:
        value = self.kwargs.get("dry_run")
        return None if value is None else bool(value)


@dataclass
class _Fault:
    method: str
    exc: BaseException
    nth: int
    dry_run: bool | None
    seen: int = 0


def _template(pod: PodInfo) -> dict[str, Any]:
    containers = []
    for c in pod.containers:
        if c.init:
            continue
        res: dict[str, Any] = {}
        if c.requests:
            res["requests"] = dict(c.requests)
        if c.limits:
            res["limits"] = dict(c.limits)
        entry: dict[str, Any] = {"name": c.name, "image": c.image or "img", "resources": res}
        if c.env:
            entry["env"] = [{"name": k, "value": v} for k, v in sorted(c.env.items())]
        containers.append(entry)
    spec: dict[str, Any] = {"containers": containers}
    if pod.priority_class_name:
        spec["priorityClassName"] = pod.priority_class_name
    return {"metadata": {"labels": dict(pod.labels)}, "spec": spec}


class FakeKube:
    """KubePort in memory. ``calls`` lists every call; ``effects()`` the non-dry-run ones."""

    def __init__(
        self,
        bundle: EvidenceBundle,
        view: ClusterView,
        *,
        clock: Callable[[], datetime] | None = None,
        extra_nodes: tuple[str, ...] = ("gpu-node-02",),
    ) -> None:
        self.bundle, self.view, self.clock = bundle, view, clock
        self.node = view.node
        self.pods = {p.key: p for p in view.pods}
        self.extra_nodes = extra_nodes
        self.priority_classes = {pc.name: pc.value for pc in view.priority_classes}
        self.controllers: dict[str, dict[str, Any]] = {}
        for pod in view.pods:
            top = pod.top_owner
            if top is None or top.kind == "DaemonSet":
                continue
            key = f"{top.kind}/{pod.namespace}/{top.name}"
            self.controllers.setdefault(
                key,
                {
                    "kind": top.kind,
                    "metadata": {"namespace": pod.namespace, "name": top.name},
                    "spec": {"template": _template(pod)},
                },
            )
        self.calls: list[Call] = []
        self._faults: list[_Fault] = []

    # -- test controls ------------------------------------------------------------------
    def fail(
        self, method: str, exc: BaseException, *, nth: int = 1, dry_run: bool | None = None
    ) -> None:
        """Raise ``exc`` on the ``nth`` call of ``method`` (counting only calls whose
        dry_run flag equals ``dry_run`` when given). ``TimeoutError()`` models a hang cut off."""
        self._faults.append(_Fault(method, exc, nth, dry_run))

    def effects(self, method: str | None = None) -> list[Call]:
        """Calls that may change the cluster (dry_run=False)."""
        return [
            c for c in self.calls if c.dry_run is False and (method is None or c.method == method)
        ]

    def mutating_calls(self) -> list[Call]:
        return [c for c in self.calls if c.dry_run is not None]

    def template_container(self, key: str, name: str) -> dict[str, Any]:
        spec = self.controllers[key]["spec"]["template"]["spec"]
        return next(c for c in spec["containers"] if c["name"] == name)

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

    # -- reads --------------------------------------------------------------------------
    async def get_cluster_view(self, node: str) -> ClusterView:
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
            raise NotFoundError(f"node {node} not found")
        if self.clock is None:
            return self.bundle
        return self.bundle.model_copy(update={"collected_at": self.clock()})

    async def read_controller(self, kind: str, namespace: str, name: str) -> dict[str, object]:
        await self._enter("read_controller", kind, namespace, name)
        key = f"{kind}/{namespace}/{name}"
        if key not in self.controllers:
            raise NotFoundError(f"{key} not found")
        return copy.deepcopy(self.controllers[key])

    async def rollout_progress(
        self, kind: str, namespace: str, name: str, *, since: str = ""
    ) -> RolloutProgress:
        """Changes land at once here (not recorded in ``calls``: watching reads only)."""
        return RolloutProgress(kind=kind, namespace=namespace, name=name, desired=0)

    async def resize_progress(self, namespace: str, name: str, container: str) -> RolloutProgress:
        return RolloutProgress(kind="Pod", namespace=namespace, name=name, desired=0)

    async def pods_present(self, pods: list[tuple[str, str, str]]) -> list[str]:
        return []

    # -- effects ------------------------------------------------------------------------
    async def _node_flag(self, verb: str, node: str, *, dry_run: bool) -> Change:
        await self._enter(verb, node, dry_run=dry_run)
        if node != self.node.name:
            raise NotFoundError(f"node {node} not found")
        want = verb == "cordon"
        was = self.node.unschedulable
        if not dry_run:
            self.node = self.node.model_copy(update={"unschedulable": want})
        return Change(
            verb=verb,  # type: ignore[arg-type]
            kind="Node", name=node, dry_run=dry_run, patch={"spec": {"unschedulable": want}},
            patch_type="application/strategic-merge-patch+json",
            before={"unschedulable": was}, after={"unschedulable": want}, noop=was == want,
        )  # fmt: skip

    async def cordon(self, node: str, *, dry_run: bool) -> Change:
        return await self._node_flag("cordon", node, dry_run=dry_run)

    async def uncordon(self, node: str, *, dry_run: bool) -> Change:
        return await self._node_flag("uncordon", node, dry_run=dry_run)

    async def evict(self, namespace: str, name: str, *, dry_run: bool) -> EvictionOutcome:
        await self._enter("evict", namespace, name, dry_run=dry_run)
        key = f"{namespace}/{name}"
        if key not in self.pods:
            return EvictionOutcome(namespace=namespace, name=name, status="not_found")
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
        exists = name in self.priority_classes
        if not dry_run and not exists:
            self.priority_classes[name] = value
        return Change(
            verb="create_priority_class", kind="PriorityClass", name=name, dry_run=dry_run,
            patch={"value": value, "description": description}, noop=exists,
        )  # fmt: skip

    async def set_priority_class_name(
        self, kind: str, namespace: str, name: str, priority_class: str | None, *, dry_run: bool
    ) -> Change:
        await self._enter(
            "set_priority_class_name", kind, namespace, name, priority_class, dry_run=dry_run
        )
        key = f"{kind}/{namespace}/{name}"
        if key not in self.controllers:
            raise NotFoundError(f"{key} not found")
        spec = self.controllers[key]["spec"]["template"]["spec"]
        was = spec.get("priorityClassName")
        if not dry_run:
            if priority_class is None:
                spec.pop("priorityClassName", None)
            else:
                spec["priorityClassName"] = priority_class
        return Change(
            verb="set_priority_class", kind=kind, namespace=namespace, name=name,
            dry_run=dry_run,
            patch={"spec": {"template": {"spec": {"priorityClassName": priority_class}}}},
            before={"priorityClassName": was}, noop=was == priority_class,
            after={"priorityClassName": spec.get("priorityClassName")},
        )  # fmt: skip

    async def patch_container_resources(
        self,
        kind: str,
        namespace: str,
        name: str,
        container: str,
        *,
        requests: dict[str, str],
        limits: dict[str, str],
        env: dict[str, str],
        dry_run: bool,
    ) -> Change:
        await self._enter(
            "patch_container_resources", kind, namespace, name, container,
            requests=dict(requests), limits=dict(limits), env=dict(env), dry_run=dry_run,
        )  # fmt: skip
        key = f"{kind}/{namespace}/{name}"
        if key not in self.controllers:
            raise NotFoundError(f"{key} not found")
        c = self.template_container(key, container)
        res = c.setdefault("resources", {})
        env_now = {e["name"]: dict(e) for e in c.get("env", [])}
        # the gateway's before shape (bot.kube.patching.patch_container_resources)
        before = {
            "container": container,
            "resources": {
                "requests": dict(res.get("requests") or {}),
                "limits": dict(res.get("limits") or {}),
            },
            "env": {k: env_now.get(k) for k in env},
        }
        if not dry_run:
            for section, values in (("requests", requests), ("limits", limits)):
                current = dict(res.get(section) or {})
                for k, v in values.items():
                    if v is None:
                        current.pop(k, None)  # None = was unset: remove (undo)
                    else:
                        current[k] = v
                res[section] = current
            for k, v in env.items():
                if v is None:
                    env_now.pop(k, None)
                elif isinstance(v, dict):
                    env_now[k] = dict(v)
                else:
                    env_now[k] = {"name": k, "value": v}
            c["env"] = [env_now[k] for k in sorted(env_now)]
        patch = {"resources": {"requests": requests, "limits": limits}, "env": env}
        return Change(
            verb="patch_resources", kind=kind, namespace=namespace, name=name, dry_run=dry_run,
            patch={"spec": {"template": {"spec": {"containers": [{"name": container, **patch}]}}}},
            patch_type="application/strategic-merge-patch+json", before=before,
            after={"resources": {k: dict(v) for k, v in c.get("resources", {}).items()}},
        )  # fmt: skip


@dataclass
class Posted:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None
    edits: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)


@dataclass
class Ephemeral:
    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None


class FakeChat:
    """ChatPort in memory. ``messages`` by ts; ``thread(ts)`` lists replies in order."""

    def __init__(self, usergroups: dict[str, list[str]] | None = None) -> None:
        self.messages: dict[str, Posted] = {}
        self.ephemerals: list[Ephemeral] = []
        self.views: list[tuple[str, dict[str, Any]]] = []
        self.uploads: list[dict[str, Any]] = []
        self.names: dict[str, str] = {}
        #: people's Slack locales (``users.info`` with include_locale); absent: unknown
        self.locales: dict[str, str] = {}
        self.usergroups = usergroups or {}
        self._ts = itertools.count(1)
        #: errors the next ``post`` calls raise, in order (as Slack's not_in_channel would)
        self.post_failures: list[Exception] = []

    async def post(
        self, channel: str, *, text: str, blocks: list[dict[str, object]], thread_ts: str | None
    ) -> str:
        await asyncio.sleep(0)
        if self.post_failures:
            raise self.post_failures.pop(0)
        ts = f"1700000000.{next(self._ts):06d}"
        self.messages[ts] = Posted(channel, ts, text, list(blocks), thread_ts)
        return ts

    async def update(
        self, channel: str, ts: str, *, text: str, blocks: list[dict[str, object]]
    ) -> None:
        await asyncio.sleep(0)
        msg = self.messages.get(ts)
        if msg is None or msg.channel != channel:
            raise SlackError(f"message_not_found: {channel}/{ts}")
        msg.edits.append((msg.text, msg.blocks))
        msg.text, msg.blocks = text, list(blocks)

    async def post_ephemeral(
        self,
        channel: str,
        user: str,
        *,
        text: str,
        blocks: list[dict[str, object]],
        thread_ts: str | None = None,
    ) -> None:
        self.ephemerals.append(Ephemeral(channel, user, text, list(blocks), thread_ts))

    async def upload(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        filename: str,
        title: str,
        content: str | bytes,
        alt_txt: str | None = None,
    ) -> None:
        self.uploads.append(
            {"channel": channel, "thread_ts": thread_ts, "filename": filename, "title": title,
             "content": content, "alt_txt": alt_txt}
        )  # fmt: skip

    async def upload_files(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        files: list[tuple[str, str, str]],
        comment: str,
    ) -> None:
        for name, title, content in files:
            self.uploads.append(
                {"channel": channel, "thread_ts": thread_ts, "filename": name, "title": title,
                 "content": content, "alt_txt": None, "comment": comment}
            )  # fmt: skip

    async def open_view(self, trigger_id: str, view: dict[str, object]) -> str:
        self.views.append((trigger_id, dict(view)))
        return f"V{len(self.views):04d}"

    async def usergroup_members(self, usergroup_id: str) -> list[str]:
        return list(self.usergroups.get(usergroup_id, []))

    async def user_name(self, user_id: str) -> str:
        return self.names.get(user_id, user_id)

    async def user_locale(self, user_id: str) -> str | None:
        return self.locales.get(user_id)

    # -- test helpers ---------------------------------------------------------------------
    def roots(self) -> list[Posted]:
        return [m for m in self.messages.values() if m.thread_ts is None]

    def thread(self, ts: str) -> list[Posted]:
        return [m for m in self.messages.values() if m.thread_ts == ts]

    def ephemerals_for(self, user: str) -> list[str]:
        return [e.text for e in self.ephemerals if e.user == user]

    def buttons(self, ts: str) -> list[tuple[str, str]]:
        """(action_id, value) of every button on the message now."""
        out = []
        for block in self.messages[ts].blocks:
            for el in block.get("elements", []) if block.get("type") == "actions" else []:
                out.append((str(el["action_id"]), str(el.get("value", ""))))
        return out
