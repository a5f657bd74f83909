"""The store keeps each row's cluster: one open incident per (cluster, node), timeline rows
that carry their incident's cluster, audit rows that keep the one their writer names, and an
audit chain that covers it without breaking the rows written before clusters existed."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.core.model.incidents import TimelineEntry
from bot.core.reporting.records import NO_CLUSTER
from bot.store import ActionRecord, AuditRecord, Store
from bot.store.migrating import render
from bot.store.migrations import MIGRATIONS
from bot.store.sqlite import SqliteDb
from tests.store.first_chain import OLD_COLUMNS

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: the schema steps before the cluster columns (step 5 adds them)
BEFORE_CLUSTERS = 5


@pytest.fixture
async def store(target: str) -> AsyncIterator[Store]:
    """The store on each engine (SQLite, PostgreSQL): the same rows, the same answers."""
    s = await Store.open(target)
    yield s
    await s.close()


async def test_one_node_name_in_two_clusters_opens_two_incidents(store: Store) -> None:
    eu, created_eu = await store.open_or_join_incident(
        "gpu-node-01", "C1", opened_by="U1", at=T0, cluster="prod-eu", locale="en"
    )
    us, created_us = await store.open_or_join_incident(
        "gpu-node-01", "C1", opened_by="U1", at=T0, cluster="prod-us", locale="en"
    )
    again, created_again = await store.open_or_join_incident(
        "gpu-node-01", "C1", opened_by="U2", at=T0, cluster="prod-eu", locale="en"
    )

    assert (created_eu, created_us, created_again) == (True, True, False)
    assert (eu.cluster, us.cluster) == ("prod-eu", "prod-us")
    assert eu.id != us.id
    assert again.id == eu.id
    assert [i.id for i in await store.open_incidents(cluster="prod-us")] == [us.id]
    assert [i.id for i in await store.incidents_for_node("gpu-node-01", "prod-eu")] == [eu.id]


async def test_the_database_refuses_a_second_open_incident_for_one_cluster_and_node(
    tmp_path: Path,
) -> None:
    async with await Store.open(str(tmp_path / "g.db")) as s:
        await s.open_or_join_incident("n1", "C", opened_by="U", at=T0, cluster="a", locale="en")
        path = s.path

    conn = sqlite3.connect(path, isolation_level=None)
    insert = (
        "INSERT INTO incidents (id, number, node, state, opened_at, opened_by, cluster) "
        "VALUES (?, ?, 'n1', 'investigating', '2026-03-01T12:00:00+00:00', 'U', ?)"
    )
    conn.execute(insert, ("INC-0002", 2, "b"))  # another cluster: allowed
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
        conn.execute(insert, ("INC-0003", 3, "a"))
    conn.close()


async def test_timeline_entries_carry_their_incidents_cluster(store: Store) -> None:
    incident, _ = await store.open_or_join_incident(
        "gpu-node-02", "C1", opened_by="U1", at=T0, cluster="prod-us", locale="en"
    )
    await store.append_timeline(
        TimelineEntry(incident_id=incident.id, at=T0, kind="note", actor="U1", text="hi")
    )

    entries = await store.timeline(incident.id)

    assert [(e.kind, e.cluster) for e in entries] == [("opened", "prod-us"), ("note", "prod-us")]


async def test_actions_and_their_audit_rows_keep_the_cluster_their_writer_names(
    store: Store,
) -> None:
    incident, _ = await store.open_or_join_incident(
        "gpu-node-03", "C1", opened_by="U1", at=T0, cluster="prod-eu", locale="en"
    )
    await store.create_action(
        ActionRecord(
            action_id="A1",
            incident_id=incident.id,
            tier=1,
            requester="U1",
            created_at=T0,
            updated_at=T0,
            cluster="prod-eu",
        )
    )
    await store.append_audit(
        AuditRecord(
            at=T0, actor="U1", action="tier1", decision="allowed", action_id="A1", cluster="prod-eu"
        )
    )
    await store.append_audit(
        AuditRecord(at=T0, actor="U1", action="x", decision="ok", cluster="prod-us")
    )

    action = await store.get_action("A1")
    rows = await store.audit_since()

    assert action is not None and action.cluster == "prod-eu"
    assert [r.cluster for r in rows] == ["prod-eu", "prod-us"]
    assert (await store.verify_audit()).ok


async def test_an_audit_row_about_no_one_cluster_stays_so_even_when_it_names_an_incident(
    store: Store,
) -> None:
    """The store writes the cluster a row names and fills in none from its incident or
    action: a decision made across clusters reads back (and is hashed) as written."""
    incident, _ = await store.open_or_join_incident(
        "gpu-node-03", "C1", opened_by="U1", at=T0, cluster="prod-eu", locale="en"
    )
    await store.append_audit(
        AuditRecord(
            at=T0,
            actor="U1",
            action="view",
            decision="denied",
            incident_id=incident.id,
            cluster=NO_CLUSTER,
        )
    )

    rows = await store.audit_since()

    assert [r.cluster for r in rows] == [NO_CLUSTER]
    assert (await store.verify_audit()).ok


def _old_digest(values: dict[str, object]) -> str:
    body = json.dumps(
        {c: values.get(c) for c in OLD_COLUMNS},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(f"{values.get('prev_hash')}\n{body}".encode()).hexdigest()


def _schema_3_file_with_chained_rows(path: str, count: int) -> None:
    """A store file as gpunode wrote it before clusters (schema 4), rows chained the old way."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    db = SqliteDb(conn, path)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (BEFORE_CLUSTERS,))
    for step in MIGRATIONS[:BEFORE_CLUSTERS]:
        for statement in step:
            if callable(statement):
                statement(db)
            elif (sql := render(statement, db)) is not None:
                conn.execute(sql)
    prev = "0" * 64
    for i in range(1, count + 1):
        values: dict[str, object] = dict.fromkeys(OLD_COLUMNS)
        values |= {
            "id": i,
            "at": f"2026-01-0{i}T00:00:00.000000+00:00",
            "actor": "U1",
            "action": "resolve",
            "channel": "C1",
            "decision": "ok",
            "outcome": "",
            "detail": "",
            "prev_hash": prev,
        }
        digest = _old_digest(values)
        conn.execute(
            "INSERT INTO audit ({}, row_hash) VALUES ({}?)".format(
                ", ".join(OLD_COLUMNS), "?, " * len(OLD_COLUMNS)
            ),
            [values[c] for c in OLD_COLUMNS] + [digest],
        )
        prev = digest
    conn.execute("INSERT INTO audit_head (id, last_id, last_hash) VALUES (1, ?, ?)", (count, prev))
    conn.execute(
        "INSERT INTO incidents (id, number, node, state, opened_at, opened_by) "
        "VALUES ('INC-0001', 1, 'gpu-node-01', 'investigating', "
        "'2026-01-01T00:00:00.000000+00:00', 'U1')"
    )
    conn.close()


async def test_rows_chained_before_clusters_still_verify_and_new_rows_chain_after_them(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    _schema_3_file_with_chained_rows(path, 3)

    async with await Store.open(path) as store:
        before = await store.verify_audit()
        await store.append_audit(
            AuditRecord(at=T0, actor="U1", action="x", decision="ok", cluster="prod-eu")
        )
        after = await store.verify_audit()
        rows = await store.audit_since()

    assert (before.ok, before.rows) == (True, 3)
    assert (after.ok, after.rows) == (True, 4)
    assert [r.cluster for r in rows] == ["", "", "", "prod-eu"]


@pytest.mark.parametrize(
    ("statement", "bad_id"),
    [
        ("UPDATE audit SET cluster='prod-us' WHERE id=4", 4),  # moved to another cluster
        ("UPDATE audit SET cluster='' WHERE id=4", 4),  # its cluster blanked
        ("UPDATE audit SET cluster='prod-us' WHERE id=2", 2),  # an old row given a cluster
    ],
)
async def test_changing_a_rows_cluster_breaks_the_chain_at_that_row(
    tmp_path: Path, statement: str, bad_id: int
) -> None:
    path = str(tmp_path / "old.db")
    _schema_3_file_with_chained_rows(path, 3)
    async with await Store.open(path) as store:
        await store.append_audit(
            AuditRecord(at=T0, actor="U1", action="x", decision="ok", cluster="prod-eu")
        )
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute(statement)
    conn.execute(
        "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit "
        "BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END"
    )
    conn.close()

    async with await Store.open(path) as store:
        report = await store.verify_audit()

    assert (report.ok, report.bad_id) == (False, bad_id)


async def test_an_incident_open_across_the_upgrade_is_adopted_by_the_default_cluster(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    _schema_3_file_with_chained_rows(path, 1)

    async with await Store.open(path) as store:
        adopted = await store.adopt_unclustered("default")
        joined, created = await store.open_or_join_incident(
            "gpu-node-01",
            "C1",
            opened_by="U1",
            at=T0 + timedelta(days=60),
            cluster="default",
            locale="en",
        )
        again = await store.adopt_unclustered("default")
        audit = await store.audit_since()

    assert (adopted, again) == (1, 0)
    assert (joined.id, created, joined.cluster) == ("INC-0001", False, "default")
    assert [r.cluster for r in audit] == [""]  # audit rows say what they said
