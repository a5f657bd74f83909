from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.approvals import approve, new_request
from bot.core.model.cluster import ClusterView
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import IncidentStateError, TimelineEntry
from bot.core.reporting.analysis import analyze
from bot.core.reporting.records import NO_CLUSTER
from bot.errors import StoreError
from bot.store import ActionRecord, AuditRecord, Store, incident_rows, storing
from bot.store.engines import connect
from bot.store.migrations import SCHEMA_VERSION
from tests.ports import refusing_port
from tests.store.conftest import RAW_ERRORS, query, tamper

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SEED = Path(__file__).resolve().parents[1] / "fixtures" / "bundles" / "seed"
BUNDLE = EvidenceBundle.model_validate_json((SEED / "evidence.json").read_text())
VIEW = ClusterView.model_validate_json((SEED / "cluster.json").read_text())


DIAGNOSIS = analyze(BUNDLE, VIEW, now=T0)


def diagnosis(age_s: float = 0.0) -> Diagnosis:
    """The seed's diagnosis (``age_s`` tells two apart)."""
    return DIAGNOSIS.model_copy(update={"evidence_age_s": age_s})


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
async def store(target: str) -> AsyncIterator[Store]:
    s = await Store.open(target)
    yield s
    await s.close()


def action(
    action_id: str, *, incident_id: str | None = None, needs_approval: bool = False
) -> ActionRecord:
    return ActionRecord(
        action_id=action_id,
        incident_id=incident_id,
        tier=1,
        plan={"steps": ["cordon"]},
        requester="U0REQ",
        needs_approval=needs_approval,
        created_at=T0,
        updated_at=T0,
        cluster=DEFAULT_CLUSTER,
    )


async def test_the_store_creates_its_folder_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "x.db"
    async with await Store.open(str(path)):
        pass
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


async def test_an_in_memory_store_works_for_tests() -> None:
    async with await Store.open(":memory:") as mem:
        incident, created = await mem.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
        assert created and incident.id == "INC-0001"


async def test_a_diagnose_joins_the_open_incident_and_numbers_increase(store: Store) -> None:
    first, created = await store.open_or_join_incident(
        "gpu-node-01", "C1", opened_by="U1", at=T0, locale="en"
    )
    again, joined_created = await store.open_or_join_incident(
        "gpu-node-01", "C1", opened_by="U2", at=at(1), locale="en"
    )
    other, _ = await store.open_or_join_incident(
        "gpu-node-02", "C1", opened_by="U2", at=at(2), locale="en"
    )
    assert (first.id, created, again.id, joined_created, other.id) == (
        "INC-0001",
        True,
        "INC-0001",
        False,
        "INC-0002",
    )
    assert [i.id for i in await store.open_incidents()] == ["INC-0001", "INC-0002"]
    assert [i.id for i in await store.open_incidents("gpu-node-02")] == ["INC-0002"]


async def test_a_resolved_incident_is_not_rejoined_a_new_one_opens(store: Store) -> None:
    first, _ = await store.open_or_join_incident("n1", "C1", opened_by="U1", at=T0, locale="en")
    resolved, entry = await store.set_incident_state(
        first.id, "resolved", at=at(5), actor="U1", note="done"
    )
    assert resolved.state == "resolved" and entry is not None
    with pytest.raises(IncidentStateError):
        await store.set_incident_state(first.id, "resolved", at=at(6), actor="U1")
    second, created = await store.open_or_join_incident(
        "n1", "C1", opened_by="U1", at=at(7), locale="en"
    )
    assert (second.id, created) == ("INC-0002", True)
    assert [i.id for i in await store.incidents_for_node("n1")] == ["INC-0001", "INC-0002"]


async def test_incidents_are_found_by_thread(store: Store) -> None:
    incident, _ = await store.open_or_join_incident("n1", "C1", opened_by="U1", at=T0, locale="en")
    assert incident.thread_ts is None
    await store.set_incident_thread(incident.id, root_ts="1700000000.000100")
    found = await store.find_incident_by_thread("C1", "1700000000.000100")
    assert found is not None and found.thread_ts == "1700000000.000100"
    assert await store.find_incident_by_thread("C2", "1700000000.000100") is None
    assert await store.get_incident("INC-0099") is None


async def test_the_timeline_keeps_entries_in_order(store: Store) -> None:
    incident, _ = await store.open_or_join_incident("n1", "C1", opened_by="U1", at=T0, locale="en")
    await store.set_incident_state(incident.id, "mitigating", at=at(3), actor="U2", note="tier 2")
    await store.append_timeline(
        TimelineEntry(
            incident_id=incident.id, at=at(1), kind="diagnosis", actor="gpunode", data={"x": 1}
        )
    )
    kinds = [(e.kind, e.data.get("x")) for e in await store.timeline(incident.id)]
    assert kinds == [("opened", None), ("diagnosis", 1), ("status", None)]


async def test_evidence_snapshots_are_hashed_and_the_latest_is_returned(store: Store) -> None:
    incident, _ = await store.open_or_join_incident("n1", "C1", opened_by="U1", at=T0, locale="en")
    first = await store.save_snapshot(
        incident.id, at=T0, bundle=BUNDLE, view=VIEW, diagnosis=diagnosis(1.0)
    )
    second = await store.save_snapshot(
        incident.id, at=at(1), bundle=BUNDLE, view=VIEW, diagnosis=diagnosis(2.0)
    )
    assert first != second and len(second) == 64
    latest = await store.latest_snapshot(incident.id)
    assert latest is not None and latest.sha256 == second
    assert (latest.bundle, latest.view, latest.diagnosis) == (BUNDLE, VIEW, diagnosis(2.0))


async def test_action_claims_follow_approval_state(store: Store) -> None:
    await store.create_action(action("A1", needs_approval=True))
    await store.create_action(action("A2"))
    assert not await store.claim_action("A1", "r1", at=T0)  # not yet approved
    assert await store.transition_action("A1", "approved", at=T0)
    assert await store.claim_action("A1", "r1", at=at(1))
    assert not await store.claim_action("A1", "r2", at=at(1))
    assert await store.claim_action("A2", "r2", at=at(1))
    claimed = await store.get_action("A1")
    assert claimed is not None and (claimed.state, claimed.claimed_by) == ("claimed", "r1")
    assert await store.transition_action("A1", "running", at=at(2))
    assert [a.action_id for a in await store.interrupted_actions()] == ["A1", "A2"]
    assert await store.transition_action("A1", "succeeded", at=at(3), result={"ok": True})
    assert not await store.transition_action("A1", "failed", at=at(3))
    done = await store.get_action("A1")
    assert done is not None and (done.state, done.result) == ("succeeded", {"ok": True})
    with pytest.raises(StoreError):
        await store.transition_action("A1", "claimed", at=at(3))


async def test_a_duplicate_action_id_is_a_store_error(store: Store) -> None:
    await store.create_action(action("A1"))
    with pytest.raises(StoreError, match="plan the action again"):
        await store.create_action(action("A1"))


async def test_approvals_update_atomically_with_a_pure_function(store: Store) -> None:
    req = new_request("P1", "A1", tier=1, requester="U0REQ", quorum=2, at=T0, ttl_s=900)
    await store.save_approval(req)
    _, first = await store.update_approval("P1", lambda r: approve(r, "U0A", at(1), eligible=True))
    updated, second = await store.update_approval(
        "P1", lambda r: approve(r, "U0B", at(1), eligible=True)
    )
    assert (first, second, updated.state) == ("counted", "approved", "approved")
    assert await store.get_approval("P1") == updated
    assert await store.approval_for_action("A1") == updated
    assert await store.pending_approvals() == []


async def test_events_are_remembered_once(store: Store) -> None:
    assert await store.remember_event("Ev01", at=T0)
    assert not await store.remember_event("Ev01", at=at(1))
    assert await store.forget_events_before(at(1)) == 1
    assert await store.remember_event("Ev01", at=at(2))


async def test_alert_groups_dedupe_on_group_key_and_status(store: Store) -> None:
    assert await store.remember_alert_group("g1", "firing", at=T0)
    assert not await store.remember_alert_group("g1", "firing", at=at(5))
    assert await store.remember_alert_group("g1", "resolved", at=at(9))
    assert await store.incident_for_alert_group("g1") is None
    await store.link_alert_group("g1", "INC-0001")
    assert await store.incident_for_alert_group("g1") == "INC-0001"


async def test_audit_rows_are_returned_since_a_time(store: Store) -> None:
    for minutes, decision in ((0, "allowed"), (10, "denied"), (20, "executed")):
        row_id = await store.append_audit(
            AuditRecord(
                at=at(minutes),
                actor="U1",
                action="tier1",
                decision=decision,
                changes=[{"verb": "cordon"}],
                cluster=NO_CLUSTER,
            )
        )
        assert row_id > 0
    assert [r.decision for r in await store.audit_since(at(10))] == ["denied", "executed"]
    assert (await store.audit_since())[2].changes == [{"verb": "cordon"}]


async def test_audit_rows_cannot_be_updated_or_deleted(store: Store, target: str) -> None:
    await store.append_audit(
        AuditRecord(at=T0, actor="U1", action="tier1", decision="allowed", cluster=NO_CLUSTER)
    )
    with pytest.raises(RAW_ERRORS, match="append-only"):
        tamper(target, "UPDATE audit SET decision='denied'")
    with pytest.raises(RAW_ERRORS, match="append-only"):
        tamper(target, "DELETE FROM audit")
    assert query(target, "SELECT decision FROM audit") == [("allowed",)]


async def test_naive_times_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="timezone-aware"):
        await store.remember_event("x", at=datetime(2026, 1, 1))


async def test_a_restart_loses_nothing(target: str) -> None:
    path = target
    async with await Store.open(path) as first:
        incident, _ = await first.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
        await first.save_snapshot(
            incident.id, at=T0, bundle=BUNDLE, view=VIEW, diagnosis=diagnosis()
        )
        await first.create_action(action("A1", incident_id=incident.id))
        assert await first.claim_action("A1", "r1", at=T0)
        await first.append_audit(
            AuditRecord(at=T0, actor="U1", action="tier1", decision="allowed", cluster=NO_CLUSTER)
        )
        await first.remember_event("E1", at=T0)
    async with await Store.open(path) as second:
        assert [i.id for i in await second.open_incidents()] == [incident.id]
        assert len(await second.timeline(incident.id)) == 1
        assert await second.latest_snapshot(incident.id) is not None
        assert [a.action_id for a in await second.interrupted_actions()] == ["A1"]
        assert [a.action_id for a in await second.actions_for_incident(incident.id)] == ["A1"]
        assert len(await second.audit_since()) == 1
        assert not await second.remember_event("E1", at=T0)
        again, created = await second.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
        assert (again.id, created) == (incident.id, False)


async def test_a_database_from_a_newer_gpunode_is_refused(target: str) -> None:
    connect(target).close()
    tamper(target, f"UPDATE schema_version SET version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="upgrade gpunode"):
        await Store.open(target)


async def test_two_replicas_opening_a_new_database_together_migrate_it_once(target: str) -> None:
    stores = await asyncio.gather(*(Store.open(target) for _ in range(4)))
    for s in stores:
        await s.close()
    assert query(target, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


async def test_an_unreachable_postgresql_server_is_a_store_error_naming_it_without_password() -> (
    None
):
    with refusing_port() as port:
        dsn = f"postgresql://gpunode:s3cret@127.0.0.1:{port}/gpunode?connect_timeout=2"
        with pytest.raises(StoreError, match="GPUNODE_STORE__PATH") as caught:
            await Store.open(dsn)
    assert "s3cret" not in str(caught.value)
    assert f"127.0.0.1:{port}" in str(caught.value)


async def test_an_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="GPUNODE_STORE__PATH"):
        await Store.open(str(blocker / "sub" / "g.db"))


async def test_an_undo_is_claimed_once_and_only_after_success(store: Store) -> None:
    await store.create_action(action("A1"))
    assert not await store.claim_undo("A1", "r1", at=T0)  # nothing ran yet
    assert await store.claim_action("A1", "r1", at=T0)
    assert await store.set_action_state("A1", "succeeded", at=at(1), result={"ok": True})
    assert await store.claim_undo("A1", "r2", at=at(2))
    assert not await store.claim_undo("A1", "r3", at=at(2))
    record = await store.get_action("A1")
    assert record is not None and record.undo_claimed_by == "r2"
    assert await store.set_action_state("A1", "undone", at=at(3))
    assert not await store.claim_undo("A1", "r3", at=at(4))


async def test_snapshots_are_listed_oldest_first(store: Store) -> None:
    incident, _ = await store.open_or_join_incident("n1", "C1", opened_by="U1", at=T0, locale="en")
    late = await store.save_snapshot(
        incident.id, at=at(5), bundle=BUNDLE, view=VIEW, diagnosis=diagnosis(5.0)
    )
    early = await store.save_snapshot(
        incident.id, at=at(1), bundle=BUNDLE, view=VIEW, diagnosis=diagnosis(1.0)
    )
    assert [s.sha256 for s in await store.snapshots(incident.id)] == [early, late]


async def test_open_incidents_see_this_stores_writes_at_once(target: str) -> None:
    async with await Store.open(target) as store:
        assert await store.open_incidents() == []
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U1", at=datetime(2026, 1, 1, tzinfo=UTC), locale="en"
        )
        assert [i.id for i in await store.open_incidents()] == [incident.id]
        await store.set_incident_state(
            incident.id, "resolved", at=datetime(2026, 1, 1, 1, tzinfo=UTC)
        )
        assert await store.open_incidents() == []


async def test_callers_asking_for_open_incidents_at_once_share_one_query(target: str) -> None:
    async with await Store.open(target) as store:
        await store.open_or_join_incident("gpu-node-01", "C1", opened_by="U1", at=T0, locale="en")
        queries: list[str] = []
        store.observe_latency = lambda operation, _s: queries.append(operation)
        answers = await asyncio.gather(*(store.open_incidents() for _ in range(20)))
        assert {tuple(i.node for i in a) for a in answers} == {("gpu-node-01",)}
        assert queries == ["open_incidents"]


async def test_a_caller_after_a_write_gets_a_read_of_its_own_not_the_one_in_flight(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first query has read the table (empty) and is held there while an incident is
    opened; whoever asks after the write is answered from a query that sees it."""
    read_done, release = threading.Event(), threading.Event()
    original = incident_rows.open_incidents
    calls = itertools.count()

    def held_first_time(db: object, *args: object) -> object:
        rows = original(db, *args)  # type: ignore[arg-type]
        if next(calls) == 0:
            read_done.set()
            release.wait(timeout=30)
        return rows

    monkeypatch.setattr(incident_rows, "open_incidents", held_first_time)
    async with await Store.open(target) as store:
        before = asyncio.ensure_future(store.open_incidents())
        await asyncio.to_thread(read_done.wait, 30)
        await store.open_or_join_incident("gpu-node-01", "C1", opened_by="U1", at=T0, locale="en")
        after = asyncio.ensure_future(store.open_incidents())
        await asyncio.sleep(0)
        release.set()
        assert await before == []
        assert [i.node for i in await after] == ["gpu-node-01"]


async def test_open_incidents_see_another_replicas_writes_within_the_ttl(
    target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = target
    async with await Store.open(path) as mine, await Store.open(path) as theirs:
        assert await mine.open_incidents() == []
        await theirs.open_or_join_incident(
            "gpu-node-02", "C1", opened_by="U2", at=datetime(2026, 1, 1, tzinfo=UTC), locale="en"
        )
        monkeypatch.setattr(storing, "OPEN_INCIDENTS_TTL_S", 0.0)
        assert [i.node for i in await mine.open_incidents()] == ["gpu-node-02"]
