"""ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1), evaluated with CEL.

The expressions run through ``celpy`` (cel-python, a CEL implementation), never a hand-made
parser. What the API server does, mirrored here:

- A policy applies through each ``ValidatingAdmissionPolicyBinding`` naming it (a binding
  whose policy is missing is ignored); only ``Deny`` bindings deny (Warn/Audit do not).
- Matching: ``matchConstraints`` of the policy and ``matchResources`` of the binding —
  resourceRules (apiGroups, apiVersions, operations, resources with ``*``, ``x/*``, ``*/x``
  and ``*/*`` subresource forms, resourceNames, scope), excludeResourceRules,
  namespaceSelector and objectSelector — then every ``matchConditions`` expression.
- Variables (``variables.NAME``) are composed in order; ``object``, ``oldObject``
  (``null`` on CREATE / DELETE), ``request`` (operation, userInfo, namespace, name, kind,
  resource, subResource, dryRun) and ``namespaceObject`` are bound.
- Parameters: a policy with ``paramKind`` is evaluated once per parameter object its
  binding's ``paramRef`` selects (``name`` or ``selector``, in ``namespace``, else the
  request's namespace for a namespaced kind), bound as ``params``; every one must pass. No
  parameter found: ``parameterNotFoundAction`` ``Allow`` admits, ``Deny`` (the default)
  follows ``failurePolicy`` with "no params found for policy binding with `Deny`
  parameterNotFoundAction". Without ``paramKind``, ``params`` is null.
- The first failing validation denies: ``<resource> "<name>" is forbidden:
  ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>``,
  where the message is ``message``, else ``messageExpression``, else ``failed expression:
  <expression>``; reason ``validation.reason`` (default ``Invalid``, HTTP 422).
- An expression that errors follows ``failurePolicy`` (default Fail: deny, saying so).
- CEL semantics are cel-go's (heterogeneous equality, see ``cel.py``), not cel-python's.
- Creating or updating a policy whose expressions do not compile is a 422.
"""

from __future__ import annotations

import contextlib
from typing import Any

from celpy import celtypes
from celpy.adapter import json_to_cel

from gpunode_sandbox.kubesim.authz import CURRENT_USER
from gpunode_sandbox.kubesim.cel import CelError, compile_error, evaluate
from gpunode_sandbox.kubesim.resources import BY_KIND, Resource
from gpunode_sandbox.kubesim.selectors import match_label_selector
from gpunode_sandbox.kubesim.statuses import ApiError, invalid
from gpunode_sandbox.kubesim.store import Obj, Store

_CODES = {"Invalid": 422, "Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413}
__all__ = ["Admission", "CelError", "check_policy", "compile_error", "evaluate"]


def _rule_matches(rule: Obj, op: str, res: Resource, sub: str, name: str | None) -> bool:
    """``name`` None: whatever the object's name (a ``resourceNames`` list is not read)."""

    def has(values: Any, wanted: str) -> bool:
        return isinstance(values, list) and ("*" in values or wanted in values)

    if not (
        has(rule.get("apiGroups"), res.group)
        and has(rule.get("apiVersions"), res.version)
        and has(rule.get("operations"), op)
    ):
        return False
    scope = rule.get("scope", "*")
    if (scope == "Cluster" and res.namespaced) or (scope == "Namespaced" and not res.namespaced):
        return False
    names = rule.get("resourceNames") or []
    if names and name is not None and name not in names:
        return False
    for r in rule.get("resources") or []:
        plural, _, rsub = r.partition("/")
        if r == "*/*":
            return True
        if plural in ("*", res.plural) and rsub == sub == "":
            return True
        if sub and plural in ("*", res.plural) and rsub in ("*", sub) and rsub:
            return True
    return False


def _matches(
    match: Obj | None,
    op: str,
    res: Resource,
    sub: str,
    obj: Obj,
    namespace: Obj | None,
    *,
    required: bool,
) -> bool:
    """``MatchResources`` semantics; an absent block matches when not ``required``."""
    if not match:
        return not required
    name = obj.get("metadata", {}).get("name", "")
    rules = match.get("resourceRules")
    if rules is not None and not any(_rule_matches(r, op, res, sub, name) for r in rules):
        return False
    if rules is None and required:
        return False
    if any(_rule_matches(r, op, res, sub, name) for r in match.get("excludeResourceRules") or []):
        return False
    ns_sel = match.get("namespaceSelector")
    if ns_sel and res.namespaced and namespace is not None:
        ns_labels = namespace.get("metadata", {}).get("labels") or {}
        if not match_label_selector(ns_sel, ns_labels):
            return False
    obj_sel = match.get("objectSelector")
    return not obj_sel or match_label_selector(obj_sel, obj.get("metadata", {}).get("labels") or {})


def _may_match(match: Obj | None, op: str, res: Resource, sub: str, *, required: bool) -> bool:
    """Whether ``MatchResources`` can match some object of ``res`` for ``op``: its resource
    rules, whatever the name (the exclusions and selectors are left to ``_matches``)."""
    if not match:
        return not required
    rules = match.get("resourceRules")
    if rules is None:
        return not required
    return any(_rule_matches(r, op, res, sub, None) for r in rules)


class Admission:
    """The validating admission step of ``ApiCore`` (an ``AdmitHook``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: (op, resource, subresource) -> the (binding, policy) pairs whose rules can match,
        #: kept while no binding or policy changes (a fleet's pods would otherwise match
        #: every rule of every policy, one pod at a time)
        self._candidates: dict[tuple[object, ...], list[tuple[Obj, Obj]]] = {}
        self._candidates_at: tuple[int, int] = (-1, -1)

    def _pairs(self, op: str, res: Resource, sub: str) -> list[tuple[Obj, Obj]]:
        writes = self.store.writes
        at = (
            writes.get("validatingadmissionpolicybindings", 0),
            writes.get("validatingadmissionpolicies", 0),
        )
        if at != self._candidates_at:
            self._candidates, self._candidates_at = {}, at
        key = (op, res.group, res.version, res.plural, res.namespaced, sub)
        found = self._candidates.get(key)
        if found is None:
            found = []
            for binding in self.store.list("validatingadmissionpolicybindings"):
                spec = binding.get("spec") or {}
                name = spec.get("policyName", "")
                policy = self.store.get("validatingadmissionpolicies", None, name)
                if policy is None or "Deny" not in (spec.get("validationActions") or []):
                    continue
                pspec = policy.get("spec") or {}
                if _may_match(
                    pspec.get("matchConstraints"), op, res, sub, required=True
                ) and _may_match(spec.get("matchResources"), op, res, sub, required=False):
                    found.append((binding, policy))
            self._candidates[key] = found
        return found

    def __call__(
        self, op: str, res: Resource, sub: str, obj: Obj | None, old: Obj | None, dry: bool
    ) -> None:
        if res.kind == "ValidatingAdmissionPolicy" and obj is not None:
            check_policy(obj)
        subject = obj if obj is not None else (old or {})
        meta = subject.get("metadata") or {}
        ns_name = meta.get("namespace") if res.namespaced else None
        namespace = self.store.get("namespaces", None, ns_name) if ns_name else None
        for binding, policy in self._pairs(op, res, sub):
            spec = binding.get("spec") or {}
            pspec = policy.get("spec") or {}
            if not _matches(
                pspec.get("matchConstraints"), op, res, sub, subject, namespace, required=True
            ) or not _matches(
                spec.get("matchResources"), op, res, sub, subject, namespace, required=False
            ):
                continue
            activation = self._activation(op, res, sub, obj, old, namespace, dry)
            denial = self._evaluate_with_params(pspec, spec, activation, res, subject)
            if denial is not None:
                message, reason = denial
                raise _denied(
                    res,
                    subject,
                    policy["metadata"]["name"],
                    binding["metadata"]["name"],
                    message,
                    reason,
                )

    def _params(self, pspec: Obj, bspec: Obj, res: Resource, subject: Obj) -> list[Obj] | str:
        """The parameter objects a binding selects, or why none can be used."""
        kind = (pspec.get("paramKind") or {}).get("kind", "")
        ref = bspec.get("paramRef")
        if not ref:
            return "failed to configure binding: paramRef is required when paramKind is set"
        pres = BY_KIND.get(kind)
        if pres is None:
            return (
                "failed to configure policy: failed to find resource referenced by "
                f"paramKind: '{kind}'"
            )
        ns: str | None = None
        if pres.namespaced:
            ns = ref.get("namespace") or (
                (subject.get("metadata") or {}).get("namespace") if res.namespaced else None
            )
            if not ns:
                return (
                    "failed to configure binding: cannot use namespaced paramRef in policy "
                    "binding that matches cluster-scoped resources"
                )
        if ref.get("name"):
            found = self.store.get(pres.plural, ns, ref["name"])
            params = [found] if found is not None else []
        else:
            selector = ref.get("selector") or {}
            params = [
                p
                for p in self.store.list(pres.plural, ns)
                if match_label_selector(selector, (p.get("metadata") or {}).get("labels") or {})
            ]
        return params

    def _evaluate_with_params(
        self, pspec: Obj, bspec: Obj, activation: dict[str, Any], res: Resource, subject: Obj
    ) -> tuple[str, str] | None:
        if not pspec.get("paramKind"):
            return _evaluate_policy(pspec, activation)
        fail = pspec.get("failurePolicy", "Fail") == "Fail"
        params = self._params(pspec, bspec, res, subject)
        if isinstance(params, str):
            return (params, "Invalid") if fail else None
        if not params:
            action = (bspec.get("paramRef") or {}).get("parameterNotFoundAction") or "Deny"
            if action == "Allow" or not fail:
                return None
            return (
                "failed to configure binding: no params found for policy binding with `Deny` "
                "parameterNotFoundAction",
                "Invalid",
            )
        for param in params:
            denial = _evaluate_policy(pspec, {**activation, "params": json_to_cel(param)})
            if denial is not None:
                return denial
        return None

    def _activation(
        self,
        op: str,
        res: Resource,
        sub: str,
        obj: Obj | None,
        old: Obj | None,
        namespace: Obj | None,
        dry: bool,
    ) -> dict[str, Any]:
        meta = (obj if obj is not None else old or {}).get("metadata") or {}
        request = {
            "operation": op,
            "userInfo": CURRENT_USER.get().as_request(),
            "namespace": meta.get("namespace", "") if res.namespaced else "",
            "name": meta.get("name", ""),
            "kind": {"group": res.group, "version": res.version, "kind": res.kind},
            "resource": {"group": res.group, "version": res.version, "resource": res.plural},
            "subResource": sub,
            "dryRun": dry,
        }
        return {
            "object": json_to_cel(obj),
            "oldObject": json_to_cel(old),
            "request": json_to_cel(request),
            "namespaceObject": json_to_cel(namespace),
            "params": json_to_cel(None),
        }


def _evaluate_policy(spec: Obj, activation: dict[str, Any]) -> tuple[str, str] | None:
    """None when the request passes, else (message, reason)."""
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    variables: dict[str, Any] = {}
    activation["variables"] = _cel_map(variables)
    try:
        for cond in spec.get("matchConditions") or []:
            if not bool(evaluate(cond["expression"], activation)):
                return None
        for var in spec.get("variables") or []:
            # lazily evaluated in the API server: an error surfaces only where it is used
            with contextlib.suppress(CelError):
                variables[var["name"]] = evaluate(var["expression"], activation)
                activation["variables"] = _cel_map(variables)
    except CelError as exc:
        return (f"expression resulted in error: {exc}", "Invalid") if fail else None
    for validation in spec.get("validations") or []:
        expression = validation["expression"]
        try:
            ok = bool(evaluate(expression, activation))
        except CelError as exc:
            if fail:
                return f"expression '{expression}' resulted in error: {exc}", "Invalid"
            continue
        if ok:
            continue
        message = validation.get("message") or ""
        if not message and validation.get("messageExpression"):
            try:
                message = str(evaluate(validation["messageExpression"], activation))
            except CelError:
                message = ""
        return message or f"failed expression: {expression}", validation.get("reason", "Invalid")
    return None


def _cel_map(values: dict[str, Any]) -> Any:
    return celtypes.MapType({celtypes.StringType(k): v for k, v in values.items()})


def _denied(
    res: Resource, obj: Obj, policy: str, binding: str, message: str, reason: str
) -> ApiError:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    qualified = f"{res.plural}.{res.group}" if res.group else res.plural
    text = (
        f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {message}"
    )
    return ApiError(
        _CODES.get(reason, 422),
        f'{qualified} "{name}" is forbidden: {text}',
        reason=reason,
        name=name,
        group=res.group or None,
        kind=res.plural,
        causes=[{"message": text}],
    )


def check_policy(policy: Obj) -> None:
    """422 when an expression of ``policy`` does not compile (as the API server refuses it)."""
    spec = policy.get("spec") or {}
    causes: list[dict[str, str]] = []
    for key, field in (
        ("matchConditions", "expression"),
        ("variables", "expression"),
        ("validations", "expression"),
        ("validations", "messageExpression"),
        ("auditAnnotations", "valueExpression"),
    ):
        for i, item in enumerate(spec.get(key) or []):
            expr = item.get(field)
            if expr and (why := compile_error(expr)):
                causes.append(
                    {
                        "reason": "FieldValueInvalid",
                        "field": f"spec.{key}[{i}].{field}",
                        "message": f"Invalid value: {expr!r}: compilation failed: {why}",
                    }
                )
    if causes:
        raise invalid(
            "ValidatingAdmissionPolicy",
            policy.get("metadata", {}).get("name", ""),
            causes,
            group="admissionregistration.k8s.io",
        )
