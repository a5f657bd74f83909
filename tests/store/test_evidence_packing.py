"""Evidence snapshots are stored compressed with a format number (bot/store/packing.py),
read back unchanged, rows written before compression still read, and the retention keeps
only the diagnosis of old snapshots. On both engines (``target``) where the database allows."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

from bot.store import Store, packing
from bot.store.migrating import render
from bot.store.migrations import MIGRATIONS
from bot.store.sqlite import SqliteDb
from tests.store.conftest import query, tamper
from tests.store.test_storing import BUNDLE, T0, VIEW, at, diagnosis

#: the schema before snapshots were packed
BEFORE_PACKING = 6


async def test_a_snapshot_is_stored_compressed_and_reads_back_the_same(target: str) -> None:
    async with await Store.open(target) as store:
        incident, _ = await store.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
        digest = await store.save_snapshot(
            incident.id, at=T0, bundle=BUNDLE, view=VIEW, diagnosis=diagnosis(1.0)
        )
        latest = await store.latest_snapshot(incident.id)
    assert latest is not None and latest.sha256 == digest
    assert (latest.bundle, latest.view, latest.diagnosis) == (BUNDLE, VIEW, diagnosis(1.0))
    [(text, size, fmt)] = query(
        target,
        "SELECT bundle || cluster_view || diagnosis, LENGTH(packed), format "
        "FROM evidence_snapshots",
    )
    raw = sum(len(m.model_dump_json()) for m in (BUNDLE, VIEW, diagnosis(1.0)))
    assert (text, fmt) == ("", packing.XZ_SUMMARISED)
    assert isinstance(size, int) and size * 4 < raw


async def test_a_snapshot_row_from_before_packing_reads_as_it_was_written(target: str) -> None:
    async with await Store.open(target) as store:
        incident, _ = await store.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
    bundle = BUNDLE.model_dump_json().replace("'", "''")
    view = VIEW.model_dump_json().replace("'", "''")
    diag = diagnosis(3.0).model_dump_json().replace("'", "''")
    tamper(
        target,
        "INSERT INTO evidence_snapshots (incident_id, at, bundle, cluster_view, diagnosis, sha256) "
        f"VALUES ('{incident.id}', '{T0.isoformat()}', '{bundle}', '{view}', '{diag}', 'old')",
    )
    async with await Store.open(target) as store:
        [old] = await store.snapshots(incident.id)
    assert (old.sha256, old.bundle, old.view, old.diagnosis) == (
        "old",
        BUNDLE,
        VIEW,
        diagnosis(3.0),
    )


async def test_a_store_from_before_packing_migrates_and_keeps_its_snapshots(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (BEFORE_PACKING,))
    db = SqliteDb(conn, path)
    for step in MIGRATIONS[:BEFORE_PACKING]:
        for statement in step:
            sql = render(statement, db)
            if sql is not None:
                conn.execute(sql)
            elif callable(statement):
                statement(db)
    conn.execute(
        "INSERT INTO incidents (id, number, node, state, opened_at, opened_by) "
        "VALUES ('INC-0001', 1, 'gpu-node-01', 'investigating', ?, 'U1')",
        (T0.isoformat(),),
    )
    conn.execute(
        "INSERT INTO evidence_snapshots (incident_id, at, bundle, cluster_view, diagnosis, sha256)"
        " VALUES ('INC-0001', ?, ?, ?, ?, 'old')",
        (
            T0.isoformat(),
            BUNDLE.model_dump_json(),
            VIEW.model_dump_json(),
            diagnosis().model_dump_json(),
        ),
    )
    conn.close()
    async with await Store.open(path) as store:
        await store.save_snapshot(
            "INC-0001", at=at(1), bundle=BUNDLE, view=VIEW, diagnosis=diagnosis(2.0)
        )
        old, new = await store.snapshots("INC-0001")
    assert (old.sha256, old.bundle, old.diagnosis) == ("old", BUNDLE, diagnosis())
    assert (new.bundle, new.view, new.diagnosis) == (BUNDLE, VIEW, diagnosis(2.0))


async def test_the_retention_keeps_only_the_diagnosis_of_snapshots_older_than_the_cutoff(
    target: str,
) -> None:
    async with await Store.open(target) as store:
        incident, _ = await store.open_or_join_incident(
            "n1", "C1", opened_by="U1", at=T0, locale="en"
        )
        for day in range(3):
            await store.save_snapshot(
                incident.id,
                at=T0 + timedelta(days=day),
                bundle=BUNDLE,
                view=VIEW,
                diagnosis=diagnosis(float(day)),
            )
        pruned = await store.prune_evidence(before=T0 + timedelta(days=1, hours=12))
        again = await store.prune_evidence(before=T0 + timedelta(days=1, hours=12))
        kept = await store.snapshots(incident.id)
    assert (pruned, again) == (2, 0)
    assert [(s.bundle, s.view) for s in kept] == [(None, None), (None, None), (BUNDLE, VIEW)]
    assert [s.diagnosis for s in kept] == [diagnosis(0.0), diagnosis(1.0), diagnosis(2.0)]
