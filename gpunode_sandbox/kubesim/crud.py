"""Create, read, update, patch, delete with the API server's rules, independent of HTTP.

``ApiCore`` owns the store and applies, in order: defaulting, admission-like checks
(namespace exists, priority class resolves), update rules (immutable fields, resourceVersion
preconditions), schema validation (strict, per configured version), then stores unless
``dry_run``. Controllers subscribe to changes through ``on_change`` callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from gpunode_sandbox.kubesim import defaults, rules
from gpunode_sandbox.kubesim.names import check_name
from gpunode_sandbox.kubesim.patching import apply_patch
from gpunode_sandbox.kubesim.resources import BY_API, BY_KIND, STORED, Resource
from gpunode_sandbox.kubesim.spread import merge_label_keys_at_creation
from gpunode_sandbox.kubesim.statuses import ApiError, already_exists, conflict, not_found
from gpunode_sandbox.kubesim.store import Obj, Store, clone
from gpunode_sandbox.kubesim.validation import check_version, validate_object

ChangeHook = Callable[[str, Obj | None, Obj | None], None]
#: validating admission: (operation, resource, subresource, object, oldObject, dry_run);
#: raises ApiError to deny (kubesim/admission.py)
AdmitHook = Callable[[str, Resource, str, Obj | None, Obj | None, bool], None]


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiCore:
    """The API server's object semantics over a :class:`Store`."""

    def __init__(self, *, kube_version: str = "1.35") -> None:
        check_version(kube_version)
        self.kube_version = kube_version
        self.store = Store()
        self.on_change: list[ChangeHook] = []
        self.admit: list[AdmitHook] = []
        self.validate = True
        #: True while a scenario loads: seeded objects are the cluster's existing state, so
        #: create-time admission (RuntimeClass, priority quota) does not apply to them
        self.seeding = False
        #: container name -> memory in use, per pod (the kubelet's view; set by KubeSim)
        self.memory_usage: Callable[[Obj], dict[str, int]] | None = None
        #: the kubelet's graceful termination (set by KubeSim's controllers when they run):
        #: called with a pod just marked Terminating and its grace period; it removes the
        #: pod once its containers have stopped. None: pods go at once (no kubelet running).
        self.terminate: Callable[[Obj, int], None] | None = None

    # ---- reads -------------------------------------------------------------------------
    def get(self, plural: str, namespace: str | None, name: str) -> Obj:
        """``plural`` is the store key (``Resource.key``: ``plural.group`` for a CRD)."""
        obj = self.store.get(plural, namespace, name)
        if obj is None:
            res = STORED[plural]
            raise not_found(res.plural, name, group=res.group)
        return obj

    def priorities(self) -> dict[str, int]:
        return {
            pc["metadata"]["name"]: int(pc["value"]) for pc in self.store.list("priorityclasses")
        }

    # ---- writes ------------------------------------------------------------------------
    def _admit(
        self, op: str, res: Resource, sub: str, obj: Obj | None, old: Obj | None, dry: bool
    ) -> None:
        for hook in list(self.admit):
            hook(op, res, sub, obj, old, dry)

    def _emit(self, plural: str, old: Obj | None, new: Obj | None) -> None:
        for hook in list(self.on_change):
            hook(plural, old, new)

    def create(
        self,
        res: Resource,
        namespace: str | None,
        body: Obj,
        *,
        dry_run: bool = False,
        validate: bool | None = None,
        owned: bool = False,
    ) -> Obj:
        """``owned``: the caller hands ``body`` over (built for this call, never touched
        again), so it is stored as it is instead of copied (the bulk seed of a fleet)."""
        obj = body if owned else clone(body)
        obj.setdefault("apiVersion", res.api_version)
        obj.setdefault("kind", res.kind)
        if obj["kind"] != res.kind or obj["apiVersion"] != res.api_version:
            raise ApiError(
                400,
                f"the API version in the data ({obj['apiVersion']}) does not "
                f"match the expected API version ({res.api_version})",
            )
        meta = obj.setdefault("metadata", {})
        if res.namespaced:
            if meta.get("namespace") and namespace and meta["namespace"] != namespace:
                raise ApiError(
                    400,
                    "the namespace of the provided object does not match the "
                    "namespace sent on the request",
                )
            meta["namespace"] = namespace or meta.get("namespace") or "default"
            if self.store.get("namespaces", None, meta["namespace"]) is None:
                raise not_found("namespaces", meta["namespace"])
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = (
                meta["generateName"]
                + defaults.stable_uid(str(self.store.rv), meta["generateName"])[:5]
            )
        if not meta.get("name"):
            raise defaults_invalid(res, "", "metadata.name", "name or generateName is required")
        check_name(res.kind, meta["name"], group=res.group)
        if self.store.get(res.key, meta.get("namespace"), meta["name"]) is not None:
            raise already_exists(res.plural, meta["name"], group=res.group)
        defaults.stamp_metadata(obj, now=now_iso())
        self._default(res, obj)
        if not res.crd:
            rules.check_create(res, obj, self)
        if validate if validate is not None else self.validate:
            validate_object(obj, self.kube_version)
        self._admit("CREATE", res, "", obj, None, dry_run)
        if dry_run:
            obj["metadata"]["resourceVersion"] = str(self.store.rv)
            return obj
        stored = self.store.put(res.key, obj, owned=True)
        self._emit(res.key, None, stored)
        return stored

    def _default(self, res: Resource, obj: Obj) -> None:
        if res.crd:  # no built-in defaults (or rules) for custom resources
            return
        if res.kind == "Pod":
            defaults.default_pod(obj, priorities=self.priorities())
            merge_label_keys_at_creation(obj, self.kube_version)
            # the Priority admission plugin copies the class's preemptionPolicy to the pod
            name = obj["spec"].get("priorityClassName")
            pc = self.store.get("priorityclasses", None, name) if name else None
            if pc is not None and pc.get("preemptionPolicy"):
                obj["spec"]["preemptionPolicy"] = pc["preemptionPolicy"]
        elif res.kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job"):
            defaults.default_controller(obj)
        elif res.kind == "Namespace":
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
            obj.setdefault("status", {"phase": "Active"})
            labels = obj["metadata"].setdefault("labels", {})
            labels.setdefault("kubernetes.io/metadata.name", obj["metadata"]["name"])
        elif res.kind == "PriorityClass":
            obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
        elif res.kind == "Node":
            rules.sync_unschedulable_taint(obj, now=now_iso())

    def update(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        new: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        precondition_rv: str | None = None,
    ) -> Obj:
        """Replace ``name`` with ``new`` (PUT semantics); PATCH calls this after patching."""
        old = self.get(res.key, namespace, name)
        new = clone(new)
        new.setdefault("apiVersion", res.api_version)
        new.setdefault("kind", res.kind)
        rv = precondition_rv or (new.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise conflict(res.plural, name, group=res.group)
        meta = new.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise ApiError(
                400,
                f"the name of the object ({meta.get('name')}) does not match "
                f"the name on the URL ({name})",
            )
        for k in ("uid", "creationTimestamp", "namespace", "generation", "deletionTimestamp"):
            if k in old["metadata"]:
                meta[k] = old["metadata"][k]
        meta["name"] = name
        if subresource == "status":
            merged = clone(old)
            merged["status"] = new.get("status", {})
            new = merged
        elif "status" in old:
            new["status"] = clone(old["status"])
        if new.get("spec") != old.get("spec"):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        if not res.crd:
            rules.check_update(res, old, new, self, subresource=subresource)
        if self.validate:
            validate_object(new, self.kube_version)
        self._admit("UPDATE", res, subresource, new, old, dry_run)
        if dry_run:
            meta["resourceVersion"] = old["metadata"]["resourceVersion"]
            return new
        stored = self.store.put(res.key, new, event="MODIFIED", owned=True)
        self._emit(res.key, old, stored)
        return stored

    def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        patch: Any,
        content_type: str,
        *,
        subresource: str = "",
        dry_run: bool = False,
    ) -> Obj:
        old = self.get(res.key, namespace, name)
        patched = apply_patch(clone(old), patch, content_type)
        if not isinstance(patched, dict):
            raise ApiError(422, "patch did not produce an object")
        rv = (patched.get("metadata") or {}).get("resourceVersion")
        precondition = rv if rv != old["metadata"]["resourceVersion"] else None
        if precondition is None:
            patched.setdefault("metadata", {})["resourceVersion"] = old["metadata"][
                "resourceVersion"
            ]
        return self.update(
            res,
            namespace,
            name,
            patched,
            subresource=subresource,
            dry_run=dry_run,
            precondition_rv=precondition,
        )

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        dry_run: bool = False,
        propagation: str | None = None,
        precondition_rv: str | None = None,
        grace_period: int | None = None,
    ) -> Obj:
        """Delete ``name``. A pod bound to a node is deleted gracefully: it is marked
        Terminating (``deletionTimestamp`` = now + grace) and the kubelet removes it when its
        containers stop, within ``grace_period`` (else the pod's
        ``terminationGracePeriodSeconds``); 0 removes it at once."""
        obj = self.get(res.key, namespace, name)
        if precondition_rv and precondition_rv != obj["metadata"]["resourceVersion"]:
            raise conflict(res.plural, name, group=res.group)
        if res.kind == "PriorityClass" and name.startswith("system-"):
            raise ApiError(
                403,
                f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: '
                "this is a system priority class and cannot be deleted",
            )
        self._admit("DELETE", res, "", None, obj, dry_run)
        if dry_run:
            return clone(obj)
        grace = self._grace(res, obj, grace_period)
        if grace is not None and self.terminate is not None:
            if obj["metadata"].get("deletionTimestamp"):
                return clone(obj)  # already terminating: the kubelet finishes it
            marked = clone(obj)
            at = datetime.now(UTC) + timedelta(seconds=grace)
            marked["metadata"]["deletionTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
            marked["metadata"]["deletionGracePeriodSeconds"] = grace
            stored = self.store.put(res.key, marked, event="MODIFIED", owned=True)
            self._emit(res.key, obj, stored)
            self.terminate(stored, grace)
            return clone(stored)
        # batch/v1 Jobs orphan their pods unless told otherwise (legacy GC default).
        policy = propagation or ("Orphan" if res.key == "jobs" else "Background")
        self.store.remove(res.key, namespace, name)
        self._emit(res.key, obj, None)
        self._collect_dependents(obj, orphan=policy == "Orphan")
        gone = clone(obj)
        gone["metadata"]["deletionTimestamp"] = now_iso()
        return gone

    @staticmethod
    def _grace(res: Resource, obj: Obj, grace_period: int | None) -> int | None:
        """The grace period of a graceful pod deletion, or None to remove at once (not a pod,
        not on a node, already finished, or a zero grace period)."""
        if res.key != "pods" or not (obj.get("spec") or {}).get("nodeName"):
            return None
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending"):
            return None
        grace = grace_period
        if grace is None:
            grace = int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        return grace if grace > 0 else None

    def finish_termination(self, namespace: str, name: str, uid: str) -> None:
        """The kubelet saw the pod's containers stop: remove it (if it is still that pod)."""
        obj = self.store.get("pods", namespace, name)
        if obj is None or obj["metadata"].get("uid") != uid:
            return
        self.store.remove("pods", namespace, name)
        self._emit("pods", obj, None)
        self._collect_dependents(obj, orphan=False)

    def _collect_dependents(self, owner: Obj, *, orphan: bool) -> None:
        uid = owner["metadata"]["uid"]
        ns = owner["metadata"].get("namespace")
        for plural in ("replicasets", "pods"):
            for dep in list(self.store.list(plural, ns)):
                refs = dep["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == uid for r in refs):
                    continue
                if orphan:
                    d = clone(dep)
                    d["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                    if not d["metadata"]["ownerReferences"]:
                        del d["metadata"]["ownerReferences"]
                    self.store.put(plural, d)
                else:
                    self.delete(STORED[plural], ns, dep["metadata"]["name"])

    def seed(self, obj: Obj, *, validate: bool = False, owned: bool = False) -> Obj:
        """Bulk-load path for scenarios: create without hooks; validation optional;
        ``owned``: ``obj`` is handed over, not copied (see ``create``)."""
        res = BY_API.get((obj.get("apiVersion", ""), obj["kind"])) or BY_KIND[obj["kind"]]
        ns = (obj.get("metadata") or {}).get("namespace")
        saved = self.on_change
        self.on_change = []
        self.seeding = True
        try:
            return self.create(res, ns, obj, validate=validate, owned=owned)
        finally:
            self.on_change = saved
            self.seeding = False


def defaults_invalid(res: Resource, name: str, field: str, message: str) -> ApiError:
    from gpunode_sandbox.kubesim.statuses import invalid

    return invalid(
        res.kind,
        name,
        [{"reason": "FieldValueRequired", "field": field, "message": message}],
        group=res.group,
    )
