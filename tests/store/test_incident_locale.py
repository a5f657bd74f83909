"""An incident remembers the language of its thread; stores from before that column read 'en'."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from bot.store import Store
from bot.store.migrations import MIGRATIONS

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


async def test_a_new_incident_keeps_the_locale_it_was_opened_in(tmp_path: Path) -> None:
    path = str(tmp_path / "gpunode.db")
    async with await Store.open(path) as store:
        opened, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U_LIWEI", at=T0, locale="zh-CN"
        )
    async with await Store.open(path) as store:  # a restart reads it back
        again = await store.get_incident(opened.id)
    assert again is not None and again.locale == "zh-CN"


async def test_joining_an_open_incident_keeps_the_threads_locale(tmp_path: Path) -> None:
    async with await Store.open(str(tmp_path / "gpunode.db")) as store:
        first, _ = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U_LIWEI", at=T0, locale="zh-CN"
        )
        joined, created = await store.open_or_join_incident(
            "gpu-node-01", "C1", opened_by="U_ALICE", at=T0, locale="en"
        )
    assert (created, joined.id, joined.locale) == (False, first.id, "zh-CN")


async def test_incidents_stored_before_the_locale_column_read_as_english(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    before = MIGRATIONS.index(
        next(step for step in MIGRATIONS if any("locale" in str(s) for s in step))
    )
    conn.execute("INSERT INTO schema_version (version) VALUES (?)", (before,))
    for step in MIGRATIONS[:before]:
        for statement in step:
            statement(conn) if callable(statement) else conn.execute(statement)
    conn.execute(
        "INSERT INTO incidents (id, number, node, state, opened_at, opened_by) "
        "VALUES ('INC-0001', 1, 'gpu-node-01', 'investigating', ?, 'U_ALICE')",
        (T0.isoformat(),),
    )
    conn.close()

    async with await Store.open(path) as store:
        incident = await store.get_incident("INC-0001")

    assert incident is not None and incident.locale == "en"


def test_the_locale_migration_is_one_portable_statement() -> None:
    (step,) = [s for s in MIGRATIONS if any("locale" in str(x) for x in s)]
    assert step == ("ALTER TABLE incidents ADD COLUMN locale TEXT NOT NULL DEFAULT 'en'",)
