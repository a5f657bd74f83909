"""Leader election against the Kubernetes stand-in, with the bot's token and exactly the
Lease rights of deploy/overlays/ha: one leader at a time, 409 on a stale write, takeover
after expiry, release on a clean stop; background work runs on the leader only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes import client

from bot.core.governance.leases import LeaseRecord
from bot.errors import ConflictError, ForbiddenError
from bot.kube.leasing import LeaseApi
from bot.services.leading import LeaderElector, LeaderWork
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.conftest import kube_client_config
from tests.e2e.replicas import install_lease_rbac

LEASE = "gpunode-leader"


def lease_api(url: str, *, name: str = LEASE) -> LeaseApi:
    api_client = client.ApiClient(kube_client_config(url, token=BOT_TOKEN))
    return LeaseApi(api_client, namespace="gpunode", name=name)


@pytest.fixture
async def sim(kubesim: KubeSim) -> AsyncIterator[KubeSim]:
    await install_lease_rbac(kubesim.url)
    yield kubesim


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def elector(
    url: str, identity: str, clock: Clock, seen: list[tuple[str, str | None, bool]]
) -> LeaderElector:
    return LeaderElector(
        lease_api(url),
        identity=identity,
        duration_s=15,
        renew_deadline_s=10,
        clock=clock,
        on_change=lambda holder, me: seen.append((identity, holder, me)),
    )


async def test_one_of_two_replicas_leads_and_the_other_waits(sim: KubeSim) -> None:
    clock, seen = Clock(), list[tuple[str, str | None, bool]]()
    a, b = elector(sim.url, "pod-a", clock, seen), elector(sim.url, "pod-b", clock, seen)

    assert await a.step()
    assert not await b.step()
    clock.advance(5)
    assert await a.step()  # renewed
    assert not await b.step()

    lease = sim.get("leases", "gpunode", LEASE)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "pod-a"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert lease["spec"]["leaseTransitions"] == 0
    assert seen == [("pod-a", "pod-a", True), ("pod-b", "pod-a", False)]


async def test_a_write_over_a_stale_resource_version_is_a_409_conflict(sim: KubeSim) -> None:
    api = lease_api(sim.url)
    now = datetime(2026, 3, 1, tzinfo=UTC)
    created = await api.create(LeaseRecord("pod-a", 15, now, now, 0))
    renewed = await api.replace(created)  # first writer over version v1 wins
    assert renewed.resource_version != created.resource_version
    with pytest.raises(ConflictError):
        await api.replace(LeaseRecord("pod-b", 15, now, now, 1, created.resource_version))
    with pytest.raises(ConflictError):  # AlreadyExists is a 409 too
        await api.create(LeaseRecord("pod-b", 15, now, now, 0))
    assert (await api.read()) == renewed


async def test_two_replicas_racing_for_a_free_lease_elect_exactly_one(sim: KubeSim) -> None:
    clock, seen = Clock(), list[tuple[str, str | None, bool]]()
    electors = [elector(sim.url, f"pod-{i}", clock, seen) for i in range(6)]
    results = await asyncio.gather(*(e.step() for e in electors))
    assert results.count(True) == 1


async def test_a_silent_leader_is_replaced_after_the_lease_duration(sim: KubeSim) -> None:
    clock, seen = Clock(), list[tuple[str, str | None, bool]]()
    a, b = elector(sim.url, "pod-a", clock, seen), elector(sim.url, "pod-b", clock, seen)
    assert await a.step()
    assert not await b.step()
    clock.advance(14)
    assert not await b.step()  # a is silent, but not for a whole lease duration yet
    clock.advance(1)
    assert await b.step()
    lease = sim.get("leases", "gpunode", LEASE)
    assert lease is not None
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("pod-b", 1)
    assert not await a.step(), "the old leader sees it lost"
    assert not a.is_leader


async def test_a_released_lease_is_taken_over_at_once(sim: KubeSim) -> None:
    clock, seen = Clock(), list[tuple[str, str | None, bool]]()
    a, b = elector(sim.url, "pod-a", clock, seen), elector(sim.url, "pod-b", clock, seen)
    assert await a.step()
    assert not await b.step()
    await a.release()
    assert await b.step()


async def test_without_the_overlays_role_the_bot_may_not_touch_leases(kubesim: KubeSim) -> None:
    with pytest.raises(ForbiddenError):
        await lease_api(kubesim.url).read()


async def test_the_role_is_limited_to_the_one_lease(sim: KubeSim) -> None:
    with pytest.raises(ForbiddenError):
        await lease_api(sim.url, name="someone-elses-lease").read()


class Recorder:
    """Stands in for the store and the action service: counts what the leader work ran."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.beats: list[str] = []

    async def beat(self, replica_id: str, *, at: datetime) -> None:
        self.beats.append(replica_id)

    async def forget_events_before(self, before: datetime) -> int:
        self.calls.append("forget")
        return 0

    async def expire_overdue(self) -> int:
        self.calls.append("expire")
        return 0

    async def prune_evidence(self, *, before: datetime) -> int:
        self.calls.append(f"prune<{before:%Y-%m-%d}")
        return 0

    async def reconcile_interrupted(self, *, orphaned_before: datetime | None = None) -> int:
        self.calls.append("reconcile")
        return 0


async def test_background_work_runs_on_the_leader_only_and_moves_with_the_lease(
    sim: KubeSim,
) -> None:
    clock, seen = Clock(), list[tuple[str, str | None, bool]]()
    works = {}
    for name in ("pod-a", "pod-b"):
        rec = Recorder()
        works[name] = (
            rec,
            LeaderWork(
                store=rec,
                actions=rec,
                replica_id=name,
                clock=clock,
                elector=elector(sim.url, name, clock, seen),
            ),
        )
    for _ in range(2):
        for _rec, work in works.values():
            await work.tick()
    (rec_a, work_a), (rec_b, work_b) = works["pod-a"], works["pod-b"]
    assert rec_a.calls == ["reconcile", "expire", "forget"]
    assert rec_b.calls == []
    assert (rec_a.beats, rec_b.beats) == (["pod-a"] * 2, ["pod-b"] * 2), "every replica beats"

    await work_a.stop()  # a clean stop (SIGTERM) releases the Lease
    await work_b.tick()
    assert rec_b.calls[:1] == ["reconcile"], "a new leader reconciles at once"
    assert work_b.leading and not work_a.leading


class OrphanRecorder(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.orphaned_before: list[datetime | None] = []

    async def reconcile_interrupted(self, *, orphaned_before: datetime | None = None) -> int:
        self.orphaned_before.append(orphaned_before)
        return await super().reconcile_interrupted(orphaned_before=orphaned_before)


async def test_a_replica_without_a_lease_reconciles_only_silent_claimers_at_start() -> None:
    """Restarting one of two replicas sharing a store without a Lease used to mark the other's
    live action interrupted: at start, only claimers silent for ``orphan_after_s`` count."""
    clock, rec = Clock(), OrphanRecorder()
    work = LeaderWork(store=rec, actions=rec, replica_id="pod-a", clock=clock, orphan_after_s=15)

    await work.start()

    assert rec.orphaned_before == [clock() - timedelta(seconds=15)]


async def test_the_leader_prunes_evidence_older_than_the_retention() -> None:
    clock, rec = Clock(), Recorder()
    work = LeaderWork(
        store=rec, actions=rec, replica_id="r1", clock=clock, evidence_keep=timedelta(days=90)
    )
    await work.start()
    await work.tick()
    cutoff = (clock() - timedelta(days=90)).strftime("%Y-%m-%d")
    assert f"prune<{cutoff}" in rec.calls
    kept = LeaderWork(store=rec, actions=rec, replica_id="r2", clock=clock)
    rec.calls.clear()
    await kept.start()
    await kept.tick()
    assert not any(c.startswith("prune") for c in rec.calls)
