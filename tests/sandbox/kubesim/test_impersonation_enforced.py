"""The stand-in enforces impersonation as kube-apiserver's filter does: the sender needs
``impersonate`` on the user, each group and each extra value; the request then runs as the
impersonated user, whose own RBAC decides. Requests go through the bot's transport (the
official client), which sends one header line per group and per extra value."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from bot.config import KubeSettings
from bot.core.governance.impersonation import ActingAs
from bot.kube.connecting import build_api_client
from bot.kube.transport import ACTING_AS, MERGE, Transport
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.conftest import kube_call

Make = Callable[..., Awaitable[KubeSim]]
RBAC = "/apis/rbac.authorization.k8s.io/v1"
BOT = "system:serviceaccount:gpunode:gpunode"
NODE = "/api/v1/nodes/gpu-node-01"
ALICE = ActingAs(
    user="alice@example.com",
    groups=("ml-oncall",),
    extra=(("gpunode.io/slack-user", ("U0ALICE",)), ("gpunode.io/approved-by", ("U0BOB", "U0C"))),
)


def _rule(resources: list[str], names: list[str] | None = None, group: str = "") -> dict[str, Any]:
    rule: dict[str, Any] = {"apiGroups": [group], "resources": resources, "verbs": ["impersonate"]}
    if names:
        rule["resourceNames"] = names
    return rule


async def _admin_post(sim: KubeSim, path: str, body: dict[str, Any]) -> None:
    status, answer = await kube_call(sim.url, "POST", path, body=body)
    assert status == 201, answer


async def _grant(
    sim: KubeSim, name: str, rules: list[dict[str, Any]], subject: dict[str, str]
) -> None:
    await _admin_post(
        sim,
        f"{RBAC}/clusterroles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": rules,
        },
    )
    await _admin_post(
        sim,
        f"{RBAC}/clusterrolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": name,
            },
            "subjects": [subject],
        },
    )


BOT_SUBJECT = {"kind": "ServiceAccount", "name": "gpunode", "namespace": "gpunode"}
EVERYTHING_ALICE_NEEDS = [
    _rule(["users"], ["alice@example.com"]),
    _rule(["groups"], ["ml-oncall"]),
    _rule(
        ["userextras/gpunode.io/slack-user", "userextras/gpunode.io/approved-by"],
        group="authentication.k8s.io",
    ),
]


async def _as(
    sim: KubeSim, acting: ActingAs, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    settings = KubeSettings(mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False)
    t = Transport(build_api_client(settings, retries=0))

    def call() -> Any:
        ACTING_AS.set(acting)
        return t.request(method, path, body=body, content_type=MERGE if body else None)

    try:
        return 200, await asyncio.to_thread(call)
    except ApiException as exc:
        return int(exc.status), json.loads(exc.body or "{}")
    finally:
        t.api_client.close()


async def test_the_bot_may_not_impersonate_anyone_by_default(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")

    status, body = await _as(sim, ALICE, "GET", NODE)

    assert status == 403
    assert body["message"] == (
        'users "alice@example.com" is forbidden: User "system:serviceaccount:gpunode:gpunode" '
        'cannot impersonate resource "users" in API group "" at the cluster scope'
    )


@pytest.mark.parametrize(
    ("missing", "says"),
    [
        (1, 'groups "ml-oncall" is forbidden'),
        (2, 'userextras.authentication.k8s.io "U0ALICE" is forbidden'),
    ],
)
async def test_each_group_and_extra_needs_its_own_grant(
    make_kubesim: Make, missing: int, says: str
) -> None:
    sim = await make_kubesim("seed")
    rules = [r for i, r in enumerate(EVERYTHING_ALICE_NEEDS) if i != missing]
    await _grant(sim, "impersonator", rules, BOT_SUBJECT)

    status, body = await _as(sim, ALICE, "GET", NODE)

    assert status == 403 and body["message"].startswith(says), body


async def test_the_impersonated_users_own_rbac_decides(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    await _grant(sim, "impersonator", EVERYTHING_ALICE_NEEDS, BOT_SUBJECT)

    refused, body = await _as(sim, ALICE, "PATCH", NODE, {"spec": {"unschedulable": True}})
    assert refused == 403
    assert 'User "alice@example.com" cannot patch resource "nodes"' in body["message"]

    await _grant(
        sim,
        "oncall-cordons",
        [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}],
        {"kind": "Group", "name": "ml-oncall", "apiGroup": "rbac.authorization.k8s.io"},
    )
    allowed, _ = await _as(sim, ALICE, "PATCH", NODE, {"spec": {"unschedulable": True}})

    assert allowed == 200
    method, path, sender, acting = sim.authorizer.impersonated[-1]
    assert (method, path, sender.username) == ("PATCH", NODE, BOT)
    assert acting.username == "alice@example.com"
    assert acting.groups == ("ml-oncall", "system:authenticated")
    assert dict(acting.extra) == {
        "gpunode.io/slack-user": ("U0ALICE",),
        "gpunode.io/approved-by": ("U0BOB", "U0C"),
    }


async def test_a_group_without_a_user_is_refused(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    status, body = await kube_call(
        sim.url, "GET", NODE, token=BOT_TOKEN, headers={"Impersonate-Group": "ml-oncall"}
    )
    assert status == 500 and "without impersonating a user" in body["message"]


async def test_a_request_without_impersonation_headers_runs_as_its_sender(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed")
    status, _ = await kube_call(sim.url, "GET", NODE, token=BOT_TOKEN)
    assert status == 200 and sim.authorizer.impersonated == []
