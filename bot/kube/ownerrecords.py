"""Controllers and PodDisruptionBudgets as the owner informers keep them: slim records holding
every field a diagnosis reads of them, and nothing else. Pure (no I/O); run in the page
decoder's process for a list page (``*_records_page``), so this module imports no model and no
``kubernetes`` client (see ``bot.kube.decoding``).

What reads them, field by field (a record must read the same as the object the API serves):

- the owner-chain walk (``bot.kube.reading.owner_chain``): ``metadata.ownerReferences``, of
  which only the controller's (``controller: true``) is ever read. Of a ReplicaSet and a
  CronJob nothing else is read (no remedy reads their rollout facts: a ReplicaSet's are its
  Deployment's, a CronJob's Job is the workload; ``CHAIN_ONLY``), so their records hold
  their name and controller reference only, and a ReplicaSet that neither wants nor has a
  pod (a Deployment's old revision, ``revisionHistoryLimit`` of them each: most of a
  cluster's ReplicaSets) is not kept at all: a pod of one is read with a GET;
- the rollout facts (``bot.kube.rollouts.parse_workload``): ``kind``, ``apiVersion``, the
  name, namespace and labels (Argo CD, Flux, Helm), the annotations
  ``bot.core.model.annotations`` names (``CONTROLLER_ANNOTATIONS`` and the
  ``HELM_KEY_ANNOTATION`` keys), ``spec.replicas``, ``strategy``/``updateStrategy``,
  ``podManagementPolicy``, ``backoffLimit``, ``podFailurePolicy``, the template's container
  names, ``status.failed`` and ``status.desiredNumberScheduled``;
- each owner's pods elsewhere (``bot.kube.surveying``): ``spec.selector``;
- tier 1's budgets (``bot.kube.objects.parse_budget``): the budget's name, namespace,
  generation, ``spec.selector``/``minAvailable``/``maxUnavailable``/
  ``unhealthyPodEvictionPolicy`` and the status the disruption controller writes.

Held as compact JSON text (``*_text``), one string a record, decoded when a diagnosis
looks one up (a few dozen per diagnosis): a record as dicts cost ~3.5 KiB a Deployment
(measured, ten to fifteen small dicts each), all of them objects the garbage collector walks
on every full collection; as text, a fraction of that, none of it walked.

Left out: ``managedFields``, every other annotation (``kubectl.kubernetes.io/
last-applied-configuration`` alone holds the whole object again) and the pod template's
spec beyond its containers' names. ``tests/kube/test_owner_records.py`` checks, on generated
controllers and budgets of every informed kind, that each reader reads a record as it reads
the object; ``tests/kube/test_owner_informers.py``, that a cluster view built from the
informers is the one the API's own answers build.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from bot.core.model.annotations import CONTROLLER_ANNOTATIONS, HELM_KEY_ANNOTATION
from bot.kube.cutting import slim_page
from bot.kube.pages import SlimPage

Obj = dict[str, Any]
#: ``json.dumps(x, separators=(",", ":"))``, the encoder built once
_compact = json.JSONEncoder(separators=(",", ":")).encode

#: kind -> (API path prefix, plural) of the controllers an owner informer keeps: every
#: built-in kind an owner chain walks through but ReplicationController (a legacy kind, still
#: read one GET at a time)
INFORMED_CONTROLLERS: dict[str, tuple[str, str]] = {
    "ReplicaSet": ("/apis/apps/v1", "replicasets"),
    "Deployment": ("/apis/apps/v1", "deployments"),
    "StatefulSet": ("/apis/apps/v1", "statefulsets"),
    "DaemonSet": ("/apis/apps/v1", "daemonsets"),
    "Job": ("/apis/batch/v1", "jobs"),
    "CronJob": ("/apis/batch/v1", "cronjobs"),
}
BUDGETS_PATH = "/apis/policy/v1/poddisruptionbudgets"

#: kinds whose records keep the chain only: ``bot.kube.surveying.WATCHED_KINDS`` holds
#: neither (``tests/kube/test_owner_records.py`` checks)
CHAIN_ONLY = frozenset({"ReplicaSet", "CronJob"})
_META_KEYS = ("name", "namespace", "uid", "resourceVersion", "generation")
_CONTROLLER_SPEC_KEYS = (
    "replicas",
    "selector",
    "strategy",
    "updateStrategy",
    "podManagementPolicy",
    "backoffLimit",
    "podFailurePolicy",
)
_CONTROLLER_STATUS_KEYS = ("failed", "desiredNumberScheduled")
_BUDGET_SPEC_KEYS = ("selector", "minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy")
_BUDGET_STATUS_KEYS = (
    "disruptionsAllowed",
    "currentHealthy",
    "desiredHealthy",
    "expectedPods",
    "observedGeneration",
)


def api_version(prefix: str) -> str:
    """``/apis/apps/v1`` -> ``apps/v1``; ``/api/v1`` -> ``v1``."""
    return prefix.removeprefix("/apis/").removeprefix("/api/")


def _meta(meta: Obj) -> Obj:
    out = {k: meta[k] for k in _META_KEYS if k in meta}
    if meta.get("labels"):
        out["labels"] = meta["labels"]
    return out


def _controller_refs(meta: Obj) -> list[Obj]:
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    return refs[:1]  # the API server allows one controller


def controller_record(kind: str, version: str, obj: Obj) -> Obj | None:
    """``obj`` (a controller of ``kind`` served as ``version``) cut to what is read of it (see
    the module docstring); None for a ReplicaSet with no pod wanted or left, which is not
    kept. ``kind`` and ``apiVersion`` are set from the informer's own: a list's items carry
    neither."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if kind in CHAIN_ONLY:
        if kind == "ReplicaSet" and not spec.get("replicas") and not status.get("replicas"):
            return None
        chain: Obj = {k: meta[k] for k in ("name", "namespace") if k in meta}
        if refs := _controller_refs(meta):
            chain["ownerReferences"] = refs
        return {"kind": kind, "apiVersion": version, "metadata": chain}
    out_meta = _meta(meta)
    notes = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if k in CONTROLLER_ANNOTATIONS or k.startswith(HELM_KEY_ANNOTATION)
    }
    if notes:
        out_meta["annotations"] = notes
    if refs := _controller_refs(meta):
        out_meta["ownerReferences"] = refs
    out_spec = {k: spec[k] for k in _CONTROLLER_SPEC_KEYS if k in spec}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
    if containers:
        out_spec["template"] = {
            "spec": {"containers": [{"name": c["name"]} if "name" in c else {} for c in containers]}
        }
    record: Obj = {"kind": kind, "apiVersion": version, "metadata": out_meta, "spec": out_spec}
    kept = {k: status[k] for k in _CONTROLLER_STATUS_KEYS if k in status}
    if kept:
        record["status"] = kept
    return record


def budget_record(obj: Obj) -> Obj:
    """A PodDisruptionBudget cut to what tier 1 reads of it, its status included."""
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    return {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": _meta(obj.get("metadata") or {}),
        "spec": {k: spec[k] for k in _BUDGET_SPEC_KEYS if k in spec},
        "status": {k: status[k] for k in _BUDGET_STATUS_KEYS if k in status},
    }


def controller_text(kind: str, version: str, obj: Obj) -> str | None:
    """``controller_record`` as the informer holds it (compact JSON); None: not kept."""
    record = controller_record(kind, version, obj)
    return None if record is None else _compact(record)


def budget_text(obj: Obj) -> str:
    return _compact(budget_record(obj))


def controller_records_page(kind: str, version: str, body: bytes) -> SlimPage[str]:
    """A list page of ``kind`` cut to ``controller_text``s (in the decoder), those not kept
    left out."""
    page = slim_page(body, functools.partial(controller_text, kind, version))
    kept = [(ns, name, text) for ns, name, text in page.items if text is not None]
    return SlimPage(page.token, page.resource_version, kept)


def budget_records_page(body: bytes) -> SlimPage[str]:
    return slim_page(body, budget_text)


def read_record(text: str) -> Obj:
    """A held record as the object it stands for."""
    record: Obj = json.loads(text)
    return record
