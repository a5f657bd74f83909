"""The third GPU-evidence rung through the real gateway over the stand-in: where NVML gives no
per-process GPU memory, dcgm-exporter's per-pod framebuffer figures are read from its endpoint
on the node (found through the GPU Operator's Service and its EndpointSlice, over real HTTP)
and joined into the evidence with their source; when that fails too, the gap names every rung
tried and why each failed."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.model.evidence import EvidenceBundle
from bot.render.errors import gap_text
from gpunode_sandbox.kubesim import Scenario, load_scenario
from gpunode_sandbox.kubesim import scenarios as sc
from tests.render.test_catalogs import english_words

Make = Callable[..., Awaitable[tuple[Any, Any]]]
GiB = 1024**3


def _gap(bundle: EvidenceBundle) -> str:
    """The GPU-evidence gap's English reason, once its words are checked: an English reader
    reads exactly that reason; a Chinese or pseudo-locale reader no English sentence (what
    was quoted as said, an OS error or the pods and their figures, left out)."""
    [gap] = [g for g in bundle.gaps if g.source == "gpu:evidence"]
    assert gap_text(gap.code, gap.params, "«none»", "en") == gap.reason
    for locale in ("zh-CN", "en-XA"):
        words = gap_text(gap.code, gap.params, "«none»", locale)
        for key, value in gap.params.items():
            if key.endswith(("_error", "_named", "_reason")) and value:
                words = words.replace(str(value), " ")
        assert english_words(words) == [], words
    return gap.reason


def _seed_without_nvml(exporter: sc.DcgmExporter | None) -> Scenario:
    """The seed on an install where NVML reaches no pod: no NVIDIA RuntimeClass, and a default
    runtime that is not NVIDIA's (Bottlerocket-like); dcgm-exporter as given on gpu-node-01."""
    seed = load_scenario("seed")
    nodes = [
        n.model_copy(update={"dcgm_exporter": exporter}) if n.name == "gpu-node-01" else n
        for n in seed.nodes
    ]
    return seed.model_copy(update={"runtime_classes": [], "nodes": nodes})


async def test_a_mig_node_gets_per_pod_gpu_memory_from_the_exporter_on_the_node(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway("gpu-mig-mixed")
    bundle = await gw.run_diagnostic("mig-node-01")
    assert bundle.gpu_processes == []  # NVML: the MIG monitor capability is not taken
    address, port = sim.exporters.addresses["mig-node-01"]
    running = {
        p["metadata"]["name"]
        for p in sim.api.store.list("pods")
        if p["metadata"]["name"].startswith("small-llm")
    }
    assert {r.pod for r in bundle.pod_gpu_memory} == running and len(running) == 2
    for row in bundle.pod_gpu_memory:
        assert (row.namespace, row.container, row.mig_profile) == ("serving", "server", "1g.10gb")
        assert row.used_bytes == 8 * GiB and row.free_bytes == 2 * GiB and row.shared_by == 1
        assert row.source == f"dcgm-exporter:gpu-operator/nvidia-dcgm-exporter@{address}:{port}"
    assert len({r.mig_instance for r in bundle.pod_gpu_memory}) == 2
    why = _gap(bundle)
    assert "MIG monitor capability" in why
    assert "Per-pod GPU memory comes from dcgm-exporter via the exporter's endpoint" in why
    assert "(2 pods: serving/small-llm-" in why and " 8.0 GiB, serving/small-llm-" in why
    assert "not per process" in why


async def test_without_nvml_the_exporter_gives_each_pod_its_gpus_memory(
    make_gateway: Make,
) -> None:
    gw, _sim = await make_gateway(_seed_without_nvml(sc.DcgmExporter()))
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.gpus == [] and bundle.gpu_processes == []
    trainer = [r for r in bundle.pod_gpu_memory if r.pod.startswith("train-llm")]
    assert sorted(int(r.gpu) for r in trainer) == list(range(8))
    assert all(r.used_bytes >= 64 * GiB and r.container == "trainer" for r in trainer)
    why = _gap(bundle)
    tried = why.index('RuntimeClass "nvidia" (it does not exist)')
    default = why.index("NVML through the node's default runtime")
    exporter = why.index("Per-pod GPU memory comes from dcgm-exporter")
    assert tried < default < exporter


async def test_an_exporter_without_pod_mapping_is_a_rung_that_failed_and_says_why(
    make_gateway: Make,
) -> None:
    gw, _sim = await make_gateway(_seed_without_nvml(sc.DcgmExporter(pod_mapping=False)))
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.pod_gpu_memory == []
    why = _gap(bundle)
    assert "its series carry no pod labels" in why and "DCGM_EXPORTER_KUBERNETES=true" in why
    assert 'RuntimeClass "nvidia" (it does not exist)' in why


async def test_without_an_exporter_the_gap_names_the_services_it_looked_for(
    make_gateway: Make,
) -> None:
    gw, _sim = await make_gateway(_seed_without_nvml(None))
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.pod_gpu_memory == []
    assert "no Service named nvidia-dcgm-exporter, dcgm-exporter has endpoints" in _gap(bundle)


async def test_an_exporter_not_ready_on_the_node_is_not_asked(make_gateway: Make) -> None:
    gw, _sim = await make_gateway(_seed_without_nvml(sc.DcgmExporter(ready=False)))
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.pod_gpu_memory == []
    assert "its Service has no ready endpoint on gpu-node-01" in _gap(bundle)


async def test_an_unreachable_exporter_points_at_the_network_policy(make_gateway: Make) -> None:
    gw, sim = await make_gateway(_seed_without_nvml(sc.DcgmExporter()))
    await sim.exporters.stop()  # the endpoint is listed, but nothing answers on it
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.pod_gpu_memory == []
    address, port = sim.exporters.addresses["gpu-node-01"]
    why = _gap(bundle)
    assert f"GET http://{address}:{port}/metrics failed" in why
    assert f"NetworkPolicy lets the bot reach port {port}" in why


async def test_a_refused_endpointslice_list_says_which_rbac_is_missing(make_gateway: Make) -> None:
    gw, sim = await make_gateway(_seed_without_nvml(sc.DcgmExporter()))
    sim.faults.add("GET", "/endpointslices", status=403, times=-1)
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.pod_gpu_memory == []
    assert "may not list EndpointSlices" in _gap(bundle)


async def test_with_nvml_working_the_exporter_is_not_asked(make_gateway: Make) -> None:
    seed = load_scenario("seed")
    nodes = [n.model_copy(update={"dcgm_exporter": sc.DcgmExporter()}) for n in seed.nodes]
    gw, sim = await make_gateway(seed.model_copy(update={"nodes": nodes}))
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.gpu_processes and bundle.pod_gpu_memory == []
    assert not [g for g in bundle.gaps if g.source == "gpu:evidence"]
    assert not [r for r in sim.requests if "endpointslices" in r[1]]


async def test_the_exporter_asked_is_the_one_on_the_diagnosed_node(make_gateway: Make) -> None:
    seed = _seed_without_nvml(None)
    nodes = [
        n.model_copy(update={"dcgm_exporter": sc.DcgmExporter()}) if n.gpus else n
        for n in seed.nodes
    ]
    gw, sim = await make_gateway(seed.model_copy(update={"nodes": nodes}))
    assert len(sim.exporters.addresses) == 2  # gpu-node-01 and gpu-node-02, one address each
    bundle = await gw.run_diagnostic("gpu-node-02")
    address, port = sim.exporters.addresses["gpu-node-02"]
    assert bundle.pod_gpu_memory
    assert {r.source for r in bundle.pod_gpu_memory} == {
        f"dcgm-exporter:gpu-operator/nvidia-dcgm-exporter@{address}:{port}"
    }
    assert not [r for r in bundle.pod_gpu_memory if r.pod.startswith("train-llm")]  # node 01's
