"""Server-side Table output, Leases, /openapi/v2 and /openapi/v3, and field selectors: the
stand-in answers them as kube-apiserver does, so kubectl works against it unchanged."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.resources import STORED
from gpunode_sandbox.kubesim.tables import human_duration
from tests.conftest import kube_call, kube_client_config

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _columns(table: dict[str, Any], wide: bool = False) -> list[str]:
    return [c["name"] for c in table["columnDefinitions"] if wide or c["priority"] == 0]


@pytest.mark.parametrize(
    ("path", "columns"),
    [
        ("/api/v1/nodes", ["Name", "Status", "Roles", "Age", "Version"]),
        ("/api/v1/pods", ["Name", "Ready", "Status", "Restarts", "Age"]),
        ("/api/v1/namespaces", ["Name", "Status", "Age"]),
        ("/apis/apps/v1/deployments", ["Name", "Ready", "Up-to-date", "Available", "Age"]),
        ("/apis/apps/v1/statefulsets", ["Name", "Ready", "Age"]),
        ("/apis/batch/v1/jobs", ["Name", "Status", "Completions", "Duration", "Age"]),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
        ),
        ("/apis/coordination.k8s.io/v1/leases", ["Name", "Holder", "Age"]),
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", ["Name", "Created At"]),
    ],
)
async def test_a_table_request_gets_kubectls_columns(
    kubesim: KubeSim, path: str, columns: list[str]
) -> None:
    status, table = await kube_call(kubesim.url, "GET", path, headers={"Accept": TABLE})
    assert status == 200 and table["kind"] == "Table"
    assert table["apiVersion"] == "meta.k8s.io/v1"
    assert _columns(table) == columns
    for row in table["rows"]:
        assert len(row["cells"]) == len(table["columnDefinitions"])
        assert row["object"]["kind"] == "PartialObjectMetadata"


async def test_node_and_pod_cells_say_what_kubectl_prints(kubesim: KubeSim) -> None:
    cordon = {"spec": {"unschedulable": True}}
    kubesim.api.patch(STORED["nodes"], None, "gpu-node-01", cordon, "application/merge-patch+json")
    _, nodes = await kube_call(kubesim.url, "GET", "/api/v1/nodes", headers={"Accept": TABLE})
    cells = {r["cells"][0]: r["cells"] for r in nodes["rows"]}
    assert cells["gpu-node-01"][1] == "Ready,SchedulingDisabled"
    assert cells["gpu-node-02"][1] == "Ready"
    node = kubesim.get("nodes", None, "gpu-node-01")
    assert node is not None
    assert cells["gpu-node-01"][4] == node["status"]["nodeInfo"]["kubeletVersion"]

    path = "/api/v1/namespaces/ml-train/pods/train-llm-0"
    _, one = await kube_call(kubesim.url, "GET", path, headers={"Accept": TABLE})
    pod = kubesim.get("pods", "ml-train", "train-llm-0")
    assert pod is not None and len(one["rows"]) == 1
    name, ready, phase, _restarts, age = one["rows"][0]["cells"][:5]
    assert name == "train-llm-0" and phase == pod["status"]["phase"]
    assert ready == f"{len(pod['spec']['containers'])}/{len(pod['spec']['containers'])}"
    assert age.endswith("s")


async def test_include_object_returns_the_object_or_nothing(kubesim: KubeSim) -> None:
    for include, expected in (("Object", "Namespace"), ("None", None)):
        _, table = await kube_call(
            kubesim.url,
            "GET",
            f"/api/v1/namespaces?includeObject={include}",
            headers={"Accept": TABLE},
        )
        kinds = {(r.get("object") or {}).get("kind") for r in table["rows"]}
        assert kinds == {expected}


async def test_a_plain_json_request_still_gets_the_list(kubesim: KubeSim) -> None:
    _, body = await kube_call(kubesim.url, "GET", "/api/v1/nodes")
    assert body["kind"] == "NodeList"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (9 * 3600, "9h"),
        (50 * 3600, "2d2h"),
        (9 * 86400, "9d"),
        (800 * 86400, "2y70d"),
        (-5, "<invalid>"),
    ],
)
def test_ages_read_like_kubectls(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    ("path", "selector", "status", "message"),
    [
        ("/api/v1/pods", "spec.nodeName=gpu-node-01", 200, None),
        ("/api/v1/pods", "status.phase!=Running", 200, None),
        ("/api/v1/pods", "spec.foo=bar", 400, "field label not supported: spec.foo"),
        ("/api/v1/nodes", "spec.unschedulable=false", 200, None),
        (
            "/api/v1/nodes",
            "metadata.namespace=x",
            400,
            "field label not supported: metadata.namespace",
        ),
        ("/api/v1/events", "involvedObject.kind=Node,involvedObject.name=gpu-node-01", 200, None),
        (
            "/apis/apps/v1/deployments",
            "spec.replicas=1",
            400,
            "field label not supported: spec.replicas",
        ),
        ("/apis/apps/v1/deployments", "metadata.name=x", 200, None),
    ],
)
async def test_unsupported_field_selectors_are_a_400_in_the_servers_words(
    kubesim: KubeSim, path: str, selector: str, status: int, message: str | None
) -> None:
    got, body = await kube_call(kubesim.url, "GET", f"{path}?fieldSelector={selector}")
    assert got == status, body
    if message:
        assert body["reason"] == "BadRequest" and body["message"] == message


async def test_leases_are_strict_crud_with_conflicts(kubesim: KubeSim) -> None:
    api: Any = client.CoordinationV1Api(client.ApiClient(kube_client_config(kubesim.url)))

    def run() -> None:
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(name="leader"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
        )
        made = api.create_namespaced_lease("default", body)
        made.spec.holder_identity = "b"
        updated = api.replace_namespaced_lease("leader", "default", made)
        assert updated.spec.holder_identity == "b"
        with pytest.raises(ApiException) as stale:
            api.replace_namespaced_lease("leader", "default", made)  # old resourceVersion
        assert stale.value.status == 409
        api.delete_namespaced_lease("leader", "default")
        assert api.list_namespaced_lease("default").items == []

    await asyncio.to_thread(run)
    bad = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "x"},
        "spec": {"holder": "a"},
    }
    status, body = await kube_call(
        kubesim.url, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", body=bad
    )
    assert status == 422 and "holder" in body["message"]
    status, _ = await kube_call(
        kubesim.url, "GET", "/apis/coordination.k8s.io/v1/leases", token=BOT_TOKEN
    )
    assert status == 403  # the bot is not granted leases


async def test_openapi_v2_serves_the_official_definitions_with_kinds_and_paths(
    kubesim: KubeSim,
) -> None:
    status, doc = await kube_call(kubesim.url, "GET", "/openapi/v2", token=BOT_TOKEN)
    assert status == 200 and doc["swagger"] == "2.0"
    pod = doc["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    containers = doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    patch = doc["paths"]["/api/v1/nodes/{name}"]["patch"]
    assert {"fieldValidation", "dryRun"} <= {p["name"] for p in patch["parameters"]}
    protobuf = {"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
    status, body = await kube_call(kubesim.url, "GET", "/openapi/v2", headers=protobuf)
    assert status == 406 and body["reason"] == "NotAcceptable"
    status, _ = await kube_call(kubesim.url, "GET", "/openapi/v2", token=None)
    assert status == 403  # system:discovery is for authenticated users


async def test_openapi_v3_indexes_each_group_version(kubesim: KubeSim) -> None:
    _, index = await kube_call(kubesim.url, "GET", "/openapi/v3")
    url = index["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
    status, doc = await kube_call(kubesim.url, "GET", url)
    assert status == 200 and doc["openapi"].startswith("3.")
    assert "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}" in doc["paths"]
    assert "io.k8s.api.coordination.v1.Lease" in doc["components"]["schemas"]


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl missing")


def _kubectl(url: str, *args: str) -> str:
    return subprocess.run(
        ["kubectl", *args, "--server", url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout


@needs_kubectl
async def test_kubectl_get_prints_the_servers_columns_and_apply_validates(
    make_kubesim: Any, tmp_path: Any
) -> None:
    sim = await make_kubesim("seed", insecure_superuser=True)
    nodes = await asyncio.to_thread(_kubectl, sim.url, "get", "nodes")
    assert nodes.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "gpu-node-01" in nodes
    pods = await asyncio.to_thread(_kubectl, sim.url, "get", "pods", "-n", "ml-train")
    assert pods.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    manifest = tmp_path / "lease.yaml"
    manifest.write_text(
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: l, namespace: default}\n"
        "spec: {holderIdentity: me}\n"
    )
    applied = await asyncio.to_thread(_kubectl, sim.url, "apply", "-f", str(manifest))
    assert "lease.coordination.k8s.io/l created" in applied
    leases = await asyncio.to_thread(_kubectl, sim.url, "get", "leases", "-A")
    assert leases.splitlines()[0].split() == ["NAMESPACE", "NAME", "HOLDER", "AGE"]
    watched = await asyncio.to_thread(_watch_briefly, sim.url, "get", "nodes", "-w")
    assert watched.splitlines()[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "gpu-node-01" in watched


def _watch_briefly(url: str, *args: str) -> str:
    """kubectl's output during a few seconds of a watch (it runs until stopped)."""
    try:
        subprocess.run(
            ["kubectl", *args, "--server", url], capture_output=True, text=True, timeout=4
        )
    except subprocess.TimeoutExpired as stopped:
        out = stopped.stdout or b""
        return out.decode() if isinstance(out, bytes) else out
    raise AssertionError("the watch ended by itself")
