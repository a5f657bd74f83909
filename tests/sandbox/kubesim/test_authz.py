"""The stand-in authenticates by bearer token and authorizes with RBAC's real semantics."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN, BOT_TOKEN, service_account_token
from gpunode_sandbox.kubesim.authz import Attributes, UserInfo, rule_allows
from tests.conftest import kube_call, kube_client_config

BOT = "system:serviceaccount:gpunode:gpunode"


@pytest.mark.parametrize(
    ("token", "method", "path", "status", "message"),
    [
        (BOT_TOKEN, "GET", "/api/v1/nodes", 200, None),
        (BOT_TOKEN, "GET", "/api/v1/pods", 200, None),
        (
            BOT_TOKEN,
            "GET",
            "/api/v1/namespaces/gpunode/pods?watch=true&timeoutSeconds=1",
            200,
            None,
        ),
        (
            BOT_TOKEN,
            "GET",
            "/api/v1/namespaces/ml-train/persistentvolumeclaims?watch=true&timeoutSeconds=1",
            403,
            f'persistentvolumeclaims is forbidden: User "{BOT}" cannot watch resource '
            '"persistentvolumeclaims" in API group "" in the namespace "ml-train"',
        ),
        (
            BOT_TOKEN,
            "POST",
            "/api/v1/namespaces/default/pods",
            403,
            f'pods is forbidden: User "{BOT}" cannot create resource "pods" in API group "" '
            'in the namespace "default"',
        ),
        (
            BOT_TOKEN,
            "GET",
            "/api/v1/namespaces/ml-train/pods/train-llm-0/log",
            403,
            f'pods "train-llm-0" is forbidden: User "{BOT}" cannot get resource "pods/log" in '
            'API group "" in the namespace "ml-train"',
        ),
        (BOT_TOKEN, "GET", "/api/v1/namespaces/gpunode/pods/nope/log", 404, None),
        (
            BOT_TOKEN,
            "DELETE",
            "/api/v1/nodes/gpu-node-01",
            403,
            f'nodes "gpu-node-01" is forbidden: User "{BOT}" cannot delete resource "nodes" in '
            'API group "" at the cluster scope',
        ),
        (
            BOT_TOKEN,
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            403,
            f'clusterroles.rbac.authorization.k8s.io is forbidden: User "{BOT}" cannot list '
            'resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope',
        ),
        (
            service_account_token("gpunode", "gpunode-collector"),
            "GET",
            "/api/v1/nodes",
            403,
            'nodes is forbidden: User "system:serviceaccount:gpunode:gpunode-collector" cannot '
            'list resource "nodes" in API group "" at the cluster scope',
        ),
        (None, "GET", "/api", 403, 'forbidden: User "system:anonymous" cannot get path "/api"'),
        (None, "GET", "/version", 200, None),
        (BOT_TOKEN, "GET", "/apis", 200, None),
        ("not-a-token", "GET", "/api/v1/nodes", 401, "Unauthorized"),
        (ADMIN_TOKEN, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpunode", 200, None),
    ],
)
async def test_requests_are_authorized_by_token_with_the_api_servers_answers(
    kubesim: KubeSim,
    token: str | None,
    method: str,
    path: str,
    status: int,
    message: str | None,
) -> None:
    got, body = await kube_call(kubesim.url, method, path, token=token)
    assert got == status, body
    if message is not None:
        assert body["kind"] == "Status" and body["message"] == message
        assert body["reason"] == ("Unauthorized" if status == 401 else "Forbidden")


async def _apply(sim: KubeSim, path: str, obj: dict[str, Any]) -> None:
    status, body = await kube_call(sim.url, "POST", path, body=obj)
    assert status == 201, body


RBAC = "/apis/rbac.authorization.k8s.io/v1"


async def test_resource_names_allow_get_by_name_but_never_list(kubesim: KubeSim) -> None:
    await _apply(
        kubesim,
        "/api/v1/namespaces/gpunode/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}},
    )
    await _apply(
        kubesim,
        f"{RBAC}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "one-node"},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes"],
                    "resourceNames": ["gpu-node-01"],
                    "verbs": ["get", "list"],
                }
            ],
        },
    )
    # a RoleBinding grants a ClusterRole inside its namespace only: nodes stay out of reach
    await _apply(
        kubesim,
        f"{RBAC}/namespaces/gpunode/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "scoped"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "one-node",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "gpunode"}],
        },
    )
    token = service_account_token("gpunode", "reader")
    assert (await kube_call(kubesim.url, "GET", "/api/v1/nodes/gpu-node-01", token=token))[0] == 403
    await _apply(
        kubesim,
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "cluster-wide"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "one-node",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "gpunode"}],
        },
    )

    assert (await kube_call(kubesim.url, "GET", "/api/v1/nodes/gpu-node-01", token=token))[0] == 200
    assert (await kube_call(kubesim.url, "GET", "/api/v1/nodes/gpu-node-02", token=token))[0] == 403
    assert (await kube_call(kubesim.url, "GET", "/api/v1/nodes", token=token))[0] == 403


async def test_a_binding_to_a_missing_role_says_so_in_the_denial(kubesim: KubeSim) -> None:
    await _apply(
        kubesim,
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "dangling"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "ghost",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "gpunode", "namespace": "gpunode"}],
        },
    )
    status, body = await kube_call(kubesim.url, "DELETE", "/api/v1/nodes/x", token=BOT_TOKEN)
    assert status == 403
    assert body["message"].endswith(
        ': RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found'
    )


async def test_an_edited_role_takes_effect_on_the_next_request(kubesim: KubeSim) -> None:
    path = f"{RBAC}/clusterroles/gpunode"
    _, role = await kube_call(kubesim.url, "GET", path)
    role["rules"] = [r for r in role["rules"] if "nodes" not in r["resources"]]
    assert (await kube_call(kubesim.url, "PUT", path, body=role))[0] == 200

    status, body = await kube_call(kubesim.url, "GET", "/api/v1/nodes", token=BOT_TOKEN)
    assert status == 403 and 'cannot list resource "nodes"' in body["message"]


USER = UserInfo("u", ("g",))


@pytest.mark.parametrize(
    ("rule", "attrs", "allowed"),
    [
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            Attributes(USER, "get", resource="pods", namespace="a", name="x"),
            True,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            Attributes(USER, "get", resource="pods", subresource="log", name="x"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
            Attributes(USER, "get", resource="pods", subresource="log", name="x"),
            True,
        ),
        (
            {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["patch"]},
            Attributes(
                USER,
                "patch",
                api_group="apps",
                resource="deployments",
                subresource="scale",
                name="d",
            ),
            True,
        ),
        (
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            Attributes(USER, "get", resource="pods", subresource="log", name="x"),
            True,
        ),
        (
            {"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"]},
            Attributes(USER, "get", resource="pods", name="x"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            Attributes(USER, "watch", resource="pods"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["x"], "verbs": ["create"]},
            Attributes(USER, "create", resource="pods"),
            False,
        ),
        (
            {"nonResourceURLs": ["/apis/*"], "verbs": ["get"]},
            Attributes(USER, "get", path="/apis/apps/v1"),
            True,
        ),
        (
            {"nonResourceURLs": ["/apis"], "verbs": ["get"]},
            Attributes(USER, "get", path="/apis/apps"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
            Attributes(USER, "get", path="/api/v1/nodes"),
            False,
        ),
    ],
)
def test_one_rule_matches_as_kubernetes_rbac_does(
    rule: dict[str, Any], attrs: Attributes, allowed: bool
) -> None:
    assert rule_allows(rule, attrs) is allowed


async def test_self_subject_access_review_answers_for_the_caller(kubesim: KubeSim) -> None:
    config = kube_client_config(kubesim.url, token=BOT_TOKEN)
    api = client.AuthorizationV1Api(client.ApiClient(config))

    def review(**attrs: str) -> Any:
        body = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(**attrs)
            )
        )
        return api.create_self_subject_access_review(body).status

    import asyncio

    evict = await asyncio.to_thread(
        review, verb="create", resource="pods", subresource="eviction", namespace="ml-train"
    )
    assert evict.allowed is True
    assert evict.reason == (
        'RBAC: allowed by ClusterRoleBinding "gpunode" of ClusterRole "gpunode" to '
        'ServiceAccount "gpunode/gpunode"'
    )
    logs = await asyncio.to_thread(
        review, verb="get", resource="pods", subresource="log", namespace="gpunode"
    )
    assert logs.allowed is True and 'RoleBinding "gpunode-diagnostics/gpunode"' in logs.reason
    create = await asyncio.to_thread(review, verb="create", resource="pods", namespace="gpunode")
    assert create.allowed is False


async def test_the_insecure_port_mode_admits_token_less_kubectl_but_not_more_for_the_bot(
    make_kubesim: Any,
) -> None:
    sim = await make_kubesim("seed", insecure_superuser=True)
    assert (await kube_call(sim.url, "GET", "/api/v1/pods", token=None))[0] == 200
    status, _ = await kube_call(
        sim.url, "POST", "/api/v1/namespaces/default/pods", token=BOT_TOKEN, body={}
    )
    assert status == 403
