"""Create gpunode's PriorityClass if it is missing. Sync (run in threads by the gateway);
supports server-side dry run.

A PriorityClass value is immutable, so an existing class with another value is a conflict
for a person to resolve, never something to patch. Pods name the class through their
controller's template: that patch is ``patching.set_priority_class_name``.
"""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from bot.core.model.changes import Change
from bot.errors import ConflictError
from bot.kube.doing import Doing
from bot.kube.patching import Obj, dry_run_query
from bot.kube.transport import Transport
from bot.kube.unanswered import unanswered


def priority_class_body(
    name: str, value: int, *, description: str, preemption_policy: str = "Never"
) -> Obj:
    """gpunode's class. ``preemptionPolicy`` defaults to Never: a pod restarted with it is
    queued ahead of lower priorities but never preempts running pods (on a full fleet the
    training waits instead of killing other people's work)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpunode"}},
        "value": value,
        "globalDefault": False,
        "description": description,
        "preemptionPolicy": preemption_policy,
    }


def ensure_priority_class(
    t: Transport,
    name: str,
    value: int,
    *,
    description: str,
    dry_run: bool,
    preemption_policy: str = "Never",
) -> Change:
    path = f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
    body = priority_class_body(
        name, value, description=description, preemption_policy=preemption_policy
    )
    try:
        current = t.get(path)
    except ApiException as exc:
        if exc.status != 404:
            raise
        pending = {
            "verb": "create_priority_class",
            "kind": "PriorityClass",
            "name": name,
            "dry_run": dry_run,
            "patch": body,
            "before": {"exists": False},
        }
        with unanswered(t, Doing.of("create_priority_class", name=name), pending, dry_run=dry_run):
            answer = t.request(
                "POST",
                "/apis/scheduling.k8s.io/v1/priorityclasses",
                query=dry_run_query(dry_run),
                body=body,
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
