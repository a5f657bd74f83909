"""The incident keeps the ts of its pinned current-state messages, read by key on both
engines; a store from before that column gets them from the timeline's evidence entries."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.errors import StoreError
from bot.store import Store
from bot.store.migrating import render
from bot.store.migrations import MIGRATIONS
from bot.store.sqlite import SqliteDb
from bot.store.values import dumps

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
STATE_STEP = next(i for i, step in enumerate(MIGRATIONS) if any("state_ts" in str(s) for s in step))


async def test_a_new_incident_has_no_state_messages_until_they_are_kept(target: str) -> None:
    async with await Store.open(target) as store:
        incident, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0ALICE", at=T0, locale="en"
        )
        assert await store.state_messages(incident.id) == []
        await store.set_state_messages(incident.id, ["1700000000.000100"])
    async with await Store.open(target) as store:  # a restart (another replica) reads them
        assert await store.state_messages(incident.id) == ["1700000000.000100"]
        await store.set_state_messages(incident.id, ["1700000000.000200", "1700000000.000300"])
        assert await store.state_messages(incident.id) == [
            "1700000000.000200",
            "1700000000.000300",
        ]


async def test_state_messages_of_an_unknown_incident_are_none_and_cannot_be_kept(
    target: str,
) -> None:
    async with await Store.open(target) as store:
        assert await store.state_messages("INC-0404") == []
        with pytest.raises(StoreError):
            await store.set_state_messages("INC-0404", ["1.2"])


def _old_store(path: str) -> sqlite3.Connection:
    """A SQLite store at the schema just before the state column."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (STATE_STEP,))
    db = SqliteDb(conn, path)
    for step in MIGRATIONS[:STATE_STEP]:
        for statement in step:
            sql = render(statement, db)
            if sql is not None:
                conn.execute(sql)
            elif callable(statement):
                statement(db)
    return conn


async def test_a_store_from_before_the_column_takes_the_latest_state_its_timeline_named(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    conn = _old_store(path)
    for number in (1, 2):
        conn.execute(
            "INSERT INTO incidents (id, number, node, state, opened_at, opened_by) "
            "VALUES (?, ?, ?, 'investigating', ?, 'U0ALICE')",
            (f"INC-000{number}", number, f"gpu-node-0{number}", T0.isoformat()),
        )
    rows = [  # INC-0001's first state was deleted and posted again; INC-0002 never had one
        ("INC-0001", 0, {"state_ts": ["1.1"]}),
        ("INC-0001", 1, {"state_ts": []}),
        ("INC-0001", 2, {"state_ts": ["2.1", "2.2"]}),
        ("INC-0001", 3, {"findings": []}),
        ("INC-0002", 0, {"findings": []}),
    ]
    for incident_id, minutes, data in rows:
        conn.execute(
            "INSERT INTO timeline (incident_id, at, kind, actor, text, data) "
            "VALUES (?, ?, 'evidence', 'gpunode', 'verdict', ?)",
            (incident_id, (T0 + timedelta(minutes=minutes)).isoformat(), dumps(data)),
        )
    conn.close()

    async with await Store.open(path) as store:
        assert await store.state_messages("INC-0001") == ["2.1", "2.2"]
        assert await store.state_messages("INC-0002") == []
        # the timeline itself is untouched
        entries = await store.timeline("INC-0001")
    assert [e.data for e in entries] == [data for i, _, data in rows if i == "INC-0001"]
