"""In-place pod resize through the ``pods/<name>/resize`` subresource (Kubernetes >= 1.33).

Sync (run in a thread by the gateway). Rules by version (reference/kubernetes.md §3):
the subresource exists from 1.33 (discovered in ``/api/v1``); lowering a memory limit in
place needs ``resizePolicy: RestartContainer`` on 1.33 and is best effort from 1.34.
"""

from __future__ import annotations

import re

from bot.core.model.changes import Change, ResourceValues
from bot.core.model.quantity import parse_quantity
from bot.errors import InvalidObjectError, KubeError
from bot.kube.doing import Doing
from bot.kube.patching import after_state, container_patch, find_container, patch_object
from bot.kube.transport import SMP, Transport
from bot.kube.unanswered import unanswered


def _minor(version: str | None) -> int | None:
    m = re.match(r"v?(\d+)\.(\d+)", version or "")
    return int(m.group(2)) if m and m.group(1) == "1" else None


def resize_pod(
    t: Transport,
    namespace: str,
    name: str,
    container: str,
    *,
    requests: ResourceValues,
    limits: ResourceValues,
    dry_run: bool,
    server_version: str | None,
    resources: set[str],
) -> Change:
    """Patch ``pods/<name>/resize`` (kube >= 1.33). Memory-limit decreases need
    ``resizePolicy: RestartContainer`` on 1.33; from 1.34 they are best effort."""
    if "pods/resize" not in resources:
        raise KubeError(
            f"the API server ({server_version or 'unknown version'}) does not serve "
            "pods/resize; in-place resize needs Kubernetes >= 1.33 - patch the controller "
            "instead (a rollout)",
            code="resize_unsupported",
        )
    pod = t.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    found = find_container(pod.get("spec") or {}, container, what=f"pod {namespace}/{name}")
    old = found.get("resources") or {}
    old_mem = (old.get("limits") or {}).get("memory")
    new_mem = limits.get("memory")
    if old_mem and new_mem and parse_quantity(new_mem).cmp(parse_quantity(old_mem)) < 0:
        policy = {
            p.get("resourceName"): p.get("restartPolicy") for p in found.get("resizePolicy") or []
        }
        minor = _minor(server_version)
        if minor is not None and minor < 34 and policy.get("memory") != "RestartContainer":
            raise InvalidObjectError(
                f"Kubernetes 1.{minor} forbids lowering a memory limit in place unless the "
                "container's memory resizePolicy is RestartContainer; patch the controller "
                "instead (a rollout) or upgrade to >= 1.34"
            )
    patch = {
        "spec": {
            "containers": [container_patch(container, requests=requests, limits=limits, env={})]
        }
    }
    pending = {
        "verb": "resize",
        "kind": "Pod",
        "namespace": namespace,
        "name": name,
        "dry_run": dry_run,
        "patch": patch,
        "patch_type": SMP,
        "before": {"container": container, "resources": old},
    }
    resizing = Doing.of("resize_pod", namespace=namespace, name=name)
    with unanswered(t, resizing, pending, dry_run=dry_run):
        answer = patch_object(
            t, f"/api/v1/namespaces/{namespace}/pods/{name}/resize", patch, dry_run=dry_run
        )
    now = find_container(answer.get("spec") or {}, container, what=f"pod {namespace}/{name}")
    return Change(
        verb="resize",
        kind="Pod",
        namespace=namespace,
        name=name,
        dry_run=dry_run,
        patch=patch,
        patch_type=SMP,
        before={"container": container, "resources": old},
        after={"resources": now.get("resources") or {}, **after_state(answer)},
    )
