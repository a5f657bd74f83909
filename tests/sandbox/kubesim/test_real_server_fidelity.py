"""Where a real API server and the stand-in used to differ: protobuf review bodies, whoami,
defaulting, name validation, node Leases, more served kinds (authorized before a 404),
server-side apply create, and scenario stamps dated from the start."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN, BOT_TOKEN
from gpunode_sandbox.kubesim.names import name_errors
from tests.conftest import kube_call

REPO = Path(__file__).resolve().parents[3]
PROTOBUF = "application/vnd.kubernetes.protobuf"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
# recorded from kubectl 1.33.1 ``auth can-i VERB RESOURCE -n NS`` (tests/fixtures would hold
# larger ones; these are short enough to read here)
SSAR_GET_PODS_ML_TRAIN = (
    b"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12=\n\x10\n"
    b'\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12\x1f\n\x1d\n\x08ml-train\x12\x03get'
    b'\x1a\x00"\x00*\x04pods2\x00:\x00\x1a\x08\x08\x00\x12\x00\x1a\x00 \x00\x1a\x00"\x00'
)
SSAR_GET_SECRETS_GPUNODE = (
    b"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12?\n\x10\n"
    b'\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12!\n\x1f\n\x07gpunode\x12\x03get\x1a'
    b'\x00"\x00*\x07secrets2\x00:\x00\x1a\x08\x08\x00\x12\x00\x1a\x00 \x00\x1a\x00"\x00'
)
SSAR_CREATE_EVICTION = (
    b"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12H\n\x10\n"
    b'\x00\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12*\n(\n\x08ml-train\x12\x06create\x1a'
    b'\x00"\x00*\x04pods2\x08eviction:\x00\x1a\x08\x08\x00\x12\x00\x1a\x00 \x00\x1a\x00"\x00'
)
SSR_WHOAMI = (
    b"k8s\x00\n-\n\x18authentication.k8s.io/v1\x12\x11SelfSubjectReview\x12\x1a\n\x10\n\x00"
    b'\x12\x00\x1a\x00"\x00*\x002\x008\x00B\x00\x12\x06\n\x04\n\x00\x12\x00\x1a\x00"\x00'
)


async def _post_raw(url: str, path: str, body: bytes, content_type: str) -> tuple[int, Any]:
    headers = {
        "Authorization": f"Bearer {BOT_TOKEN}",
        "Content-Type": content_type,
        "Accept": f"{PROTOBUF},application/json",
    }
    async with (
        aiohttp.ClientSession() as http,
        http.post(url + path, data=body, headers=headers) as resp,
    ):
        return resp.status, await resp.json()


@pytest.mark.parametrize(
    ("body", "allowed"),
    [
        (SSAR_GET_PODS_ML_TRAIN, True),
        (SSAR_CREATE_EVICTION, True),
        (SSAR_GET_SECRETS_GPUNODE, False),
    ],
)
async def test_a_protobuf_access_review_from_kubectl_is_answered_for_the_bots_rights(
    kubesim: KubeSim, body: bytes, allowed: bool
) -> None:
    path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    status, review = await _post_raw(kubesim.url, path, body, PROTOBUF)
    assert status == 201 and review["kind"] == "SelfSubjectAccessReview"
    assert review["status"]["allowed"] is allowed
    assert review["spec"]["resourceAttributes"]["namespace"] in ("ml-train", "gpunode")


async def test_whoami_names_the_bots_service_account_from_a_protobuf_body(
    kubesim: KubeSim,
) -> None:
    path = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, review = await _post_raw(kubesim.url, path, SSR_WHOAMI, PROTOBUF)
    assert status == 201 and review["kind"] == "SelfSubjectReview"
    info = review["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:gpunode:gpunode"
    assert "system:authenticated" in info["groups"]


async def test_a_protobuf_body_of_a_kind_the_stand_in_cannot_decode_is_a_415(
    kubesim: KubeSim,
) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": PROTOBUF}
    envelope = b"k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x00"  # TypeMeta v1/ConfigMap
    path = "/api/v1/namespaces/ml-train/configmaps"
    async with (
        aiohttp.ClientSession() as http,
        http.post(kubesim.url + path, data=envelope, headers=headers) as resp,
    ):
        status, answer = resp.status, await resp.json()
    assert status == 415 and answer["reason"] == "UnsupportedMediaType"
    assert answer["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )
    assert kubesim.list("configmaps", "ml-train") == []


async def test_workload_strategies_and_pod_tolerations_are_defaulted(kubesim: KubeSim) -> None:
    sts = kubesim.get("statefulsets", "ml-train", "train-llm")
    assert sts is not None
    assert sts["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"partition": 0},
    }
    assert sts["spec"]["podManagementPolicy"] == "OrderedReady"
    [deploy, *_] = kubesim.list("deployments")
    assert deploy["spec"]["strategy"]["rollingUpdate"] == {
        "maxUnavailable": "25%",
        "maxSurge": "25%",
    }
    [ds, *_] = kubesim.list("daemonsets")
    assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": 1, "maxSurge": 0}
    pod = kubesim.get("pods", "ml-train", "train-llm-0")
    assert pod is not None
    keys = {t["key"]: t for t in pod["spec"]["tolerations"] if t.get("tolerationSeconds")}
    assert keys["node.kubernetes.io/not-ready"]["tolerationSeconds"] == 300
    assert keys["node.kubernetes.io/unreachable"]["effect"] == "NoExecute"


async def test_a_pod_that_tolerates_not_ready_itself_keeps_its_own_toleration(
    kubesim: KubeSim,
) -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "tolerant", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], "tolerations": [own]},
    }
    status, made = await kube_call(kubesim.url, "POST", "/api/v1/namespaces/default/pods", body=pod)
    assert status == 201, made
    not_ready = [
        t for t in made["spec"]["tolerations"] if t["key"] == "node.kubernetes.io/not-ready"
    ]
    assert not_ready == [own]


@pytest.mark.parametrize(
    ("kind", "name", "valid"),
    [
        ("Pod", "train-llm-0", True),
        ("Pod", "Train_LLM", False),
        ("Pod", "a." * 127 + "b", False),
        ("Namespace", "ml.train", False),
        ("Namespace", "ml-train", True),
        ("ClusterRole", "system:basic-user", True),
        ("ClusterRole", "a/b", False),
        ("ConfigMap", "kube-root-ca.crt", True),
        ("ConfigMap", "-x", False),
    ],
)
def test_names_follow_the_rule_of_their_kind(kind: str, name: str, valid: bool) -> None:
    assert (name_errors(kind, name) == []) is valid


async def test_an_invalid_name_is_refused_in_the_api_servers_words(kubesim: KubeSim) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}
    status, answer = await kube_call(
        kubesim.url, "POST", "/api/v1/namespaces/default/configmaps", body=body
    )
    assert status == 422 and answer["reason"] == "Invalid"
    assert answer["message"] == (
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase '
        "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
        "must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )


async def test_every_node_has_a_lease_held_by_its_kubelet(kubesim: KubeSim) -> None:
    leases = {
        lease["metadata"]["name"]: lease for lease in kubesim.list("leases", "kube-node-lease")
    }
    for node in kubesim.list("nodes"):
        lease = leases[node["metadata"]["name"]]
        assert lease["spec"]["holderIdentity"] == node["metadata"]["name"]
        assert lease["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]
        assert lease["spec"]["renewTime"].endswith(".000000Z")  # a MicroTime


@pytest.mark.parametrize("plural", ["secrets", "configmaps", "cronjobs", "replicationcontrollers"])
async def test_newly_served_kinds_are_authorized_before_they_are_looked_up(
    kubesim: KubeSim, plural: str
) -> None:
    group = "/apis/batch/v1" if plural == "cronjobs" else "/api/v1"
    path = f"{group}/namespaces/gpunode/{plural}/absent"
    status, answer = await kube_call(kubesim.url, "GET", path, token=BOT_TOKEN)
    if plural == "secrets":  # the bot may never read Secrets: a 403, not a 404
        assert status == 403 and answer["reason"] == "Forbidden"
        assert 'cannot get resource "secrets"' in answer["message"]
    else:
        assert status in (403, 404)
    status, answer = await kube_call(kubesim.url, "GET", path)
    assert status == 404 and answer["reason"] == "NotFound"


async def test_server_side_apply_creates_then_updates_and_needs_a_field_manager(
    kubesim: KubeSim,
) -> None:
    path = "/api/v1/namespaces/default/configmaps/applied"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied"},
        "data": {"a": "1"},
    }
    ssa = "application/apply-patch+yaml"
    status, answer = await kube_call(kubesim.url, "PATCH", path, body=body, content_type=ssa)
    assert status == 422 and "fieldManager: Required value" in answer["message"]
    assert kubesim.get("configmaps", "default", "applied") is None
    status, made = await kube_call(
        kubesim.url, "PATCH", path + "?fieldManager=me", body=body, content_type=ssa
    )
    assert status == 201 and made["data"] == {"a": "1"}
    body["data"] = {"a": "2"}
    status, changed = await kube_call(
        kubesim.url, "PATCH", path + "?fieldManager=me", body=body, content_type=ssa
    )
    assert status == 200 and changed["data"] == {"a": "2"}


async def test_a_stand_in_started_today_dates_its_scenario_from_the_start(
    make_kubesim: Any,
) -> None:
    sim = await make_kubesim("seed", clock_from_start=True)
    now = datetime.now(UTC)
    stamps = [e["lastTimestamp"] for e in sim.list("events")]
    assert stamps
    for stamp in stamps:
        when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert now - timedelta(days=2) <= when <= now + timedelta(minutes=5)
    for node in sim.list("nodes"):  # written by the API from the real clock: kept as it is
        created = node["metadata"]["creationTimestamp"]
        when = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert now - timedelta(minutes=5) <= when <= now + timedelta(minutes=5)
    fixed = await make_kubesim("seed")
    assert {e["lastTimestamp"] for e in fixed.list("events")} != set(stamps)


async def _wait_gone(sim: KubeSim, namespace: str, name: str, limit_s: float = 30.0) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    while sim.get("pods", namespace, name) is not None:
        assert loop.time() - start < limit_s, "the pod never went"
        await asyncio.sleep(0.05)
    return loop.time() - start


async def test_an_evicted_pod_is_terminating_then_gone(make_kubesim: Any) -> None:
    sim = await make_kubesim("seed", sigterm_exit_s=0.5)
    [pod] = [p for p in sim.list("pods", "data-prep") if p["metadata"]["name"].startswith("prep")]
    name = pod["metadata"]["name"]
    path = f"/api/v1/namespaces/data-prep/pods/{name}/eviction"
    status, _ = await kube_call(sim.url, "POST", path, body={"metadata": {"name": name}})
    assert status == 201
    terminating = sim.get("pods", "data-prep", name)
    assert terminating is not None  # SIGTERM sent; the containers have not exited yet
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
    assert terminating["metadata"]["deletionTimestamp"]
    _, table = await kube_call(
        sim.url, "GET", f"/api/v1/namespaces/data-prep/pods/{name}", headers={"Accept": TABLE}
    )
    assert table["rows"][0]["cells"][2] == "Terminating"
    await _wait_gone(sim, "data-prep", name)


async def test_the_grace_period_bounds_a_slow_shutdown(make_kubesim: Any) -> None:
    # the containers would take a minute to exit; the kubelet kills them after the 1 s grace
    sim = await make_kubesim("seed", sigterm_exit_s=60.0)
    [pod] = [p for p in sim.list("pods", "data-prep") if p["metadata"]["name"].startswith("prep")]
    name = pod["metadata"]["name"]
    body = {"metadata": {"name": name}, "deleteOptions": {"gracePeriodSeconds": 1}}
    path = f"/api/v1/namespaces/data-prep/pods/{name}/eviction"
    status, _ = await kube_call(sim.url, "POST", path, body=body)
    assert status == 201
    assert sim.get("pods", "data-prep", name) is not None
    await _wait_gone(sim, "data-prep", name)


async def test_a_zero_grace_period_removes_the_pod_at_once(make_kubesim: Any) -> None:
    sim = await make_kubesim("seed", sigterm_exit_s=60.0)
    [pod] = [p for p in sim.list("pods", "data-prep") if p["metadata"]["name"].startswith("prep")]
    name = pod["metadata"]["name"]
    path = f"/api/v1/namespaces/data-prep/pods/{name}?gracePeriodSeconds=0"
    status, _ = await kube_call(sim.url, "DELETE", path)
    assert status == 200
    assert sim.get("pods", "data-prep", name) is None


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox:1.36", **spec.pop("container", {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], **spec},
    }


async def _namespace(sim: KubeSim, name: str, level: str) -> None:
    labels = {"pod-security.kubernetes.io/enforce": level}
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
    status, _ = await kube_call(sim.url, "POST", "/api/v1/namespaces", body=body)
    assert status == 201


async def test_a_baseline_namespace_refuses_host_namespaces_in_pod_securitys_words(
    kubesim: KubeSim,
) -> None:
    await _namespace(kubesim, "team-a", "baseline")
    pod = _pod(
        "hosty",
        hostPID=True,
        hostNetwork=True,
        volumes=[{"name": "host-proc", "hostPath": {"path": "/proc"}}],
    )
    status, answer = await kube_call(
        kubesim.url, "POST", "/api/v1/namespaces/team-a/pods", body=pod
    )
    assert status == 403 and answer["reason"] == "Forbidden"
    assert answer["message"] == (
        'pods "hosty" is forbidden: violates PodSecurity "baseline:latest": host namespaces '
        '(hostNetwork=true, hostPID=true), hostPath volumes (volume "host-proc")'
    )
    plain = _pod("plain")
    status, _ = await kube_call(kubesim.url, "POST", "/api/v1/namespaces/team-a/pods", body=plain)
    assert status == 201


async def test_a_restricted_namespace_wants_the_hardened_container(kubesim: KubeSim) -> None:
    await _namespace(kubesim, "team-r", "restricted")
    path = "/api/v1/namespaces/team-r/pods"
    status, answer = await kube_call(kubesim.url, "POST", path, body=_pod("loose"))
    assert status == 403
    for reason in (
        "allowPrivilegeEscalation != false",
        "unrestricted capabilities",
        "runAsNonRoot != true",
        "seccompProfile",
    ):
        assert reason in answer["message"]
    hardened = _pod(
        "hardened",
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        container={
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
            }
        },
    )
    status, made = await kube_call(kubesim.url, "POST", path, body=hardened)
    assert status == 201, made


async def test_the_bots_own_namespace_admits_the_diagnostic_pod_as_shipped(
    kubesim: KubeSim,
) -> None:
    # deploy/base labels gpunode `enforce: privileged`: the collector's hostPID and host
    # mounts are admitted there, and would not be under baseline
    from gpunode_sandbox.kubesim.podsecurity import baseline

    namespace = yaml.safe_load((REPO / "deploy/base/namespace.yaml").read_text())
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    from bot.config import KubeSettings
    from bot.kube.jobs import build_job

    spec = build_job(KubeSettings(), "gpu-node-01", "abc123")["spec"]["template"]["spec"]
    assert baseline(spec)  # hostPID, hostNetwork, hostPath, SYSLOG: not baseline


async def test_a_pod_a_custom_resource_owns_carries_its_memory(make_kubesim: Any) -> None:
    from tests.kube.remedy_scenarios import seed_with

    trainer = {
        "kind": "Pod",
        "name": "llm-ft-worker-0",
        "namespace": "ml-train",
        "nodes": ["gpu-node-01"],
        "owner": {"api_version": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llm-ft"},
        "containers": [
            {
                "name": "pytorch",
                "image": "pytorch:2",
                "requests": {"memory": "16Gi"},
                "limits": {"memory": "32Gi"},
                "usage": {"anon": "12Gi", "file": "1Gi"},
            }
        ],
    }
    sim = await make_kubesim(seed_with([trainer], crds=["pytorchjobs.kubeflow.org"]))
    [pod] = [p for p in sim.list("pods", "ml-train") if p["metadata"]["name"] == "llm-ft-worker-0"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "PyTorchJob"
    path = "/apis/metrics.k8s.io/v1beta1/namespaces/ml-train/pods/llm-ft-worker-0"
    status, metrics = await kube_call(sim.url, "GET", path)
    assert status == 200
    used = metrics["containers"][0]["usage"]["memory"]
    assert used.endswith("Ki") and int(used[:-2]) * 1024 > 12 * 2**30
