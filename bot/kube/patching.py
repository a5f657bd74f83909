"""Remedy primitives: cordon/uncordon, eviction, PriorityClass, controller template patches,
in-place pod resize. Sync (run in threads by the gateway); each supports server-side dry
run (``dryRun=All``) and captures the state undo needs in ``Change.before``.

Patches are strategic merge patches (lists of containers merge by ``name``, env by
``name``), exactly what is recorded in ``Change.patch``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.core.actions import PATCHABLE_KINDS
from bot.core.changes import Change, EnvValues, EvictionOutcome, ResourceValues
from bot.errors import ConflictError, InvalidObjectError, NotFoundError
from bot.kube.errors import status_body
from bot.kube.reading import controller_path
from bot.kube.transport import SMP, Transport

Obj = dict[str, Any]

_PDB_NAMED = re.compile(r"disruption budget (\S+) needs (\d+) healthy pods? and has (\d+)")
_PDB_COUNTS = re.compile(r"needs (\d+) healthy pods? and has (\d+)")


def _dry(dry_run: bool) -> list[tuple[str, Any]]:
    return [("dryRun", "All")] if dry_run else []


def patch_object(t: Transport, path: str, body: Obj, *, dry_run: bool) -> Obj:
    return t.request(  # type: ignore[no-any-return]
        "PATCH", path, query=_dry(dry_run), body=body, content_type=SMP
    )


# -- cordon -----------------------------------------------------------------------------
def set_unschedulable(t: Transport, node: str, value: bool, *, dry_run: bool) -> Change:
    """Cordon (True) or uncordon (False) like kubectl: SMP of ``spec.unschedulable``."""
    verb = "cordon" if value else "uncordon"
    path = f"/api/v1/nodes/{node}"
    current = t.get(path)
    before = bool((current.get("spec") or {}).get("unschedulable"))
    patch: Obj = {"spec": {"unschedulable": value}}
    if before == value:
        return Change(
            verb=verb,
            kind="Node",
            name=node,
            dry_run=dry_run,
            patch=patch,
            patch_type=SMP,
            before={"unschedulable": before},
            noop=True,
        )
    answer = patch_object(t, path, patch, dry_run=dry_run)
    return Change(
        verb=verb,
        kind="Node",
        name=node,
        dry_run=dry_run,
        patch=patch,
        patch_type=SMP,
        before={"unschedulable": before},
        after={
            "unschedulable": bool((answer.get("spec") or {}).get("unschedulable")),
            "resourceVersion": (answer.get("metadata") or {}).get("resourceVersion"),
        },
    )


# -- eviction ---------------------------------------------------------------------------
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
    try:
        t.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            query=_dry(dry_run),
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
            )
        if exc.status == 404:
            return EvictionOutcome(
                namespace=namespace,
                name=name,
                status="not_found",
                reason="the pod no longer exists",
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
                )
            return EvictionOutcome(
                namespace=namespace,
                name=name,
                status="failed",
                reason=f"the API server failed the eviction ({message}); check the API "
                "server's health and apply again",
            )
        raise
    return EvictionOutcome(
        namespace=namespace, name=name, status="dry_run" if dry_run else "evicted"
    )


# -- priority classes ------------------------------------------------------------------
def priority_class_body(name: str, value: int, *, description: str) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpunode"}},
        "value": value,
        "globalDefault": False,
        "description": description,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def ensure_priority_class(
    t: Transport, name: str, value: int, *, description: str, dry_run: bool
) -> Change:
    path = f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
    body = priority_class_body(name, value, description=description)
    try:
        current = t.get(path)
    except ApiException as exc:
        if exc.status != 404:
            raise
        answer = t.request(
            "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", query=_dry(dry_run), body=body
        )
        return Change(
            verb="create_priority_class",
            kind="PriorityClass",
            name=name,
            dry_run=dry_run,
            patch=body,
            before={"exists": False},
            after={"value": answer.get("value"), "exists": True},
        )
    if int(current.get("value") or 0) == value:
        return Change(
            verb="create_priority_class",
            kind="PriorityClass",
            name=name,
            dry_run=dry_run,
            patch=body,
            noop=True,
            before={"exists": True, "value": value},
        )
    raise ConflictError(
        f"PriorityClass {name} exists with value {current.get('value')}, not {value}; a "
        "PriorityClass value is immutable - pick another name or delete and recreate it "
        "(pods keep the priority they were admitted with)"
    )


# -- controller templates ---------------------------------------------------------------
def _template_prefix(kind: str) -> list[str]:
    return (
        ["spec", "jobTemplate", "spec", "template"] if kind == "CronJob" else ["spec", "template"]
    )


def _nest(keys: list[str], leaf: Obj) -> Obj:
    out = leaf
    for key in reversed(keys):
        out = {key: out}
    return out


def _pod_spec(obj: Obj, kind: str) -> Obj:
    node: Any = obj
    for key in [*_template_prefix(kind), "spec"]:
        node = (node or {}).get(key) or {}
    return node  # type: ignore[no-any-return]


def read_controller(t: Transport, kind: str, namespace: str, name: str) -> Obj:
    try:
        path = controller_path(kind, namespace, name)
    except ValueError as exc:
        raise InvalidObjectError(str(exc)) from exc
    return t.get(path)  # type: ignore[no-any-return]


def after_state(answer: Obj) -> Obj:
    meta = answer.get("metadata") or {}
    return {"resourceVersion": meta.get("resourceVersion"), "generation": meta.get("generation")}


def _require_patchable(kind: str, namespace: str, name: str) -> None:
    if kind not in PATCHABLE_KINDS:
        raise InvalidObjectError(
            f"gpunode patches only {' and '.join(PATCHABLE_KINDS)} templates, not {kind} "
            f"{namespace}/{name}; change that workload's controller by hand"
        )


def set_priority_class_name(
    t: Transport,
    kind: str,
    namespace: str,
    name: str,
    priority_class: str | None,
    *,
    dry_run: bool,
) -> Change:
    _require_patchable(kind, namespace, name)
    current = read_controller(t, kind, namespace, name)
    old = _pod_spec(current, kind).get("priorityClassName")
    patch = _nest([*_template_prefix(kind), "spec"], {"priorityClassName": priority_class})
    base = {
        "verb": "set_priority_class",
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "dry_run": dry_run,
        "patch": patch,
        "patch_type": SMP,
        "before": {
            "priorityClassName": old,
            "resourceVersion": (current.get("metadata") or {}).get("resourceVersion"),
        },
    }
    if old == priority_class:
        return Change(**base, noop=True)
    answer = patch_object(t, controller_path(kind, namespace, name), patch, dry_run=dry_run)
    return Change(
        **base,
        after={
            "priorityClassName": _pod_spec(answer, kind).get("priorityClassName"),
            **after_state(answer),
        },
    )


def find_container(spec: Obj, container: str, *, what: str) -> Obj:
    for c in spec.get("containers") or []:
        if c.get("name") == container:
            return c  # type: ignore[no-any-return]
    names = ", ".join(c.get("name", "") for c in spec.get("containers") or [])
    raise NotFoundError(f"{what} has no container {container!r} (containers: {names})")


def container_patch(
    container: str,
    *,
    requests: Mapping[str, str | None],
    limits: Mapping[str, str | None],
    env: EnvValues,
) -> Obj:
    """One strategic-merge container entry (merged by name).

    A None value removes: a resource key becomes ``null`` (SMP deletes it), an env variable
    becomes ``{"name": X, "$patch": "delete"}``. A dict env value is a whole entry to restore
    (e.g. one with ``valueFrom``); a string is a literal value. Undo relies on all three.
    """
    entry: Obj = {"name": container}
    resources: Obj = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        entry["resources"] = resources
    items: list[Obj] = []
    for k, v in env.items():
        if v is None:
            items.append({"name": k, "$patch": "delete"})
        elif isinstance(v, dict):
            items.append({**v, "name": k})
        else:
            items.append({"name": k, "value": v})
    if items:
        entry["env"] = items
    return entry


def patch_container_resources(
    t: Transport,
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
    _require_patchable(kind, namespace, name)
    current = read_controller(t, kind, namespace, name)
    found = find_container(_pod_spec(current, kind), container, what=f"{kind} {namespace}/{name}")
    old_env = {e.get("name"): e for e in found.get("env") or []}
    before = {
        "container": container,
        "resources": found.get("resources") or {},
        "env": {k: old_env.get(k) for k in env},  # None = the variable was absent
        "resourceVersion": (current.get("metadata") or {}).get("resourceVersion"),
    }
    entry = container_patch(container, requests=requests, limits=limits, env=env)
    patch = _nest([*_template_prefix(kind), "spec"], {"containers": [entry]})
    answer = patch_object(t, controller_path(kind, namespace, name), patch, dry_run=dry_run)
    now = find_container(_pod_spec(answer, kind), container, what=f"{kind} {namespace}/{name}")
    return Change(
        verb="patch_resources",
        kind=kind,
        namespace=namespace,
        name=name,
        dry_run=dry_run,
        patch=patch,
        patch_type=SMP,
        before=before,
        after={"resources": now.get("resources") or {}, **after_state(answer)},
    )
