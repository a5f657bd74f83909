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

import dataclasses
import functools
import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gpunode_sandbox.kubesim.authz import ANONYMOUS, UserInfo
from gpunode_sandbox.kubesim.kustomize import render
from gpunode_sandbox.kubesim.statuses import ApiError
from gpunode_sandbox.kubesim.store import Obj

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

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
    from gpunode_sandbox.kubesim.resources import BY_KIND

    for obj in objects:
        res = BY_KIND[obj["kind"]]
        ns = obj["metadata"].get("namespace") if res.namespaced else None
        if api.store.get(res.plural, ns, obj["metadata"]["name"]) is None:
            api.seed(obj, validate=True)


#: the API server's own audience (kube-apiserver's --api-audiences defaults to its
#: --service-account-issuer): a token is good for API requests only when it carries it
API_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)


class TokenGrant(NamedTuple):
    """What a token issued by ``Tokens.issue`` stands for (a projected, bound token)."""

    namespace: str
    name: str
    audiences: tuple[str, ...]
    pod: Obj | None


class Tokens:
    """Bearer token -> user. ServiceAccounts are looked up in the store, so one created
    through the API authenticates too (as a projected token would). Their plain tokens carry
    the API server's audience; ``issue`` mints a token with other audiences, as the kubelet
    gets one for a projected ``serviceAccountToken`` volume (TokenRequest), optionally bound
    to a pod (its name, uid and node appear in the TokenReview's ``user.extra``)."""

    def __init__(self, api: ApiCore, *, insecure_superuser: bool = False) -> None:
        self.api = api
        self.extra: dict[str, UserInfo] = {ADMIN_TOKEN: ADMIN}
        self.insecure_superuser = insecure_superuser
        self.issued: dict[str, TokenGrant] = {}

    def issue(
        self, namespace: str, name: str, audiences: tuple[str, ...], *, pod: Obj | None = None
    ) -> str:
        """A new token of ServiceAccount ``namespace/name`` for ``audiences``."""
        if not audiences:
            raise ValueError("a token needs at least one audience")
        token = f"kubesim-projected-{secrets.token_hex(12)}"
        self.issued[token] = TokenGrant(namespace, name, tuple(audiences), pod)
        return token

    def _service_account(self, token: str) -> tuple[UserInfo, tuple[str, ...]] | None:
        """The user of a ServiceAccount token and the audiences it carries (None: unknown,
        or its ServiceAccount or bound pod was deleted)."""
        grant = self.issued.get(token)
        if grant is not None:
            if self.api.store.get("serviceaccounts", grant.namespace, grant.name) is None:
                return None
            user = service_account_user(grant.namespace, grant.name)
            if grant.pod is not None:
                meta = grant.pod["metadata"]
                live = self.api.store.get("pods", meta["namespace"], meta["name"])
                if live is None or live["metadata"].get("uid") != meta.get("uid"):
                    return None  # a bound token dies with its pod
                node = (grant.pod.get("spec") or {}).get("nodeName")
                extra = [
                    ("authentication.kubernetes.io/pod-name", (meta["name"],)),
                    ("authentication.kubernetes.io/pod-uid", (str(meta.get("uid")),)),
                ]
                if node:  # ServiceAccountTokenPodNodeInfo (beta 1.30, GA 1.32)
                    extra.append(("authentication.kubernetes.io/node-name", (node,)))
                user = dataclasses.replace(user, extra=tuple(extra))
            return user, grant.audiences
        prefix = "kubesim-sa-"
        for sa in self.api.store.list("serviceaccounts"):
            ns, name = sa["metadata"]["namespace"], sa["metadata"]["name"]
            if token == f"{prefix}{ns}-{name}":
                return service_account_user(ns, name), API_AUDIENCES
        return None

    def review(self, token: str, audiences: tuple[str, ...]) -> tuple[UserInfo, tuple[str, ...]]:
        """Authenticate ``token`` for ``audiences`` (the API server's when empty): its user
        and the audiences it is good for among them; ApiError(401) with the authenticator's
        message when it is not good for any."""
        wanted = audiences or API_AUDIENCES
        if token in self.extra:
            if not set(wanted) & set(API_AUDIENCES):
                raise ApiError(401, "[invalid bearer token, token lookup failed]")
            return self.extra[token], tuple(a for a in wanted if a in API_AUDIENCES)
        found = self._service_account(token)
        if found is None:
            raise ApiError(401, "[invalid bearer token, token lookup failed]")
        user, carried = found
        good = tuple(a for a in wanted if a in carried)
        if not good:
            raise ApiError(
                401,
                f"[invalid bearer token, token audiences {json.dumps(list(carried))} is invalid "
                f"for the target audiences {json.dumps(list(wanted))}]",
            )
        return user, good

    def authenticate(self, authorization: str) -> UserInfo:
        """The user of an ``Authorization`` header; 401 for an unknown bearer token, or one
        not meant for the API server (another audience)."""
        if not authorization:
            return UNSECURED if self.insecure_superuser else ANONYMOUS
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token:
            try:
                return self.review(token, API_AUDIENCES)[0]
            except ApiError:
                pass
        raise ApiError(401, "Unauthorized", reason="Unauthorized")
