"""Who the stand-in's callers are, and what they may do before anyone edits a role.

Authentication: bearer tokens map to users. ``ADMIN_TOKEN`` is a cluster admin (group
``system:masters``) for test setup and ``kubectl``; every ServiceAccount loaded from
``deploy/base`` gets a token, ``service_account_token(ns, name)`` (``BOT_TOKEN`` is the
bot's, ``system:serviceaccount:gpunode:gpunode``). No token is ``system:anonymous``; an
unknown token is 401, as a real API server answers it. kubectl sends no credentials over
plain HTTP (client-go applies them to TLS transports only), so a stand-in started with
``insecure_superuser`` treats token-less requests as kube-apiserver's former insecure port
did: user ``system:unsecured`` in ``system:masters``. The bot always sends its token.

Authorization data: the bootstrap roles a real cluster has (``cluster-admin`` for
``system:masters``, ``system:discovery``, ``system:public-info-viewer``,
``system:basic-user``), then the access objects of ``deploy/base`` rendered with the
kustomize renderer: the Namespace, ServiceAccounts, Roles, ClusterRoles, bindings and
ValidatingAdmissionPolicies exactly as shipped, and the ConfigMaps their bindings take
parameters from (the installer's settings: image repository, priority class). Nothing
else of deploy/ (the bot's own Deployment, Service...) is loaded: the stand-in does not run the bot.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from bot.sandbox.kubesim.authz import ANONYMOUS, UserInfo
from bot.sandbox.kubesim.kustomize import render
from bot.sandbox.kubesim.statuses import ApiError
from bot.sandbox.kubesim.store import Obj

if TYPE_CHECKING:
    from bot.sandbox.kubesim.crud import ApiCore

ADMIN_TOKEN = "kubesim-admin-token"
ADMIN = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
UNSECURED = UserInfo("system:unsecured", ("system:masters", "system:authenticated"))
BOT_NAMESPACE = "gpunode"
BOT_SERVICE_ACCOUNT = "gpunode"

#: the kinds of deploy/base the stand-in installs (in this order: namespaces first)
ACCESS_KINDS = (
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "Role",
    "ClusterRoleBinding",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ConfigMap",
)
_HERE = Path(__file__).resolve().parent


def service_account_token(namespace: str, name: str) -> str:
    """The stand-in's bearer token for a ServiceAccount (opaque; real ones are JWTs)."""
    return f"kubesim-sa-{namespace}-{name}"


BOT_TOKEN = service_account_token(BOT_NAMESPACE, BOT_SERVICE_ACCOUNT)


def service_account_user(namespace: str, name: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"),
        uid=f"sa-{namespace}-{name}",
    )


def deploy_base() -> Path:
    """``deploy/base``, the nearest above this file: the repository's, else the installed
    product's copy (``bot/_deploy/base``, the wheel's force-include). Found by walking up, so
    it does not depend on where the sandbox package sits in the tree."""
    for parent in _HERE.parents:
        for candidate in (parent / "deploy" / "base", parent / "bot" / "_deploy" / "base"):
            if (candidate / "kustomization.yaml").is_file():
                return candidate
    raise FileNotFoundError("deploy/base not found: run the sandbox from a source checkout")


def _is_param(obj: Obj, bindings: list[Obj]) -> bool:
    """A ConfigMap a policy binding names as its parameters (the installer's settings)."""
    meta = obj.get("metadata") or {}
    for b in bindings:
        ref = (b.get("spec") or {}).get("paramRef") or {}
        if ref.get("name") == meta.get("name") and ref.get("namespace") == meta.get("namespace"):
            return True
    return False


@functools.cache
def _rendered(directory: str) -> tuple[Obj, ...]:
    objs = render(directory)
    bindings = [o for o in objs if o.get("kind") == "ValidatingAdmissionPolicyBinding"]
    return tuple(
        o
        for o in objs
        if o.get("kind") in ACCESS_KINDS
        and (o.get("kind") != "ConfigMap" or _is_param(o, bindings))
    )


def shipped_access_objects(directory: Path | None = None) -> list[Obj]:
    """The access objects of a kustomization (deploy/base by default), install-ordered."""
    import copy

    objs = [copy.deepcopy(o) for o in _rendered(str(directory or deploy_base()))]
    return sorted(objs, key=lambda o: ACCESS_KINDS.index(o["kind"]))


def _cluster_role(name: str, rules: list[Obj]) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "rules": rules,
    }


def _group_binding(name: str, groups: list[str]) -> Obj:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups
        ],
    }


def bootstrap_objects() -> list[Obj]:
    """The default roles every cluster has (kube-apiserver's bootstrap policy, the parts a
    client of the stand-in meets)."""
    health = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    discovery = ["/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", *health]
    return [
        _cluster_role(
            "cluster-admin",
            [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ],
        ),
        _group_binding("cluster-admin", ["system:masters"]),
        _cluster_role("system:discovery", [{"nonResourceURLs": discovery, "verbs": ["get"]}]),
        _group_binding("system:discovery", ["system:authenticated"]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": health, "verbs": ["get"]}]),
        _group_binding(
            "system:public-info-viewer", ["system:authenticated", "system:unauthenticated"]
        ),
        _cluster_role(
            "system:basic-user",
            [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"],
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"],
                },
            ],
        ),
        _group_binding("system:basic-user", ["system:authenticated"]),
    ]


def install(api: ApiCore, objects: list[Obj]) -> None:
    """Seed ``objects`` (validated, strict) unless one of that kind and name exists."""
    from bot.sandbox.kubesim.resources import BY_KIND

    for obj in objects:
        res = BY_KIND[obj["kind"]]
        ns = obj["metadata"].get("namespace") if res.namespaced else None
        if api.store.get(res.plural, ns, obj["metadata"]["name"]) is None:
            api.seed(obj, validate=True)


class Tokens:
    """Bearer token -> user. ServiceAccounts are looked up in the store, so one created
    through the API authenticates too (as a projected token would)."""

    def __init__(self, api: ApiCore, *, insecure_superuser: bool = False) -> None:
        self.api = api
        self.extra: dict[str, UserInfo] = {ADMIN_TOKEN: ADMIN}
        self.insecure_superuser = insecure_superuser

    def authenticate(self, authorization: str) -> UserInfo:
        """The user of an ``Authorization`` header; 401 for an unknown bearer token."""
        if not authorization:
            return UNSECURED if self.insecure_superuser else ANONYMOUS
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            if token in self.extra:
                return self.extra[token]
            prefix = "kubesim-sa-"
            for sa in self.api.store.list("serviceaccounts"):
                ns, name = sa["metadata"]["namespace"], sa["metadata"]["name"]
                if token == f"{prefix}{ns}-{name}":
                    return service_account_user(ns, name)
        raise ApiError(401, "Unauthorized", reason="Unauthorized")
