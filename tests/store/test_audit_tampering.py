"""Each tampering that once passed `gpunode audit --verify` is now refused by the store or named
by the verification, on SQLite and PostgreSQL: a forged row with a correct hash, the tail cut
with the head fixed, guards recreated as no-ops under their names, INSERT OR REPLACE, the
whole log wiped, and on PostgreSQL what the bot's own role may no longer do at all."""

from __future__ import annotations

import argparse
import io
import os
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from bot.cli import migrate
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.reporting.checkup import Finding
from bot.core.reporting.records import NO_CLUSTER
from bot.render.checkup import finding_words
from bot.store import ActionRecord, AuditRecord, Store, audit_chain, audit_guard, engines, roles
from tests.store.conftest import RAW_ERRORS, is_pg, lift, query, tamper

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KEY = b"the-audit-key-of-this-test"
HEAD_OF_ROW_2 = (
    "UPDATE audit_head SET last_id = 2, "
    "last_hash = (SELECT row_hash FROM audit WHERE id = 2) WHERE id = 1"
)


def record(
    minutes: int, decision: str, action_id: str | None = None, cluster: str = NO_CLUSTER
) -> AuditRecord:
    return AuditRecord(
        at=T0 + timedelta(minutes=minutes),
        actor="U1",
        action="tier1.execute",
        decision=decision,
        action_id=action_id,
        changes=[{"verb": "cordon", "name": "n1"}],
        cluster=cluster,
    )


@pytest.fixture
async def store(target: str) -> AsyncIterator[Store]:
    s = await Store.open(target)
    s.audit_key = KEY
    for minute, decision in ((0, "allowed"), (1, "claimed"), (2, "executed")):
        await s.append_audit(record(minute, decision))
    yield s
    await s.close()


def forged_row(target: str, decision: str = "approved", mac: str | None = None) -> str:
    """An INSERT of the row gpunode would append next, with a correct hash (anyone can
    compute one: the chain is public), but no signature."""
    last_id, last_hash = query(target, "SELECT last_id, last_hash FROM audit_head")[0]
    values = {
        "id": int(str(last_id)) + 1,
        "at": "2026-03-01T12:05:00.000000+00:00",
        "actor": "U0FORGER",
        "action": "tier3.approve",
        "channel": "",
        "incident_id": None,
        "action_id": None,
        "tier": 3,
        "decision": decision,
        "dry_run": None,
        "outcome": "",
        "changes": None,
        "detail": "",
        "prev_hash": last_hash,
    }
    digest = audit_chain.row_digest(values)
    mac_sql = f"'{mac}'" if mac else "NULL"
    return (
        "INSERT INTO audit (id, at, actor, action, tier, decision, prev_hash, row_hash, "
        f"row_mac) VALUES ({values['id']}, '{values['at']}', 'U0FORGER', 'tier3.approve', 3, "
        f"'{decision}', '{last_hash}', '{digest}', {mac_sql})"
    )


@pytest.mark.parametrize(
    ("mac", "problem"),
    [
        (None, "it is not signed, unlike the rows before it"),
        ("f" * 64, "its MAC does not match (not written with the audit key)"),
    ],
    ids=["unsigned", "made-up-mac"],
)
async def test_a_row_forged_with_a_correct_hash_fails_on_its_signature(
    store: Store, target: str, mac: str | None, problem: str
) -> None:
    # today's forger also moved the head; now the database moves it (the WHERE makes that a
    # no-op here), so the forged row is chained, correctly hashed, and only its MAC is wrong
    tamper(
        target,
        forged_row(target, mac=mac),
        "UPDATE audit_head SET last_id = 4, last_hash = (SELECT row_hash FROM audit "
        "WHERE id = 4) WHERE id = 1 AND last_id <> 4",
    )

    report = await store.verify_audit()

    assert (report.ok, report.bad_id, report.rows, report.problem) == (False, 4, 3, problem)


async def test_a_signed_log_verifies_every_signature(store: Store) -> None:
    report = await store.verify_audit()
    assert (report.ok, report.rows, report.signed) == (True, 3, 3)


async def test_the_tail_cannot_be_cut_with_the_head_fixed_to_match(
    store: Store, target: str
) -> None:
    lift(target, ["audit_no_delete"], "DELETE FROM audit WHERE id = 3")
    with pytest.raises(RAW_ERRORS, match="only moves forward"):
        tamper(target, HEAD_OF_ROW_2)

    report = await store.verify_audit()

    assert (report.ok, report.bad_id) == (False, 3)
    assert "rows after row 2 were deleted" in report.problem


def _noop_sqlite(name: str, when: str, table: str) -> list[str]:
    return [f"DROP TRIGGER {name}", f"CREATE TRIGGER {name} {when} ON {table} BEGIN SELECT 1; END"]


def _noop_pg(name: str, when: str, table: str) -> list[str]:
    return [
        "CREATE OR REPLACE FUNCTION gpunode_noop() RETURNS trigger LANGUAGE plpgsql "
        "AS $$ BEGIN RETURN NEW; END $$",
        f"DROP TRIGGER {name} ON {table}",
        f"CREATE TRIGGER {name} {when} ON {table} FOR EACH ROW EXECUTE FUNCTION gpunode_noop()",
    ]


@pytest.mark.parametrize(
    ("name", "when", "table", "pg_name"),
    [
        ("audit_no_update", "BEFORE UPDATE", "audit", "audit_no_update"),
        ("audit_no_delete", "BEFORE DELETE", "audit", "audit_no_delete"),
        ("audit_head_forward", "BEFORE UPDATE", "audit_head", "audit_head_guard"),
    ],
)
async def test_a_guard_recreated_as_a_no_op_under_its_name_is_named(
    store: Store, target: str, name: str, when: str, table: str, pg_name: str
) -> None:
    if is_pg(target):
        tamper(target, *_noop_pg(pg_name, when, table))
        name = pg_name
    else:
        tamper(target, *_noop_sqlite(name, when, table))

    report = await store.verify_audit()

    assert not report.ok
    assert report.problem == f"trigger {name} was changed (its definition is not the shipped one)"


async def _ran_an_action(store: Store) -> None:
    await store.create_action(
        ActionRecord(
            action_id="a-ran",
            tier=1,
            requester="U1",
            created_at=T0,
            updated_at=T0,
            cluster=DEFAULT_CLUSTER,
        )
    )
    assert await store.claim_action("a-ran", "replica-1", at=T0)
    await store.append_audit(record(3, "claimed", action_id="a-ran", cluster=DEFAULT_CLUSTER))


async def test_a_wiped_log_fails_while_the_store_holds_an_action_that_ran(
    store: Store, target: str
) -> None:
    await _ran_an_action(store)
    head_guard = "audit_head_guard" if is_pg(target) else "audit_head_no_delete"
    lift(
        target,
        ["audit_no_delete", head_guard],
        "DELETE FROM audit",
        "DELETE FROM audit_head",
        f"INSERT INTO audit_head (id, last_id, last_hash) VALUES (1, 0, '{audit_chain.GENESIS}')",
    )

    report = await store.verify_audit()

    assert (report.ok, report.rows) == (False, 0)
    assert report.problem == "action a-ran ran but has no audit row (the log was emptied or cut)"


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_insert_or_replace_is_refused_on_sqlite(store: Store, target: str) -> None:
    replace = forged_row(target).replace("INSERT INTO", "INSERT OR REPLACE INTO")
    last_hash = str(query(target, "SELECT row_hash FROM audit WHERE id = 2")[0][0])
    values = {c: None for c in audit_chain.HASHED_COLUMNS} | {
        "id": 3,
        "at": "2026-03-01T12:05:00.000000+00:00",
        "actor": "U0FORGER",
        "action": "tier3.approve",
        "channel": "",
        "tier": 3,
        "decision": "approved",
        "outcome": "",
        "detail": "",
        "prev_hash": last_hash,
    }
    over_row_3 = (
        "INSERT OR REPLACE INTO audit (id, at, actor, action, tier, decision, prev_hash, "
        f"row_hash) VALUES (3, '{values['at']}', 'U0FORGER', 'tier3.approve', 3, 'approved', "
        f"'{last_hash}', '{audit_chain.row_digest(values)}')"
    )
    for statement in (over_row_3, replace.replace("(4,", "(3,")):
        with pytest.raises(RAW_ERRORS, match="append-only"):
            tamper(target, statement)
    # lifting the replace guard alone is not enough: the head would go back to row 3
    tamper(target, "DROP TRIGGER audit_no_replace")
    with pytest.raises(RAW_ERRORS, match="only moves forward"):
        tamper(target, over_row_3)
    tamper(target, audit_guard.SQLITE_TRIGGERS["audit_no_replace"])

    report = await store.verify_audit()

    assert (report.ok, report.rows) == (True, 3)
    assert [r.actor for r in await store.audit_since()] == ["U1", "U1", "U1"]


@pytest.mark.parametrize("target", ["sqlite"], indirect=True)
async def test_rows_cut_with_every_guard_lifted_show_in_sqlites_id_counter(
    store: Store, target: str
) -> None:
    lift(
        target,
        ["audit_no_delete", "audit_head_forward"],
        "DELETE FROM audit WHERE id = 3",
        HEAD_OF_ROW_2,
    )

    report = await store.verify_audit()

    assert (report.ok, report.rows) == (False, 2)
    assert report.problem == "rows after row 2 up to 3 were deleted"


# --- PostgreSQL: the bot's own role ----------------------------------------------------------


def _as(dsn: str, user: str) -> str:
    scheme, _, rest = dsn.partition("://")
    return f"{scheme}://{user}@{rest.split('@', 1)[1]}"


@pytest.fixture
def pg_roles(pg_server: str, pg_dsn: str) -> Iterator[tuple[str, str]]:
    """(owner DSN, app DSN): the database belongs to an owner role that migrated it with
    `gpunode migrate --app-role`; the bot's role got only the app grants."""
    suffix = uuid.uuid4().hex[:8]
    owner, app = f"gpunode_owner_{suffix}", f"gpunode_app_{suffix}"
    database = pg_dsn.rsplit("/", 1)[1]
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {owner} LOGIN".encode())
        admin.execute(f"CREATE ROLE {app} LOGIN".encode())
        admin.execute(f"ALTER DATABASE {database} OWNER TO {owner}".encode())
        admin.execute(f"ALTER SCHEMA public OWNER TO {owner}".encode())
    out = io.StringIO()
    assert migrate.main(argparse.Namespace(dsn=_as(pg_dsn, owner), app_role=app), out=out) == 0
    try:
        yield _as(pg_dsn, owner), _as(pg_dsn, app)
    finally:
        with psycopg.connect(pg_server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)".encode())
            admin.execute(f"DROP ROLE IF EXISTS {app}".encode())
            admin.execute(f"DROP ROLE IF EXISTS {owner}".encode())


@pytest.fixture
async def app_store(pg_roles: tuple[str, str]) -> AsyncIterator[Store]:
    s = await Store.open(pg_roles[1])
    for minute, decision in ((0, "allowed"), (1, "claimed"), (2, "executed")):
        await s.append_audit(record(minute, decision))
    yield s
    await s.close()


@pytest.mark.parametrize(
    "statement",
    [
        "TRUNCATE audit, audit_head",
        "TRUNCATE audit_head",
        "ALTER TABLE audit ENABLE REPLICA TRIGGER audit_no_delete",
        "ALTER TABLE audit DISABLE TRIGGER audit_chained",
        "CREATE OR REPLACE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql "
        "AS $$ BEGIN RETURN NEW; END $$",
        "DELETE FROM audit",
        "UPDATE audit_head SET last_id = 1",
        "DROP TRIGGER audit_no_update ON audit",
    ],
    ids=[
        "truncate-both",
        "truncate-head",
        "enable-replica",
        "disable",
        "replace-function",
        "delete",
        "move-head",
        "drop-trigger",
    ],
)
async def test_the_bots_own_role_may_not_rewrite_the_audit(
    app_store: Store, pg_roles: tuple[str, str], statement: str
) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        tamper(pg_roles[1], statement)

    report = await app_store.verify_audit()

    assert (report.ok, report.rows) == (True, 3)


@pytest.mark.parametrize(
    ("statements", "problem"),
    [
        (
            ["ALTER TABLE audit ENABLE REPLICA TRIGGER audit_no_delete"],
            "trigger audit_no_delete was set to ENABLE REPLICA",
        ),
        (
            ["ALTER TABLE audit ENABLE ALWAYS TRIGGER audit_chained"],
            "trigger audit_chained was set to ENABLE ALWAYS",
        ),
        (
            ["ALTER TABLE audit_head DISABLE TRIGGER audit_head_guard"],
            "trigger audit_head_guard was disabled",
        ),
        (
            [
                "CREATE OR REPLACE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql "
                "AS $$ BEGIN RETURN NEW; END $$"
            ],
            "trigger function audit_refuse() was replaced (its body is not the shipped one)",
        ),
    ],
    ids=["enable-replica", "enable-always", "disabled", "replaced-function"],
)
async def test_what_only_the_owner_can_do_is_named_by_verify(
    app_store: Store, pg_roles: tuple[str, str], statements: list[str], problem: str
) -> None:
    tamper(pg_roles[0], *statements)

    report = await app_store.verify_audit()

    assert (report.ok, report.problem) == (False, problem)


async def test_even_the_owner_cannot_truncate_without_lifting_a_guard(
    app_store: Store, pg_roles: tuple[str, str]
) -> None:
    with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
        tamper(pg_roles[0], "TRUNCATE audit, audit_head")
    assert (await app_store.verify_audit()).ok


# --- constant memory -------------------------------------------------------------------------


async def test_verify_streams_the_log_instead_of_loading_it(target: str) -> None:
    """4000 rows of 2 KB each (8 MB of detail): verify may hold one batch, not the table."""
    rows, detail = 4000, "x" * 2000
    async with await Store.open(target) as s:
        await s.append_audit(record(0, "allowed"))
    last_id, prev = query(target, "SELECT id, row_hash FROM audit")[0]
    inserts = []
    for row_id in range(int(str(last_id)) + 1, int(str(last_id)) + rows + 1):
        values = {c: None for c in audit_chain.HASHED_COLUMNS} | {
            "id": row_id,
            "at": "2026-03-01T12:00:00.000000+00:00",
            "actor": "U1",
            "action": "bulk",
            "channel": "",
            "decision": "allowed",
            "outcome": "",
            "detail": detail,
            "prev_hash": prev,
        }
        prev = audit_chain.row_digest(values)
        inserts.append(
            "INSERT INTO audit (id, at, actor, action, decision, detail, prev_hash, row_hash) "
            f"VALUES ({row_id}, '{values['at']}', 'U1', 'bulk', 'allowed', '{detail}', "
            f"'{values['prev_hash']}', '{prev}')"
        )
    tamper(target, "BEGIN", *inserts, "COMMIT")
    async with await Store.open(target) as s:
        tracemalloc.start()
        try:
            report = await s.verify_audit()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

    assert (report.ok, report.rows) == (True, rows + 1), report.problem
    table_bytes = rows * len(detail)
    print(f"verify peak: {peak} bytes over a {table_bytes}-byte log")
    assert peak < table_bytes / 4, f"verify peaked at {peak} bytes for a {table_bytes}-byte log"


# --- the roles, as gpunode doctor reports them -----------------------------------------------


def said(finding: Finding) -> tuple[str, str]:
    """The finding's check and detail, as the English doctor table words them."""
    return finding_words(finding, locale="en")


def test_the_app_role_may_only_append_and_read_the_audit(pg_roles: tuple[str, str]) -> None:
    owner, app = pg_roles
    as_app = engines.connect(app)
    as_owner = engines.connect(owner, migrate=False)
    try:
        app_findings = roles.check(as_app)
        owner_findings = roles.check(as_owner)
    finally:
        as_app.close()
        as_owner.close()

    assert [(f.ok, said(f)[0]) for f in app_findings] == [
        (True, "store role"),
        (True, "audit grants"),
        (True, "audit_head grants"),
    ], app_findings
    assert said(app_findings[1])[1].endswith("may only SELECT and INSERT on audit")
    assert not owner_findings[0].ok
    assert "the same role: it can drop or replace the guards" in said(owner_findings[0])[1]


def test_a_store_file_writable_by_others_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path = folder / "gpunode.db"
    engines.connect(str(path)).close()
    os.chmod(path, 0o666)

    findings = roles.check(engines.connect(str(path), migrate=False), str(path))

    file_finding, folder_finding = findings
    assert not file_finding.ok
    detail = said(file_finding)[1]
    assert "is writable by its group and others (mode -rw-rw-rw-)" in detail
    assert f"chmod go-w {path}" in detail
    assert folder_finding.ok


@pytest.mark.parametrize("target", ["postgres"], indirect=True)
async def test_a_replica_of_the_previous_release_may_still_append_during_a_rolling_upgrade(
    store: Store, target: str
) -> None:
    """The previous release upserts the head itself after each append (the same values the
    database has just set): allowed, so old pods keep working until they are replaced."""
    last_id, last_hash = query(target, "SELECT last_id, last_hash FROM audit_head")[0]
    tamper(
        target,
        "INSERT INTO audit_head (id, last_id, last_hash) VALUES "
        f"(1, {last_id}, '{last_hash}') ON CONFLICT(id) DO UPDATE SET "
        "last_id=excluded.last_id, last_hash=excluded.last_hash",
    )

    report = await store.verify_audit()

    assert (report.ok, report.rows) == (True, 3)


def test_the_roles_of_a_new_postgres_database_are_checked_after_its_first_start(
    pg_dsn: str,
) -> None:
    db = engines.connect(pg_dsn, migrate=False)  # serve runs doctor before migrating
    try:
        findings = roles.check(db)
    finally:
        db.close()

    assert [(f.ok, said(f)[0]) for f in findings] == [(True, "store role")]
    assert "a new store" in said(findings[0])[1]
