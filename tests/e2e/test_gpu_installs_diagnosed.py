"""a MIG-mixed node, a DRA node and an AMD node are each diagnosed with GPU
evidence or a true gap, end to end as ``gpunode diagnose NODE`` runs it: the stand-in cluster
over real HTTP with the bot's deployed rights, the real collector in the diagnostic Job, and
dcgm-exporter's endpoint on the node over real HTTP; the assertions read the text report
(its NOT VERIFIED section lists each gap on one line)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from bot.cli.diagnose import diagnose_node
from bot.config import KubeSettings
from bot.core.model.thresholds import DEFAULT
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN

MakeSim = Callable[..., Awaitable[KubeSim]]


async def _diagnose(make_kubesim: MakeSim, scenario: str, node: str) -> tuple[KubeSim, str]:
    sim = await make_kubesim(scenario)
    settings = KubeSettings(
        mode="server",
        server=sim.url,
        token=BOT_TOKEN,
        verify_tls=False,
        namespace="gpunode",
        job_timeout_s=60,
    )  # the bot's own deployed rights, not an admin's
    gw = Gateway.from_settings(settings)
    try:
        text = await diagnose_node(
            gw, node, "text", thresholds=DEFAULT, now=datetime.now(UTC), locale="en"
        )
    finally:
        gw.close()
    return sim, text


def _gap(report: str, source: str) -> str:
    """The reason of gap ``source`` in the report's NOT VERIFIED section (one line each)."""
    section = report.split("\nNOT VERIFIED\n", 1)[1]
    [line] = [ln for ln in section.splitlines() if ln.strip().startswith(f"{source}: ")]
    return line.strip().removeprefix(f"{source}: ")


async def test_a_mig_mixed_node_shows_its_gpus_and_each_pods_mig_memory(
    make_kubesim: MakeSim,
) -> None:
    sim, text = await _diagnose(make_kubesim, "gpu-mig-mixed", "mig-node-01")
    assert "GPU MEMORY  16.0 GiB used of 160.0 GiB" in text  # NVML's device totals
    pods = sorted(
        p["metadata"]["name"]
        for p in sim.api.store.list("pods")
        if p["metadata"]["name"].startswith("small-llm")
    )
    address, port = sim.exporters.addresses["mig-node-01"]
    named = ", ".join(f"serving/{p} 8.0 GiB" for p in pods)
    assert (
        f"Per-pod GPU memory comes from dcgm-exporter via the exporter's endpoint "
        f"{address}:{port} on mig-node-01 (Service gpu-operator/nvidia-dcgm-exporter) "
        f"(2 pods: {named})"
    ) in _gap(text, "gpu:evidence")
    assert "MIG monitor capability" in text and "install the gpu operator" not in text.lower()


async def test_a_dra_node_shows_its_gpus_and_their_processes(make_kubesim: MakeSim) -> None:
    sim, text = await _diagnose(make_kubesim, "gpu-dra", "dra-node-01")
    assert "GPU MEMORY  200.0 GiB used of 320.0 GiB" in text
    # four identical devices collapse to one line
    assert re.search(r"GPU0-3 +50\.0 GiB / 80\.0 GiB +each", text), text
    assert "gpu:evidence" not in text and "nvml:" not in text  # nothing left unverified
    # each claimed device, as the stand-in's ResourceClaims were allocated
    expected = sorted(
        f"{c['metadata']['namespace']}/{pod}: {r['driver']}, {r['pool']}/{r['device']}, "
        f"{c['metadata']['name']}"
        for c in sim.api.store.list("resourceclaims")
        for pod in [
            p["name"] for p in c.get("status", {}).get("reservedFor") or [] if p.get("name")
        ]
        for r in c["status"]["allocation"]["devices"]["results"]
    )
    assert expected, "the scenario allocates claims"
    section = text.split("\nGPUS HELD THROUGH DRA  (pod: driver, pool/device, claim)\n", 1)[1]
    shown = sorted(ln.strip() for ln in section.split("\n\n", 1)[0].splitlines())
    assert shown == expected


async def test_an_amd_node_is_a_gpu_node_with_a_true_gap(make_kubesim: MakeSim) -> None:
    _sim, text = await _diagnose(make_kubesim, "gpu-amd", "amd-node-01")
    assert "GPU MEMORY" not in text  # nothing measured, nothing invented
    gap = _gap(text, "gpu:evidence")
    assert "GPUs of amd.com: gpunode reads GPU memory through NVIDIA's NVML only" in gap
    assert "dcgm-exporter" not in gap  # NVIDIA's exporter is not a rung on an AMD node
