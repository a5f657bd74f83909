"""Controller template patches: a pod template's ``priorityClassName`` and a container's
resources and env, plus the patch primitives the other remedy modules share. Sync (run in
threads by the gateway); each supports server-side dry run (``dryRun=All``) and captures the
state undo needs in ``Change.before``.

Patches are strategic merge patches (lists of containers merge by ``name``, env by
``name``), exactly what is recorded in ``Change.patch``. Cordon and eviction live in
``draining``, PriorityClass creation in ``prioritizing``, in-place pod resize in ``resizing``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.model.actions import PATCHABLE_KINDS
from bot.core.model.changes import Change, EnvValues, ResourceValues
from bot.errors import InvalidObjectError, NotFoundError
from bot.kube.doing import Doing
from bot.kube.reading import controller_path
from bot.kube.transport import SMP, Transport
from bot.kube.unanswered import unanswered

Obj = dict[str, Any]


def dry_run_query(dry_run: bool) -> list[tuple[str, Any]]:
    """The query parameters of a server-side dry run (none for a real write)."""
    return [("dryRun", "All")] if dry_run else []


def patch_object(t: Transport, path: str, body: Obj, *, dry_run: bool) -> Obj:
    """One strategic merge patch of ``path``; returns the object the server answered."""
    return t.request(  # type: ignore[no-any-return]
        "PATCH", path, query=dry_run_query(dry_run), body=body, content_type=SMP
    )


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
    what = Doing.of("set_priority_class_name", kind=kind, namespace=namespace, name=name)
    with unanswered(t, what, base, dry_run=dry_run):
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
    pending = {
        "verb": "patch_resources",
        "kind": kind,
        "namespace": namespace,
        "name": name,
        "dry_run": dry_run,
        "patch": patch,
        "patch_type": SMP,
        "before": before,
    }
    patched = Doing.of("patch_object", kind=kind, namespace=namespace, name=name)
    with unanswered(t, patched, pending, dry_run=dry_run):
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
