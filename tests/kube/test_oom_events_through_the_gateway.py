"""OOM kills seeded as a real node reports them (node-problem-detector's OOMKilling, the
kubelet's SystemOOM), read through the real gateway and judged by the analysis."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.core.reporting.analysis import analyze
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim

pytestmark = pytest.mark.slow
NODE = "gpu-node-01"
Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]


async def test_the_seeds_limit_kills_are_cgroup_ooms_counted_per_pid(make_gateway: Make) -> None:
    gw, _ = await make_gateway("seed")
    view = await gw.get_cluster_view(NODE)
    ooms = [e for e in view.events if e.reason in ("OOMKilling", "SystemOOM")]
    assert {e.reason for e in ooms} == {"OOMKilling"}
    assert all(e.message.startswith("Memory cgroup out of memory: Killed process") for e in ooms)
    bundle = await gw.run_diagnostic(NODE)
    d = analyze(bundle, view, now=bundle.collected_at)
    codes = {f.code: f for f in d.findings}
    assert "SYSTEM_OOM_EVENTS" not in codes
    assert codes["CGROUP_OOM_EVENTS"].params["count"] == 3


async def test_a_global_oom_reported_twice_counts_one_kill(make_gateway: Make) -> None:
    gw, _ = await make_gateway("slab-leak")
    view = await gw.get_cluster_view(NODE)
    reasons = sorted(e.reason for e in view.events if e.reason in ("OOMKilling", "SystemOOM"))
    assert reasons == ["OOMKilling", "SystemOOM"]  # NPD and the kubelet, one kill
    bundle = await gw.run_diagnostic(NODE)
    d = analyze(bundle, view, now=bundle.collected_at)
    (oom,) = [f for f in d.findings if f.code == "SYSTEM_OOM_EVENTS"]
    assert oom.params["count"] == 1
    assert "CGROUP_OOM_EVENTS" not in {f.code for f in d.findings}
