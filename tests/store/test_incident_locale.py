"""An incident remembers the language of its thread, on both engines; a store from before
that column reads 'en'."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from bot.store import Store
from bot.store.migrating import render
from bot.store.migrations import MIGRATIONS
from bot.store.sqlite import SqliteDb
from tests.store.conftest import tamper

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LOCALE_STEP = next(i for i, step in enumerate(MIGRATIONS) if any("locale" in str(s) for s in step))


async def test_a_new_incident_keeps_the_locale_it_was_opened_in(target: str) -> None:
    async with await Store.open(target) as store:
        opened, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0LIWEI", at=T0, locale="zh-CN"
        )
    async with await Store.open(target) as store:  # a restart reads it back
        again = await store.get_incident(opened.id)
    assert again is not None and again.locale == "zh-CN"


async def test_joining_an_open_incident_keeps_the_threads_locale(target: str) -> None:
    async with await Store.open(target) as store:
        first, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0LIWEI", at=T0, locale="zh-CN"
        )
        joined, created = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U0ALICE", at=T0, locale="en"
        )
    assert (created, joined.id, joined.locale) == (False, first.id, "zh-CN")


async def test_a_row_written_without_a_locale_reads_as_english(target: str) -> None:
    async with await Store.open(target):
        pass
    tamper(
        target,
        "INSERT INTO incidents (id, number, node, state, opened_at, opened_by) VALUES "
        "('INC-0009', 9, 'gpu-node-09', 'investigating', '2026-03-01T12:00:00+00:00', 'U1')",
    )
    async with await Store.open(target) as store:
        incident = await store.get_incident("INC-0009")
    assert incident is not None and incident.locale == "en"


async def test_incidents_stored_before_the_locale_column_read_as_english(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (LOCALE_STEP,))
    db = SqliteDb(conn, path)
    for step in MIGRATIONS[:LOCALE_STEP]:
        for statement in step:
            sql = render(statement, db)
            if sql is not None:
                conn.execute(sql)
            elif callable(statement):
                statement(db)
    conn.execute(
        "INSERT INTO incidents (id, number, node, state, opened_at, opened_by) "
        "VALUES ('INC-0001', 1, 'gpu-node-01', 'investigating', ?, 'U0ALICE')",
        (T0.isoformat(),),
    )
    conn.close()

    async with await Store.open(path) as store:
        incident = await store.get_incident("INC-0001")

    assert incident is not None and incident.locale == "en"


def test_the_locale_migration_is_one_portable_statement() -> None:
    assert MIGRATIONS[LOCALE_STEP] == (
        "ALTER TABLE incidents ADD COLUMN locale TEXT NOT NULL DEFAULT 'en'",
    )
