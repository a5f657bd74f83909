"""The pieces ``FakeKube`` is built from: the analysis fixtures, call records, pod
templates derived from pods, PodDisruptionBudgets, and strategic-merge helpers."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.core.model.changes import EvictionOutcome, ResourceValues
from bot.core.model.cluster import ClusterView, PodInfo
from bot.core.model.evidence import EvidenceBundle
from bot.errors import NotFoundError

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
class Fault:
    method: str
    exc: BaseException
    nth: int
    dry_run: bool | None
    seen: int = 0


def pod_template(pod: PodInfo) -> dict[str, Any]:
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


@dataclass(frozen=True)
class Budget:
    """A PodDisruptionBudget as the fake knows it: counted over the fake's own pods."""

    namespace: str
    name: str
    selector: dict[str, str]
    min_available: int | None = None
    max_unavailable: int | None = None

    def covers(self, pod: PodInfo) -> bool:
        return pod.namespace == self.namespace and all(
            pod.labels.get(k) == v for k, v in self.selector.items()
        )


def merge_resources(
    old: dict[str, Any], requests: ResourceValues, limits: ResourceValues
) -> dict[str, Any]:
    """A strategic merge of resources: a None value deletes the key."""
    out = copy.deepcopy(old)
    for section, values in (("requests", requests), ("limits", limits)):
        if not values:
            continue
        current = dict(out.get(section) or {})
        for k, v in values.items():
            if v is None:
                current.pop(k, None)
            else:
                current[k] = v
        out[section] = current
    return out


def find_container(spec: dict[str, Any], container: str, *, what: str) -> dict[str, Any]:
    for c in spec.get("containers") or []:
        if c.get("name") == container:
            return c  # type: ignore[no-any-return]
    names = ", ".join(c.get("name", "") for c in spec.get("containers") or [])
    raise NotFoundError(f"{what} has no container {container!r} (containers: {names})")


def budget_refusal(
    budgets: Sequence[Budget], pods: Sequence[PodInfo], pod: PodInfo
) -> EvictionOutcome | None:
    """The eviction subresource's budget check (see gpunode_sandbox/kubesim/eviction.py)."""
    if pod.phase in ("Succeeded", "Failed", "Pending") or pod.deleting:
        return None
    budgets = [b for b in budgets if b.covers(pod)]
    if len(budgets) > 1:
        return EvictionOutcome(
            namespace=pod.namespace,
            name=pod.name,
            status="blocked",
            reason="more than one PodDisruptionBudget covers this pod, which the "
            "Eviction API does not support; remove the extra budget or move the pod by hand",
            reason_key="eviction_several_budgets",
        )
    if not budgets:
        return None
    budget = budgets[0]
    covered = [p for p in pods if budget.covers(p)]
    healthy = sum(1 for p in covered if p.phase == "Running" and not p.deleting)
    if budget.max_unavailable is not None:
        desired = max(0, len(covered) - budget.max_unavailable)
    else:
        desired = 1 if budget.min_available is None else budget.min_available
    if healthy - desired > 0:
        return None
    return EvictionOutcome(
        namespace=pod.namespace,
        name=pod.name,
        status="blocked",
        reason=f"blocked by PodDisruptionBudget {budget.name}: needs {desired} healthy, "
        f"has {healthy}",
        reason_key="eviction_blocked",
        reason_params={"pdb": budget.name, "needs": desired, "has": healthy},
        pdb_name=budget.name,
        pdb_needs=desired,
        pdb_has=healthy,
    )
