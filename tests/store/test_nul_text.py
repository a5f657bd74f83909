"""A NUL character in text from outside (an alert's label, a thread reply, an audit reason)
is kept on both engines: PostgreSQL text cannot hold U+0000, so both keep U+FFFD instead,
and the audit chain hashes what is stored."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.model.incidents import TimelineEntry
from bot.core.reporting.records import NO_CLUSTER
from bot.store import AuditRecord, Store
from bot.store.values import NUL_STANDIN

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NUL_TEXT = "gpu\x00node: reply\x00with NULs"
KEPT = NUL_TEXT.replace("\x00", NUL_STANDIN)


async def test_an_alert_with_a_nul_opens_its_incident_and_its_group_is_remembered(
    target: str,
) -> None:
    async with await Store.open(target) as store:
        incident, created = await store.open_or_join_incident(
            "gpu-node-01",
            "C0INC",
            opened_by="alertmanager",
            at=T0,
            alert_fingerprint="fp\x00x",
            cluster="prod\x00eu",
            locale="en",
        )
        first = await store.remember_alert_group("group\x00key", "firing", at=T0)
        again = await store.remember_alert_group("group\x00key", "firing", at=T0)
        stored = await store.get_incident(incident.id)

    assert created and first and not again
    assert stored is not None
    assert stored.alert_fingerprint == f"fp{NUL_STANDIN}x"


async def test_a_thread_reply_with_a_nul_is_kept_in_the_timeline(target: str) -> None:
    async with await Store.open(target) as store:
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C0INC", opened_by="U1", at=T0, locale="en"
        )
        await store.append_timeline(
            TimelineEntry(incident_id=incident.id, at=T0, kind="note", actor="U1", text=NUL_TEXT)
        )
        texts = [e.text for e in await store.timeline(incident.id)]

    assert KEPT in texts


async def test_an_audit_reason_with_a_nul_is_chained_as_stored(target: str) -> None:
    async with await Store.open(target) as store:
        await store.append_audit(
            AuditRecord(
                at=T0,
                actor="U1",
                action="tier1.request",
                decision="refused",
                detail=NUL_TEXT,
                cluster=NO_CLUSTER,
            )
        )
        report = await store.verify_audit()
        (row,) = await store.audit_since()

    assert (report.ok, report.rows) == (True, 1), report.problem
    assert row.detail == KEPT
