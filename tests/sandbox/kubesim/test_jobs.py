"""The job controller runs the real collector against a generated host tree."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from bot.core.model.evidence import EvidenceBundle
from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_client_config

COLLECTOR = Path(__file__).resolve().parents[3] / "bot" / "collectors" / "bundle.py"
needs_collector = pytest.mark.skipif(
    not COLLECTOR.exists(), reason="bot/collectors/bundle.py not written yet"
)


def diag_job(
    name: str,
    node: str,
    *,
    image: str = "ghcr.io/gpunode/gpunode:0.1.0",
    deadline: int | None = 60,
    ttl: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/name": "gpunode-collector"}},
            "spec": {
                "nodeName": node,
                "restartPolicy": "Never",
                "hostPID": True,
                # NVML comes only through the NVIDIA runtime, as on a real node
                "runtimeClassName": "nvidia",
                "containers": [
                    {
                        "name": "collect",
                        "image": image,
                        "args": ["collect"],
                        "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
                    }
                ],
            },
        },
    }
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


async def wait_job(batch: Any, name: str, *, within_s: float = 30, ns: str = "default") -> Any:
    for _ in range(int(within_s / 0.05)):
        job = await asyncio.to_thread(batch.read_namespaced_job, name, ns)
        if job.status.conditions:
            return job
        await asyncio.sleep(0.05)
    raise AssertionError(f"job {name} did not finish")


@needs_collector
@pytest.mark.slow
async def test_diagnostic_job_yields_a_log_that_parses_as_an_evidence_bundle(
    kubesim: KubeSim,
) -> None:
    api = client.ApiClient(kube_client_config(kubesim.url))
    batch: Any = client.BatchV1Api(api)
    v1: Any = client.CoreV1Api(api)
    await asyncio.to_thread(batch.create_namespaced_job, "default", diag_job("diag", "gpu-node-01"))
    job = await wait_job(batch, "diag")
    assert [c.type for c in job.status.conditions] == ["SuccessCriteriaMet", "Complete"]
    pods = (
        await asyncio.to_thread(v1.list_namespaced_pod, "default", label_selector="job-name=diag")
    ).items
    assert pods[0].metadata.owner_references[0].uid == job.metadata.uid
    assert pods[0].status.phase == "Succeeded"
    log = await asyncio.to_thread(v1.read_namespaced_pod_log, pods[0].metadata.name, "default")
    bundle = EvidenceBundle.model_validate_json(log)
    assert bundle.node_name == "gpu-node-01"
    assert bundle.meminfo is not None
    assert bundle.meminfo.s_unreclaim_bytes == 36 * 2**30
    # The scenario's 3.5 GiB, less what the diagnostic pod itself holds (a few MiB of anon).
    available = bundle.meminfo.mem_available_bytes
    assert available is not None and 3520 * 2**20 <= available < 3584 * 2**20
    train = kubesim.get("pods", "ml-train", "train-llm-0")
    assert train is not None
    cid = train["status"]["containerStatuses"][0]["containerID"].split("://")[1]
    assert any(
        c.container_id == cid and c.pod_uid == train["metadata"]["uid"] for c in bundle.containers
    )
    assert len(bundle.gpus) == 8


@pytest.mark.parametrize(
    ("node", "image", "waiting"),
    [
        ("gpu-node-99", "ghcr.io/gpunode/gpunode:0.1.0", None),
        ("gpu-node-01", "ghcr.io/gpunode/gpunode:bad", "ImagePullBackOff"),
    ],
)
async def test_jobs_that_cannot_start_fail_with_deadline_exceeded(
    make_kubesim: Any, node: str, image: str, waiting: str | None
) -> None:
    sim = await make_kubesim("seed", step_s=0.01)
    api = client.ApiClient(kube_client_config(sim.url))
    batch: Any = client.BatchV1Api(api)
    v1: Any = client.CoreV1Api(api)
    await asyncio.to_thread(
        batch.create_namespaced_job, "default", diag_job("stuck", node, image=image, deadline=1)
    )
    await asyncio.sleep(0.4)
    pod = sim.list("pods", "default")[0]
    assert pod["status"]["phase"] == "Pending"
    if waiting:
        assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == waiting
    with pytest.raises(ApiException) as err:
        await asyncio.to_thread(v1.read_namespaced_pod_log, pod["metadata"]["name"], "default")
    assert err.value.status == 400
    job = await wait_job(batch, "stuck")
    assert job.status.conditions[-1].type == "Failed"
    assert job.status.conditions[-1].reason == "DeadlineExceeded"


async def test_collector_fault_fails_the_job_and_ttl_deletes_it(make_kubesim: Any) -> None:
    from gpunode_sandbox.kubesim.scenarios import Fault, load_scenario

    scenario = load_scenario("seed")
    scenario = scenario.model_copy(update={"faults": [Fault(kind="collector_error")]})
    sim = await make_kubesim(scenario, step_s=0.01)
    batch: Any = client.BatchV1Api(client.ApiClient(kube_client_config(sim.url)))
    await asyncio.to_thread(
        batch.create_namespaced_job, "default", diag_job("broken", "gpu-node-01", ttl=0)
    )
    for _ in range(200):
        if sim.get("jobs", "default", "broken") is None:
            break
        await asyncio.sleep(0.02)
    assert sim.get("jobs", "default", "broken") is None
    assert sim.list("pods", "default") == []
    assert any(m == "PATCH" or p.endswith("/jobs") for m, p, _ in sim.requests)


async def test_deleting_a_job_in_the_background_deletes_its_pods(make_kubesim: Any) -> None:
    sim = await make_kubesim("seed", step_s=0.01)
    batch: Any = client.BatchV1Api(client.ApiClient(kube_client_config(sim.url)))
    await asyncio.to_thread(
        batch.create_namespaced_job, "default", diag_job("gone", "gpu-node-99", deadline=None)
    )
    await asyncio.sleep(0.1)
    assert len(sim.list("pods", "default")) == 1
    await asyncio.to_thread(
        batch.delete_namespaced_job, "gone", "default", propagation_policy="Background"
    )
    assert sim.list("pods", "default") == []


@pytest.mark.parametrize(
    ("mode", "phase", "job_reason"),
    [
        ("crash", "Failed", "BackoffLimitExceeded"),
        ("not_admitted", "Failed", "BackoffLimitExceeded"),
        ("bad_log", "Succeeded", "CompletionsReached"),
        ("hang", None, "DeadlineExceeded"),
        ("never_started", None, "DeadlineExceeded"),
    ],
)
async def test_diagnostic_modes_shape_the_pod_and_the_job(
    make_kubesim: Any, mode: str, phase: str | None, job_reason: str
) -> None:
    sim = await make_kubesim("seed", step_s=0.01)
    sim.diagnostic_mode["gpu-node-02"] = mode
    batch: Any = client.BatchV1Api(client.ApiClient(kube_client_config(sim.url)))
    await asyncio.to_thread(
        batch.create_namespaced_job,
        "gpunode",
        diag_job("d", "gpu-node-02", deadline=1)
        | {"metadata": {"name": "d", "namespace": "gpunode"}},
    )
    for _ in range(200):
        job = sim.get("jobs", "gpunode", "d")
        if job and job["status"].get("conditions"):
            break
        await asyncio.sleep(0.02)
    assert job is not None
    assert job["status"]["conditions"][-1]["reason"] == job_reason
    pods = sim.list("pods", "gpunode")
    assert [p["status"]["phase"] for p in pods] == ([phase] if phase else [])
    if mode == "bad_log":
        assert sim.logs[("gpunode", pods[0]["metadata"]["name"])].startswith("gpunode collect")
