"""Node remedy primitives, the two halves of ``kubectl drain``: cordon/uncordon and
policy/v1 eviction. Sync (run in threads by the gateway); each supports server-side dry run.

Cordon records ``{"unschedulable": bool}`` in ``Change.before`` for undo; an eviction has
no undo (a recreated pod is a new pod), so it returns an ``EvictionOutcome`` instead: a
PodDisruptionBudget refusal is an answer (``blocked``, naming the budget), not an error.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.core.model.changes import Change, EvictionOutcome
from bot.kube.doing import Doing
from bot.kube.errors import status_body
from bot.kube.patching import Obj, dry_run_query, patch_object
from bot.kube.transport import SMP, Transport
from bot.kube.unanswered import unanswered

_PDB_NAMED = re.compile(r"disruption budget (\S+) needs (\d+) healthy pods? and has (\d+)")
_PDB_COUNTS = re.compile(r"needs (\d+) healthy pods? and has (\d+)")


def set_unschedulable(t: Transport, node: str, value: bool, *, dry_run: bool) -> Change:
    """Cordon (True) or uncordon (False) like kubectl: SMP of ``spec.unschedulable``."""
    verb = "cordon" if value else "uncordon"
    path = f"/api/v1/nodes/{node}"
    current = t.get(path)
    before = bool((current.get("spec") or {}).get("unschedulable"))
    patch: Obj = {"spec": {"unschedulable": value}}
    base: dict[str, Any] = {
        "verb": verb,
        "kind": "Node",
        "name": node,
        "dry_run": dry_run,
        "patch": patch,
        "patch_type": SMP,
        "before": {"unschedulable": before},
    }
    if before == value:
        return Change(**base, noop=True)
    what = Doing.of("cordon", node=node) if value else Doing.of("uncordon", node=node)
    with unanswered(t, what, base, dry_run=dry_run):
        answer = patch_object(t, path, patch, dry_run=dry_run)
    spec, meta = answer.get("spec") or {}, answer.get("metadata") or {}
    after = {
        "unschedulable": bool(spec.get("unschedulable")),
        "resourceVersion": meta.get("resourceVersion"),
    }
    return Change(**base, after=after)


def set_annotations(
    t: Transport, node: str, annotations: dict[str, str | None], *, dry_run: bool
) -> Change:
    """Set (or, for None, remove) node annotations with one strategic merge patch; records
    each key's previous value (None: absent) for undo. Used only for the autoscalers'
    scale-down protection, which the Node admission policy allows."""
    path = f"/api/v1/nodes/{node}"
    current = (t.get(path).get("metadata") or {}).get("annotations") or {}
    before = {k: current.get(k) for k in sorted(annotations)}
    patch: Obj = {"metadata": {"annotations": dict(annotations)}}
    base: dict[str, Any] = {
        "verb": "annotate_node",
        "kind": "Node",
        "name": node,
        "dry_run": dry_run,
        "patch": patch,
        "patch_type": SMP,
        "before": {"annotations": before},
    }
    if all(current.get(k) == v for k, v in annotations.items()):
        return Change(**base, noop=True)
    answer = patch_object(t, path, patch, dry_run=dry_run)
    meta = answer.get("metadata") or {}
    now = meta.get("annotations") or {}
    after = {
        "annotations": {k: now.get(k) for k in sorted(annotations)},
        "resourceVersion": meta.get("resourceVersion"),
    }
    return Change(**base, after=after)


def eviction_body(namespace: str, name: str, *, dry_run: bool) -> Obj:
    body: Obj = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    if dry_run:
        body["deleteOptions"] = {"dryRun": ["All"]}
    return body


def _selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    if not selector:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels.get(key) in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def _find_pdb(t: Transport, namespace: str, pod: str) -> str | None:
    try:
        labels = (t.get(f"/api/v1/namespaces/{namespace}/pods/{pod}").get("metadata") or {}).get(
            "labels"
        ) or {}
        pdbs = t.list_all(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets")
    except ApiException:
        return None
    for pdb in pdbs:
        if _selector_matches((pdb.get("spec") or {}).get("selector"), labels):
            return str((pdb.get("metadata") or {}).get("name"))
    return None


def _blocked(t: Transport, namespace: str, name: str, exc: ApiException) -> EvictionOutcome:
    status = status_body(exc)
    texts = [c.get("message", "") for c in (status.get("details") or {}).get("causes") or []]
    texts.append(status.get("message") or "")
    pdb, needs, has = None, None, None
    for text in texts:
        if m := _PDB_NAMED.search(text):
            pdb, needs, has = m.group(1), int(m.group(2)), int(m.group(3))
            break
        if m := _PDB_COUNTS.search(text):
            needs, has = int(m.group(1)), int(m.group(2))
    pdb = pdb or _find_pdb(t, namespace, name)
    reason = f"blocked by PodDisruptionBudget {pdb or '(unknown)'}"
    if needs is not None:
        reason += f": needs {needs} healthy, has {has}"
    return EvictionOutcome(
        namespace=namespace,
        name=name,
        status="blocked",
        reason=reason,
        reason_key="eviction_blocked",
        reason_params={"pdb": pdb or "", "needs": needs, "has": has},
        pdb_name=pdb,
        pdb_needs=needs,
        pdb_has=has,
    )


def _is_budget_refusal(exc: ApiException) -> bool:
    """A 429 from a PodDisruptionBudget (cause type DisruptionBudget, or its message), as
    opposed to the API server's own request throttling, which is also a 429."""
    status = status_body(exc)
    causes = (status.get("details") or {}).get("causes") or []
    if any(
        c.get("reason") == "DisruptionBudget" or c.get("type") == "DisruptionBudget" for c in causes
    ):
        return True
    texts = [str(status.get("message") or ""), *(str(c.get("message", "")) for c in causes)]
    return any("disruption budget" in x.lower() or _PDB_COUNTS.search(x) for x in texts)


def evict(t: Transport, namespace: str, name: str, *, dry_run: bool) -> EvictionOutcome:
    """policy/v1 Eviction, with the API server's semantics (reference kubernetes.md §2):
    429 from a PodDisruptionBudget -> blocked (naming the budget); 429 from throttling ->
    failed, retry later; 500 for a pod under several budgets -> blocked (the Eviction API
    cannot evict it); other 500 -> failed; 404 -> not_found."""
    pending = {"verb": "evict", "kind": "Pod", "namespace": namespace, "name": name}
    try:
        what = Doing.of("evict", namespace=namespace, name=name)
        with unanswered(t, what, pending, dry_run=dry_run):
            t.request(
                "POST",
                f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
                query=dry_run_query(dry_run),
                body=eviction_body(namespace, name, dry_run=dry_run),
            )
    except ApiException as exc:
        if exc.status == 429 and _is_budget_refusal(exc):
            return _blocked(t, namespace, name, exc)
        if exc.status == 429:
            return EvictionOutcome(
                namespace=namespace,
                name=name,
                status="failed",
                reason="the API server is throttling requests (429 Too Many Requests); retry later",
                reason_key="eviction_throttled",
            )
        if exc.status == 404:
            return EvictionOutcome(
                namespace=namespace,
                name=name,
                status="not_found",
                reason="the pod no longer exists",
                reason_key="eviction_pod_gone",
            )
        if exc.status == 500:
            message = str(status_body(exc).get("message") or exc.reason or "server error")
            if "more than one poddisruptionbudget" in message.lower():
                return EvictionOutcome(
                    namespace=namespace,
                    name=name,
                    status="blocked",
                    reason="more than one PodDisruptionBudget covers this pod, which the "
                    "Eviction API does not support; remove the extra budget or move the "
                    "pod by hand",
                    reason_key="eviction_several_budgets",
                )
            return EvictionOutcome(
                namespace=namespace,
                name=name,
                status="failed",
                reason=f"the API server failed the eviction ({message}); check the API "
                "server's health and apply again",
                reason_key="eviction_server_failed",
                reason_params={"said": message},
            )
        raise
    return EvictionOutcome(
        namespace=namespace, name=name, status="dry_run" if dry_run else "evicted"
    )
