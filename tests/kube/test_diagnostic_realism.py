"""The diagnostic Job on nodes that behave like real ones, through the real gateway, the
stand-in's job controller and kubelet, and the real collector:

- GPU evidence is on by default, and when it is off (setting) or impossible (no RuntimeClass)
  the bundle says which setting or install turns it on;
- the collector sees the node's hostname (hostNetwork) and, without ptrace rights, reports the
  unreadable smaps_rollup files as ONE gap;
- a refused pod fails the diagnosis fast and says why: kubelet refusals (pressure conditions,
  full requests) offer the critical priority class fallback; the fallback works once its
  ResourceQuota exists, and without it the Job's FailedCreate event is reported; container
  runtime errors are reported.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.core.reporting.analysis import analyze
from bot.errors import DiagnosticJobError
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim import scenarios as sc
from tests.conftest import kube_call

pytestmark = pytest.mark.slow
NODE = "gpu-node-01"
Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]


def _seed(**node_updates: Any) -> sc.Scenario:
    base = sc.load_scenario("seed")
    nodes = [n.model_copy(update=node_updates) if n.name == NODE else n for n in base.nodes]
    return base.model_copy(update={"nodes": nodes})


def _with_pods_full() -> sc.Scenario:
    node = next(n for n in sc.load_scenario("seed").nodes if n.name == NODE)
    # the seven pods the seed runs on the node fill its pod slots
    return _seed(allocatable={**node.allocatable, "pods": "7"})


async def _refusal(gw: Gateway) -> DiagnosticJobError:
    with pytest.raises(DiagnosticJobError) as info:
        await gw.run_diagnostic(NODE)
    return info.value


async def test_gpu_evidence_is_on_by_default_and_the_collector_sees_the_node_as_it_is(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway()
    bundle = await gw.run_diagnostic(NODE)
    assert len(bundle.gpus) == 8 and bundle.gpu_processes
    assert not [g for g in bundle.gaps if g.source.startswith(("nvml", "k8s:runtimeclass"))]
    assert bundle.hostname == NODE  # hostNetwork: the host's UTS namespace
    smaps = [g for g in bundle.gaps if "smaps_rollup" in g.source]
    assert len(smaps) == 1, smaps  # one summarized gap, not one per process
    assert "CAP_SYS_PTRACE" in smaps[0].reason and "process(es)" in smaps[0].reason


async def test_without_a_runtime_class_setting_nvml_is_tried_through_the_default_runtime(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(nvidia_runtime_class=None)
    bundle = await gw.run_diagnostic(NODE)
    view = await gw.get_cluster_view(NODE)
    assert bundle.gpus == []  # the seed's nodes do not run NVIDIA's runtime by default
    (gap,) = [g for g in bundle.gaps if g.source == "gpu:evidence"]
    assert "NVML through the node's default runtime" in gap.reason
    assert "kube.nvidia_runtime_class" in gap.reason
    finding = next(
        f
        for f in analyze(bundle, view, now=bundle.collected_at).findings
        if f.code == "GPU_NOT_VERIFIED"
    )
    assert "kube.nvidia_runtime_class" in str(finding.params["reason"])


async def test_gpu_evidence_turned_off_names_the_setting_that_turns_it_on(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(nvidia_visible_devices_all=False)
    bundle = await gw.run_diagnostic(NODE)
    assert bundle.gpus == []
    (gap,) = [g for g in bundle.gaps if g.source == "nvml:settings"]
    assert "kube.nvidia_visible_devices_all=true" in gap.reason


async def test_a_missing_runtime_class_still_gives_host_evidence_and_says_what_was_tried(
    make_gateway: Make,
) -> None:
    scenario = sc.load_scenario("seed").model_copy(update={"runtime_classes": []})
    gw, sim = await make_gateway(scenario)
    bundle = await gw.run_diagnostic(NODE)
    assert bundle.meminfo is not None and bundle.gpus == []
    (gap,) = [g for g in bundle.gaps if g.source == "gpu:evidence"]
    assert 'RuntimeClass "nvidia" (it does not exist)' in gap.reason
    assert "kube.nvidia_runtime_class" in gap.reason
    assert ("GET", "/apis/node.k8s.io/v1/runtimeclasses/nvidia") in {
        (m, p) for m, p, *_ in sim.requests
    }


@pytest.mark.parametrize(
    ("scenario", "says"),
    [
        (_seed(conditions={"DiskPressure": "True"}), "The node had condition: [DiskPressure]"),
        (_seed(conditions={"PIDPressure": "True"}), "The node had condition: [PIDPressure]"),
        (_with_pods_full(), "OutOfpods: Node didn't have enough resource: pods"),
    ],
)
async def test_a_kubelet_refusal_fails_fast_and_offers_the_critical_priority_fallback(
    make_gateway: Make, scenario: sc.Scenario, says: str
) -> None:
    gw, sim = await make_gateway(scenario)
    started = time.monotonic()
    err = await _refusal(gw)
    assert time.monotonic() - started < gw.settings.job_timeout_s
    assert err.code == "not_admitted"
    assert says in str(err)
    assert "kube.diagnostic_priority_class=system-node-critical" in str(err)
    assert "deploy/overlays/critical-collector" in str(err)
    events = [e for e in sim.list("events", "gpunode") if e["source"]["component"] == "kubelet"]
    assert events and events[0]["involvedObject"]["kind"] == "Pod"


async def test_memory_pressure_alone_admits_the_burstable_collector(make_gateway: Make) -> None:
    gw, _ = await make_gateway(_seed(conditions={"MemoryPressure": "True"}))
    bundle = await gw.run_diagnostic(NODE)
    assert bundle.meminfo is not None


CRITICAL_OVERLAY = Path(__file__).resolve().parents[2] / "deploy/overlays/critical-collector"


async def test_the_critical_fallback_needs_its_quota_and_then_preempts_to_fit(
    make_gateway: Make,
) -> None:
    # the critical-collector overlay: its admission params admit the class (deploy/base's
    # refuse any priority class for the collector)
    gw, sim = await make_gateway(
        _with_pods_full(),
        sim_kw={"access_dir": CRITICAL_OVERLAY},
        diagnostic_priority_class="system-node-critical",
    )
    started = time.monotonic()
    err = await _refusal(gw)
    assert time.monotonic() - started < gw.settings.job_timeout_s / 2  # FailedCreate, at once
    assert err.code == "create_failed"
    assert "insufficient quota to match these scopes" in str(err)

    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpunode-critical-collector", "namespace": "gpunode"},
        "spec": {
            "hard": {"pods": "2"},
            "scopeSelector": {
                "matchExpressions": [
                    {
                        "scopeName": "PriorityClass",
                        "operator": "In",
                        "values": ["system-node-critical"],
                    }
                ]
            },
        },
    }
    # the cluster admin installs the quota (the bot may not create quotas)
    status, _ = await kube_call(
        sim.url, "POST", "/api/v1/namespaces/gpunode/resourcequotas", body=quota
    )
    assert status == 201
    bundle = await gw.run_diagnostic(NODE)
    assert bundle.meminfo is not None
    preempted = [
        p for p in sim.list("pods") if (p.get("status") or {}).get("reason") == "Preempting"
    ]
    assert len(preempted) == 1


async def test_a_container_runtime_error_is_reported(make_gateway: Make) -> None:
    scenario = sc.load_scenario("seed").model_copy(
        update={"faults": [sc.Fault(kind="container_error", node=NODE)]}
    )
    gw, _ = await make_gateway(scenario)
    started = time.monotonic()
    err = await _refusal(gw)
    assert time.monotonic() - started < gw.settings.job_timeout_s
    assert err.code == "container_error" and "CreateContainerError" in str(err)
