"""RBAC authorization, as the API server's RBAC authorizer decides it.

Every request is attributed (user, verb, API group, resource, subresource, namespace, name,
or a non-resource path) and allowed when one rule of one role bound to the user matches:

- ClusterRoleBindings grant their ClusterRole everywhere (cluster-scoped and every
  namespace); RoleBindings grant their Role or ClusterRole inside their own namespace only.
- Subjects: ``User`` by name, ``Group`` by group, ``ServiceAccount`` as
  ``system:serviceaccount:NS:NAME``.
- Rules: verbs, apiGroups, resources (``*``, ``pods/log``, ``*/scale``), resourceNames (an
  empty list means all names; a named rule never matches list, watch or create without a
  name), nonResourceURLs (exact or ``prefix*``).
- Nothing is allowed by default; ``system:masters`` is allowed through the bootstrap
  ``cluster-admin`` binding (access.py), not by a special case here.

A denial becomes the API server's 403 ``Status``: ``pods "x" is forbidden: User "u" cannot
get resource "pods" in API group "" in the namespace "ns"``. SelfSubjectAccessReview answers
the same question for the caller.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gpunode_sandbox.kubesim.statuses import ApiError
from gpunode_sandbox.kubesim.store import Obj, Store


@dataclass(frozen=True)
class UserInfo:
    """Who is asking (``request.userInfo`` in admission, ``User`` in RBAC)."""

    username: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    #: user.Info extra (impersonation's Impersonate-Extra-*): (key, values) pairs
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def as_request(self) -> Obj:
        out: Obj = {"username": self.username, "uid": self.uid, "groups": list(self.groups)}
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra}
        return out


ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))
#: the sim's own controllers (job controller, kubelet) act as this; never authorized
CONTROLLER = UserInfo(
    "system:serviceaccount:kube-system:job-controller",
    ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"),
)
#: the caller of the request being served (set by the app's middleware; controllers that
#: write outside a request see ``CONTROLLER``)
CURRENT_USER: contextvars.ContextVar[UserInfo] = contextvars.ContextVar(
    "kubesim_user", default=CONTROLLER
)


@dataclass(frozen=True)
class Attributes:
    """One request as RBAC sees it; ``path`` is set for non-resource requests only."""

    user: UserInfo
    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def resource_request(self) -> bool:
        return not self.path


def is_resource_path(path: str) -> bool:
    """kube-apiserver's RequestInfo: /api/v1/X... and /apis/G/V/X... name resources;
    discovery (/api, /api/v1, /apis/G/V), /version, /openapi are non-resource URLs."""
    segs = [s for s in path.split("/") if s]
    return (len(segs) >= 3 and segs[0] == "api") or (len(segs) >= 4 and segs[0] == "apis")


def resource_verb(method: str, *, named: bool, watch: bool) -> str:
    """The RBAC verb of an HTTP request on a resource (kube-apiserver's RequestInfo)."""
    if watch:
        return "watch"
    if method in ("GET", "HEAD"):
        return "get" if named else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _subject_matches(subject: Mapping[str, Any], user: UserInfo, binding_ns: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name", "")
    if kind == "User":
        return bool(name == user.username)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return user.username == f"system:serviceaccount:{ns}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], binding_ns: str) -> str:
    if subject.get("kind") == "ServiceAccount":
        ns = subject.get("namespace") or binding_ns
        return f'ServiceAccount "{ns}/{subject.get("name")}"'
    return f'{subject.get("kind")} "{subject.get("name")}"'


def _has(values: list[str] | None, wanted: str) -> bool:
    return bool(values) and ("*" in values or wanted in values)  # type: ignore[operator]


def rule_allows(rule: Mapping[str, Any], attrs: Attributes) -> bool:
    """Does one PolicyRule cover the request?"""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        for url in rule.get("nonResourceURLs") or []:
            if url == "*" or url == attrs.path:
                return True
            if url.endswith("*") and attrs.path.startswith(url[:-1]):
                return True
        return False
    if not _has(rule.get("apiGroups"), attrs.api_group):
        return False
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    resource_ok = False
    for r in rule.get("resources") or []:
        if r in ("*", combined) or (attrs.subresource and r == f"*/{attrs.subresource}"):
            resource_ok = True
            break
    if not resource_ok:
        return False
    names = rule.get("resourceNames") or []
    return not names or attrs.name in names


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


class Authorizer:
    """RBAC over the roles and bindings in ``store`` (read at every decision, so a role
    edited through the API takes effect on the next request, as in a real cluster)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        #: every denied request, in order (tests read it: "the bot was never refused")
        self.denied: list[Attributes] = []
        #: every impersonated request, as the audit log records it: (method, path, the
        #: authenticated user, the impersonated user)
        self.impersonated: list[tuple[str, str, UserInfo, UserInfo]] = []

    def _grants(self, attrs: Attributes) -> Iterator[tuple[str, list[Obj] | None, str]]:
        """(description, rules or None when the role is missing, missing-role error)."""
        user = attrs.user
        for b in self.store.list("clusterrolebindings"):
            for s in b.get("subjects") or []:
                if not _subject_matches(s, user, ""):
                    continue
                ref = b.get("roleRef") or {}
                role = self.store.get("clusterroles", None, ref.get("name", ""))
                what = (
                    f'ClusterRoleBinding "{b["metadata"]["name"]}" of ClusterRole '
                    f'"{ref.get("name")}" to {_describe_subject(s, "")}'
                )
                missing = f'clusterrole.rbac.authorization.k8s.io "{ref.get("name")}" not found'
                yield what, (role.get("rules") or []) if role else None, missing
        if not attrs.namespace:
            return
        for b in self.store.list("rolebindings", attrs.namespace):
            ns = b["metadata"]["namespace"]
            for s in b.get("subjects") or []:
                if not _subject_matches(s, user, ns):
                    continue
                ref = b.get("roleRef") or {}
                kind = ref.get("kind", "Role")
                role = (
                    self.store.get("roles", ns, ref.get("name", ""))
                    if kind == "Role"
                    else self.store.get("clusterroles", None, ref.get("name", ""))
                )
                what = (
                    f'RoleBinding "{b["metadata"]["name"]}/{ns}" of {kind} '
                    f'"{ref.get("name")}" to {_describe_subject(s, ns)}'
                )
                missing = f'{kind.lower()}.rbac.authorization.k8s.io "{ref.get("name")}" not found'
                yield what, (role.get("rules") or []) if role else None, missing

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[Obj], list[str]]:
        """Every rule of every role bound to ``user`` that applies in ``namespace`` (the
        ClusterRoleBindings' everywhere, the RoleBindings' of that namespace), and the errors
        met (a binding whose role is missing), as RBAC's ``RulesFor`` collects them."""
        rules: list[Obj] = []
        errors: list[str] = []
        for _what, found, missing in self._grants(
            Attributes(user=user, verb="", namespace=namespace)
        ):
            if found is None:
                errors.append(missing)
            else:
                rules.extend(found)
        return rules, errors

    def decide(self, attrs: Attributes) -> Decision:
        errors: list[str] = []
        for what, rules, missing in self._grants(attrs):
            if rules is None:
                errors.append(missing)
                continue
            if any(rule_allows(rule, attrs) for rule in rules):
                return Decision(True, f"RBAC: allowed by {what}")
        return Decision(False, f"RBAC: {', '.join(errors)}" if errors else "")

    def authorize(self, attrs: Attributes) -> None:
        """Raise the API server's 403 unless ``attrs`` is allowed."""
        decision = self.decide(attrs)
        if not decision.allowed:
            self.denied.append(attrs)
            raise forbidden(attrs, decision.reason)


def forbidden(attrs: Attributes, reason: str = "") -> ApiError:
    """The 403 ``Status`` kube-apiserver writes for a denied request."""
    user = attrs.user.username
    if not attrs.resource_request:
        msg = f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
        return ApiError(403, f"forbidden: {msg}{': ' + reason if reason else ''}")
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    msg = (
        f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
        f'"{attrs.api_group}" {scope}'
    )
    if reason:
        msg = f"{msg}: {reason}"
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    named = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    return ApiError(
        403,
        f"{named} is forbidden: {msg}",
        name=attrs.name or None,
        group=attrs.api_group or None,
        kind=attrs.resource,
    )


def self_subject_access_review(authorizer: Authorizer, user: UserInfo, body: Obj) -> Obj:
    """Answer a SelfSubjectAccessReview (authorization.k8s.io/v1) for ``user``."""
    spec = body.get("spec") or {}
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if bool(res) == bool(non):
        raise ApiError(
            422,
            'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: '
            'Invalid value: "null": exactly one of nonResourceAttributes or '
            "resourceAttributes must be specified",
        )
    if res:
        attrs = Attributes(
            user=user,
            verb=res.get("verb", ""),
            api_group=res.get("group", ""),
            resource=res.get("resource", ""),
            subresource=res.get("subresource", ""),
            namespace=res.get("namespace", ""),
            name=res.get("name", ""),
        )
    else:
        path = str((non or {}).get("path") or "/")
        attrs = Attributes(user=user, verb=str((non or {}).get("verb", "")), path=path)
    decision = authorizer.decide(attrs)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def self_subject_rules_review(authorizer: Authorizer, user: UserInfo, body: Obj) -> Obj:
    """Answer a SelfSubjectRulesReview (authorization.k8s.io/v1): the caller's rules in
    ``spec.namespace``, as the RBAC authorizer lists them. Each policy rule becomes a
    ``resourceRules`` entry (verbs, apiGroups, resources, resourceNames) or, for a rule with
    ``nonResourceURLs``, a ``nonResourceRules`` entry; order is the bindings' and duplicates
    stay, as the API documents. A binding whose role is missing makes the answer
    ``incomplete`` with an ``evaluationError`` naming it; the other rules are still listed."""
    spec = body.get("spec") or {}
    namespace = str(spec.get("namespace") or "")
    rules, errors = authorizer.rules_for(user, namespace)
    resource_rules: list[Obj] = []
    non_resource_rules: list[Obj] = []
    for rule in rules:
        if rule.get("nonResourceURLs"):
            non_resource_rules.append(
                {
                    "verbs": list(rule.get("verbs") or []),
                    "nonResourceURLs": list(rule["nonResourceURLs"]),
                }
            )
            continue
        entry: Obj = {
            "verbs": list(rule.get("verbs") or []),
            "apiGroups": list(rule.get("apiGroups") or []),
            "resources": list(rule.get("resources") or []),
        }
        if rule.get("resourceNames"):
            entry["resourceNames"] = list(rule["resourceNames"])
        resource_rules.append(entry)
    status: Obj = {
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": bool(errors),
    }
    if errors:
        status["evaluationError"] = f"[{', '.join(errors)}]"
    return {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }
