"""Tier 1 on a GPU fleet, through the real gateway over the stand-in: gangs are recognised by
API group, never evicted silently (members elsewhere and CPU-only coordinators named),
batch Job evictions are counted against backoffLimit, and gpunode never evicts itself."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes import client

from bot.core.model.gangs import gang_of
from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from bot.render.sentences import sentence
from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_client_config
from tests.kube.remedy_scenarios import gang_fleet

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"


async def _tier1(make_gateway: Make) -> tuple[Any, Any, KubeSim]:
    gw, sim = await make_gateway(gang_fleet())
    view = await gw.get_cluster_view(NODE)
    return view, plan_tier1(view), sim


async def test_a_volcano_job_is_looked_up_by_its_api_group_not_as_a_batch_job(
    make_gateway: Make,
) -> None:
    view, _, _ = await _tier1(make_gateway)
    pod = next(p for p in view.pods if p.name == "vc-train-0")
    # the chain stops at the Volcano Job: the batch/v1 Job of the same name (owned by a
    # JobSet) is never read for it
    assert [(o.api_version, o.kind, o.name) for o in pod.owners] == [
        ("batch.volcano.sh/v1alpha1", "Job", "vc-train")
    ]
    gang = gang_of(pod)
    assert gang is not None and (gang.group, gang.kind) == ("batch.volcano.sh", "Job")


@pytest.mark.parametrize(
    ("pod", "gang"),
    [
        ("llm-ft-worker-0", "PyTorchJob ml-train/llm-ft"),
        ("mpi-bench-launcher", "MPIJob ml-train/mpi-bench"),
        ("vc-train-0", "Job ml-train/vc-train"),
    ],
)
async def test_tier1_keeps_gang_members_and_names_the_gang(
    make_gateway: Make, pod: str, gang: str
) -> None:
    _, plan, _ = await _tier1(make_gateway)
    reasons = {p.pod: p.reason for p in plan.protected}
    assert reasons[f"ml-train/{pod}"] == "gang_member"
    assert f"ml-train/{pod}" not in plan.blast_radius
    notes = {n.params["gang"]: n for n in plan.notes if n.code == "gang_kept"}
    assert gang in notes


async def test_the_gang_note_names_members_on_other_nodes_and_cpu_only_coordinators(
    make_gateway: Make,
) -> None:
    _, plan, _ = await _tier1(make_gateway)
    notes = {n.params["gang"]: n for n in plan.notes if n.code == "gang_kept"}
    pytorch = notes["PyTorchJob ml-train/llm-ft"].params
    assert pytorch["elsewhere"] == "llm-ft-worker-1 on gpu-node-02"
    mpi = notes["MPIJob ml-train/mpi-bench"].params
    assert mpi["coordinators"] == "mpi-bench-launcher (launcher)"
    assert mpi["elsewhere"] == "mpi-bench-worker-0 on gpu-node-02"
    text = sentence("notes", "gang_kept", mpi, fmt="text", strict=True, locale="en")
    assert "mpi-bench-worker-0 on gpu-node-02" in text
    assert "launcher" in text and "MPI ranks cannot lose a member" in text


async def test_evicting_a_batch_job_pod_is_counted_against_its_backoff_limit(
    make_gateway: Make,
) -> None:
    _, plan, _ = await _tier1(make_gateway)
    assert any(k.startswith("ml-train/nightly-eval-") for k in plan.blast_radius)
    notes = {n.params["job"]: n for n in plan.notes if n.code.startswith("job_")}
    counted = notes["ml-train/nightly-eval"]
    assert counted.code == "job_eviction_counts"
    assert (counted.params["backoff_limit"], counted.params["failed"]) == (2, 0)
    assert notes["ml-train/tolerant-eval"].code == "job_disruption_ignored"
    text = sentence("notes", counted.code, counted.params, fmt="text", strict=True, locale="en")
    assert "backoffLimit (0 of 2 used)" in text and "DisruptionTarget" in text


async def test_gpunode_never_evicts_its_own_pods(make_gateway: Make) -> None:
    view, plan, _ = await _tier1(make_gateway)
    own = [p.key for p in view.pods if p.namespace == "gpunode"]
    assert own
    reasons = {p.pod: p.reason for p in plan.protected}
    assert {reasons[k] for k in own} == {"gpunode_itself"}
    assert not set(own) & set(plan.blast_radius)


async def test_custom_resources_are_served_only_when_installed(make_kubesim: Any) -> None:
    sim = await make_kubesim(gang_fleet())
    api = client.ApiClient(kube_client_config(sim.url))  # the cluster admin reads
    custom: Any = client.CustomObjectsApi(api)
    got = await asyncio.to_thread(
        custom.get_namespaced_custom_object,
        "kubeflow.org",
        "v1",
        "ml-train",
        "pytorchjobs",
        "llm-ft",
    )
    assert got["kind"] == "PyTorchJob"
    with pytest.raises(client.ApiException) as info:  # RayCluster's CRD is not installed
        await asyncio.to_thread(
            custom.list_namespaced_custom_object, "ray.io", "v1", "ml-train", "rayclusters"
        )
    assert info.value.status == 404
    groups = {
        g.name for g in (await asyncio.to_thread(client.ApisApi(api).get_api_versions)).groups
    }
    assert {"kubeflow.org", "batch.volcano.sh"} <= groups and "ray.io" not in groups
    api.close()
