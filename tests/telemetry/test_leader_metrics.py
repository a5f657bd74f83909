"""The Lease holder as two replicas' metrics show it, fed by the real leader election
(``LeaderElector.on_change`` is ``Metrics.set_leader``) against the Kubernetes stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.services.leading import LeaderElector
from bot.telemetry.metrics import Metrics
from gpunode_sandbox.kubesim import KubeSim
from tests.e2e.replicas import install_lease_rbac
from tests.services.test_leading import Clock, lease_api


@pytest.fixture
async def sim(kubesim: KubeSim) -> AsyncIterator[KubeSim]:
    await install_lease_rbac(kubesim.url)
    yield kubesim


def _value(m: Metrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


async def test_each_replica_reports_whether_it_leads_and_who_does(sim: KubeSim) -> None:
    clock = Clock()
    metrics = {"pod-a": Metrics(), "pod-b": Metrics()}
    electors = {
        name: LeaderElector(
            lease_api(sim.url),
            identity=name,
            duration_s=15,
            renew_deadline_s=10,
            clock=clock,
            on_change=m.set_leader,
        )
        for name, m in metrics.items()
    }
    assert await electors["pod-a"].step()
    assert not await electors["pod-b"].step()

    assert [_value(m, "gpunode_leader") for m in metrics.values()] == [1, 0]
    for m in metrics.values():
        assert _value(m, "gpunode_lease_holder_info", holder="pod-a") == 1

    await electors["pod-a"].release()
    assert await electors["pod-b"].step()
    assert [_value(m, "gpunode_leader") for m in metrics.values()] == [0, 1]
    assert _value(metrics["pod-b"], "gpunode_lease_holder_info", holder="pod-b") == 1
    # the sum the GpunodeNoLeaseHolder / GpunodeSeveralLeaseHolders rules take
    assert sum(_value(m, "gpunode_leader") for m in metrics.values()) == 1
