"""API-server admission for pods the stand-in creates: RuntimeClass and critical priority.

- RuntimeClass admission (plugin/pkg/admission/runtimeclass): a pod naming a RuntimeClass
  that does not exist is refused: ``pod rejected: RuntimeClass "NAME" not found``.
- Critical priority classes (``system-node-critical``, ``system-cluster-critical``) outside
  ``kube-system`` need a ResourceQuota in the namespace whose ``scopeSelector`` matches the
  class, as GKE configures the ResourceQuota plugin (``limitedResources``; see the Kubernetes
  docs "Limit Priority Class consumption by default"): ``insufficient quota to match these
  scopes: [{PriorityClass In [system-node-critical system-cluster-critical]}]``. The stand-in
  is as strict as the strictest common server. A matching quota's ``hard.pods`` is enforced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.statuses import ApiError

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]
CRITICAL_CLASSES = ("system-node-critical", "system-cluster-critical")


def _forbidden(name: str, message: str) -> ApiError:
    return ApiError(
        403, f'pods "{name}" is forbidden: {message}', reason="Forbidden", name=name, kind="pods"
    )


def _scope_matches(quota: Obj, priority_class: str) -> bool:
    selector = (quota.get("spec") or {}).get("scopeSelector") or {}
    for expr in selector.get("matchExpressions") or []:
        if expr.get("scopeName") != "PriorityClass":
            continue
        op, values = expr.get("operator"), expr.get("values") or []
        if (op == "In" and priority_class in values) or (
            op == "NotIn" and priority_class not in values
        ):
            return True
        if op == "Exists":
            return True
    return False


def _pods_in_scope(api: ApiCore, namespace: str, priority_class: str) -> int:
    return sum(
        1
        for p in api.store.list("pods", namespace)
        if (p.get("spec") or {}).get("priorityClassName") == priority_class
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    )


def check_pod(api: ApiCore, pod: Obj) -> None:
    """Raise the 403 a real API server answers for this pod, if any."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    name, namespace = meta["name"], meta.get("namespace", "default")
    handler = spec.get("runtimeClassName")
    if handler and api.store.get("runtimeclasses", None, handler) is None:
        raise _forbidden(name, f'pod rejected: RuntimeClass "{handler}" not found')
    pc = spec.get("priorityClassName")
    if pc not in CRITICAL_CLASSES or namespace == "kube-system":
        return
    quotas = [q for q in api.store.list("resourcequotas", namespace) if _scope_matches(q, pc)]
    if not quotas:
        raise ApiError(
            403,
            "insufficient quota to match these scopes: "
            f"[{{PriorityClass In [{' '.join(CRITICAL_CLASSES)}]}}]",
            reason="Forbidden",
            name=name,
            kind="pods",
        )
    for q in quotas:
        hard = ((q.get("spec") or {}).get("hard") or {}).get("pods")
        used = _pods_in_scope(api, namespace, pc)
        if hard is not None and used + 1 > int(str(hard)):
            raise _forbidden(
                name,
                f"exceeded quota: {q['metadata']['name']}, requested: pods=1, "
                f"used: pods={used}, limited: pods={hard}",
            )
