"""The audit log proves itself: a hash chain that shows edits, deletions, forged rows and
dropped triggers, made by anyone who can write the database directly (SQLite or PostgreSQL),
and stays one chain when two replicas append at once."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.core.reporting.records import NO_CLUSTER
from bot.store import AuditRecord, Store
from bot.store.migrating import render
from bot.store.migrations import MIGRATIONS
from bot.store.sqlite import SqliteDb
from tests.store.conftest import RAW_ERRORS, is_pg, lift, tamper

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
FORGED_INSERT = (
    "INSERT INTO audit (at, actor, action, decision) "
    "VALUES ('2026-02-01T00:00:00.000000+00:00', 'U0FORGER', 'tier1.execute', 'executed')"
)


def record(minutes: int, decision: str = "allowed") -> AuditRecord:
    return AuditRecord(
        at=T0 + timedelta(minutes=minutes),
        actor="U1",
        action="tier1.execute",
        decision=decision,
        changes=[{"verb": "cordon", "name": "gpu-node-01"}],
        cluster=NO_CLUSTER,
    )


@pytest.fixture
async def store(target: str) -> AsyncIterator[Store]:
    s = await Store.open(target)
    for minute, decision in ((0, "allowed"), (1, "claimed"), (2, "executed")):
        await s.append_audit(record(minute, decision))
    yield s
    await s.close()


async def test_an_untouched_log_verifies_with_every_row_counted(store: Store) -> None:
    report = await store.verify_audit()
    assert (report.ok, report.rows, report.bad_id) == (True, 3, None)


async def test_a_forged_insert_without_the_chain_is_refused_by_the_store(
    store: Store, target: str
) -> None:
    with pytest.raises(RAW_ERRORS, match="hash-chained"):
        tamper(target, FORGED_INSERT)
    assert (await store.verify_audit()).ok


# Someone with write access to the database lifts guards, tampers, and puts them back exactly
# as shipped (SQLite: DROP and CREATE; PostgreSQL: DISABLE and ENABLE), so only the chain
# itself can tell.
MADE_UP_HASHES = FORGED_INSERT.replace("(at,", "(prev_hash, row_hash, at,").replace(
    "VALUES (", f"VALUES ('{'0' * 64}', '{'1' * 64}', "
)


@pytest.mark.parametrize(
    ("lifted", "statements", "bad_id", "words"),
    [
        (["audit_no_update"], ["UPDATE audit SET decision='denied' WHERE id=2"], 2, "edited"),
        (["audit_no_delete"], ["DELETE FROM audit WHERE id=2"], 3, "deleted"),
        (["audit_no_delete"], ["DELETE FROM audit WHERE id=3"], 3, "deleted"),
        (["audit_chained", "audit_head_advance"], [FORGED_INSERT], 4, "prev_hash"),
        (["audit_chained"], [MADE_UP_HASHES], 4, "prev_hash"),
    ],
    ids=[
        "edited-row",
        "deleted-row",
        "deleted-last-row",
        "forged-back-dated-insert",
        "forged-insert-with-made-up-hashes",
    ],
)
async def test_verify_names_the_first_bad_row(
    store: Store,
    target: str,
    lifted: list[str],
    statements: list[str],
    bad_id: int | None,
    words: str,
) -> None:
    lift(target, lifted, *statements)

    report = await store.verify_audit()

    assert not report.ok
    assert report.bad_id == bad_id
    assert words in report.problem


@pytest.mark.parametrize("trigger", ["audit_no_delete", "audit_chained", "audit_head_advance"])
async def test_verify_names_a_dropped_trigger(store: Store, target: str, trigger: str) -> None:
    table = "audit"
    tamper(
        target, f"DROP TRIGGER {trigger} ON {table}" if is_pg(target) else f"DROP TRIGGER {trigger}"
    )

    report = await store.verify_audit()

    assert (report.ok, report.bad_id) == (False, None)
    assert f"trigger {trigger} was dropped" in report.problem


async def test_rows_appended_after_a_forged_row_still_show_the_forgery(
    store: Store, target: str
) -> None:
    lift(target, ["audit_chained", "audit_head_advance"], FORGED_INSERT)
    await store.append_audit(record(5, "executed"))

    report = await store.verify_audit()

    assert (report.ok, report.bad_id) == (False, 4)


async def test_rows_written_before_the_chain_existed_are_chained_by_the_migration(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version (version) VALUES (1)")
    for step in MIGRATIONS[0]:
        sql = render(step, SqliteDb(conn, path))
        if sql is not None:
            conn.execute(sql)
    for i in range(3):
        conn.execute(
            "INSERT INTO audit (at, actor, action, decision) VALUES (?, 'U1', 'resolve', 'ok')",
            (f"2026-01-0{i + 1}T00:00:00.000000+00:00",),
        )
    conn.close()

    async with await Store.open(path) as store:
        before = await store.verify_audit()
        await store.append_audit(record(0))
        after = await store.verify_audit()

    assert (before.ok, before.rows) == (True, 3)
    assert (after.ok, after.rows) == (True, 4)


async def test_each_row_is_exported_to_the_log_with_its_hash_when_asked(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    store.export_audit = True
    with caplog.at_level(logging.INFO, logger="gpunode.audit"):
        row_id = await store.append_audit(record(9, "executed"))

    exported = [json.loads(r.getMessage()) for r in caplog.records if r.name == "gpunode.audit"]
    assert [(e["id"], e["decision"]) for e in exported] == [(row_id, "executed")]
    assert len(exported[0]["row_hash"]) == 64


async def test_rows_are_not_exported_by_default(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="gpunode.audit"):
        await store.append_audit(record(9))
    assert [r for r in caplog.records if r.name == "gpunode.audit"] == []


CHILD_APPENDS = """
import sys
from datetime import UTC, datetime
from bot.store.engines import connect
from bot.core.reporting.records import AuditRecord
from bot.store.record_rows import append_audit

target, who, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = connect(target, migrate=False)
for i in range(count):
    row = AuditRecord(at=datetime.now(UTC), actor=who, action="x", decision=str(i), cluster="")
    append_audit(db, row)
db.close()
"""


async def test_two_processes_appending_at_once_keep_one_unbroken_chain(
    store: Store, target: str
) -> None:
    per_process = 60
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD_APPENDS, target, who, str(per_process), cwd=REPO
        )
        for who in ("replica-a", "replica-b")
    ]
    assert [await c.wait() for c in children] == [0, 0]

    report = await store.verify_audit()

    assert (report.ok, report.rows) == (True, 3 + 2 * per_process), report.problem
    actors = [r.actor for r in await store.audit_since()]
    assert (actors.count("replica-a"), actors.count("replica-b")) == (per_process, per_process)
