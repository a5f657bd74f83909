"""The stand-in answers TokenReview (authentication.k8s.io/v1) as kube-apiserver does
(pkg/registry/authentication/tokenreview/storage.go): RBAC first, 400 without a token, 201
with ``status.authenticated``, ``user`` and ``audiences`` for a good token, an ``error`` and
no ``authenticated`` for a bad one; a token minted for another audience is not good for the
API server itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import (
    ADMIN_TOKEN,
    API_AUDIENCES,
    BOT_TOKEN,
    service_account_token,
)
from tests.conftest import kube_call
from tests.kube.agents import OVERLAY

REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
Make = Callable[..., Awaitable[KubeSim]]


def review(token: str, audiences: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"token": token}
    if audiences is not None:
        spec["audiences"] = audiences
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}


async def test_a_token_review_needs_the_tokenreviews_create_grant(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")  # deploy/base: the bot may not review tokens

    status, body = await kube_call(sim.url, "POST", REVIEWS, token=BOT_TOKEN, body=review("x"))

    assert status == 403
    assert 'cannot create resource "tokenreviews"' in body["message"]


async def test_the_agents_service_account_may_review_tokens_in_the_daemonset_overlay(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed", access_dir=OVERLAY)
    agent = service_account_token("gpunode", "gpunode-agent")
    bot = sim.authn.issue("gpunode", "gpunode", ("gpunode-agent",))

    status, body = await kube_call(
        sim.url, "POST", REVIEWS, token=agent, body=review(bot, ["gpunode-agent"])
    )

    assert status == 201
    assert body["status"]["authenticated"] is True
    assert body["status"]["user"]["username"] == "system:serviceaccount:gpunode:gpunode"
    assert "system:serviceaccounts:gpunode" in body["status"]["user"]["groups"]
    assert body["status"]["audiences"] == ["gpunode-agent"]
    assert body["spec"]["token"] == bot  # the object posted comes back, status filled in


async def test_a_review_without_a_token_is_a_bad_request(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")

    status, body = await kube_call(sim.url, "POST", REVIEWS, body=review(""))

    assert status == 400
    assert body["message"] == "token is required for TokenReview in authentication"


async def test_a_token_for_another_audience_is_not_authenticated_and_says_why(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed")

    status, body = await kube_call(sim.url, "POST", REVIEWS, body=review(BOT_TOKEN, ["other"]))

    assert status == 201
    assert "authenticated" not in body["status"]  # false is omitted, as Go's omitempty does
    assert body["status"]["user"] == {}
    assert "is invalid for the target audiences" in body["status"]["error"]


async def test_an_unknown_token_is_not_authenticated(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")

    status, body = await kube_call(sim.url, "POST", REVIEWS, body=review("made-up"))

    assert status == 201
    assert "authenticated" not in body["status"]
    assert "invalid bearer token" in body["status"]["error"]


async def test_without_audiences_the_review_is_for_the_api_servers_own(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")

    _, body = await kube_call(sim.url, "POST", REVIEWS, token=ADMIN_TOKEN, body=review(BOT_TOKEN))

    assert body["status"]["authenticated"] is True
    assert body["status"]["audiences"] == list(API_AUDIENCES)


async def test_a_token_minted_for_the_agents_is_refused_by_the_api_server(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed")
    token = sim.authn.issue("gpunode", "gpunode", ("gpunode-agent",))

    status, _ = await kube_call(sim.url, "GET", "/api/v1/nodes", token=token)

    assert status == 401


async def test_a_token_bound_to_a_pod_names_it_and_dies_with_it(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    pod = next(p for p in sim.api.store.list("pods") if p["spec"].get("nodeName"))
    ns = pod["metadata"]["namespace"]
    account = pod["spec"].get("serviceAccountName") or "default"
    if sim.api.store.get("serviceaccounts", ns, account) is None:
        sim.api.seed(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": ns},
            }
        )
    token = sim.authn.issue(ns, account, ("gpunode-agent",), pod=pod)

    _, body = await kube_call(sim.url, "POST", REVIEWS, body=review(token, ["gpunode-agent"]))
    extra = body["status"]["user"]["extra"]
    assert extra["authentication.kubernetes.io/pod-name"] == [pod["metadata"]["name"]]
    assert extra["authentication.kubernetes.io/node-name"] == [pod["spec"]["nodeName"]]

    sim.api.store.remove("pods", ns, pod["metadata"]["name"])
    _, body = await kube_call(sim.url, "POST", REVIEWS, body=review(token, ["gpunode-agent"]))
    assert "authenticated" not in body["status"]


async def test_the_official_client_reads_the_review_into_its_model(make_kubesim: Make) -> None:
    import asyncio

    from kubernetes import client

    from tests.conftest import kube_client_config

    sim = await make_kubesim("seed", access_dir=OVERLAY)
    bot = sim.authn.issue("gpunode", "gpunode", ("gpunode-agent",))
    config = kube_client_config(sim.url, token=service_account_token("gpunode", "gpunode-agent"))

    def create() -> Any:
        with client.ApiClient(config) as api:
            body = client.V1TokenReview(
                spec=client.V1TokenReviewSpec(token=bot, audiences=["gpunode-agent"])
            )
            return client.AuthenticationV1Api(api).create_token_review(body)

    answer = await asyncio.to_thread(create)

    assert answer.status.authenticated is True
    assert answer.status.user.username == "system:serviceaccount:gpunode:gpunode"
    assert answer.status.audiences == ["gpunode-agent"]
