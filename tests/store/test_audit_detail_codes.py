"""An audit row keeps its detail's code and raw parameters beside the English detail, on
both engines. A store whose rows were written before those columns existed still verifies
after the migration, and a new row's code and parameters are covered by the hash chain:
changing, blanking or adding either breaks the chain at that row."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest

from bot.core.reporting.records import NO_CLUSTER
from bot.store import AuditRecord, Store, postgres, sqlite
from bot.store.db import Db
from bot.store.migrating import render
from bot.store.migrations import MIGRATIONS
from tests.store.conftest import is_pg, lift, query
from tests.store.first_chain import OLD_COLUMNS

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: the schema step that adds the detail's code and parameters
CODES_STEP = next(
    i for i, step in enumerate(MIGRATIONS) if any("detail_code" in str(s) for s in step)
)
#: a denial as the policy words it, stored by a gpunode that kept no code
OLD_DENIAL = (
    "you need the responder role for tier 3; ask an admin to add you to it in the policy file"
)
ROLE_NEEDED = {"what": "tier", "tier": 3, "roles": ["responder"]}


def _old_digest(values: dict[str, object], cluster: str) -> str:
    hashed = {c: values[c] for c in OLD_COLUMNS} | ({"cluster": cluster} if cluster else {})
    body = json.dumps(hashed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{values['prev_hash']}\n{body}".encode()).hexdigest()


def _connect(target: str) -> Db:
    return (
        postgres.connect(target, migrate=False)
        if is_pg(target)
        else sqlite.connect(target, migrate=False)
    )


def _store_before_codes(target: str) -> None:
    """The store as the gpunode before codes left it: schema up to the step before, and two
    chained rows (one in no cluster, one in prod-eu), hashed as that gpunode hashed them."""
    db = _connect(target)
    try:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (CODES_STEP,))
        for step in MIGRATIONS[:CODES_STEP]:
            for statement in step:
                sql = render(statement, db)
                if sql is not None:
                    db.execute(sql)
                elif callable(statement):
                    statement(db)
        prev = "0" * 64
        for i, (decision, detail, cluster) in enumerate(
            [("denied", OLD_DENIAL, ""), ("refused", "action_already state=succeeded", "prod-eu")],
            start=1,
        ):
            values: dict[str, object] = dict.fromkeys(OLD_COLUMNS)
            values |= {
                "id": i,
                "at": f"2026-01-0{i}T00:00:00.000000+00:00",
                "actor": "U0ALICE",
                "action": "tier3.request",
                "channel": "C1",
                "tier": 3,
                "decision": decision,
                "outcome": "",
                "detail": detail,
                "prev_hash": prev,
            }
            digest = _old_digest(values, cluster)
            db.execute(
                "INSERT INTO audit ({}, cluster, row_hash) VALUES ({}?, ?)".format(
                    ", ".join(OLD_COLUMNS), "?, " * len(OLD_COLUMNS)
                ),
                [values[c] for c in OLD_COLUMNS] + [cluster, digest],
            )
            prev = digest
    finally:
        db.close()


async def _upgraded_with_a_coded_row(target: str) -> None:
    _store_before_codes(target)
    async with await Store.open(target) as store:
        await store.append_audit(
            AuditRecord(
                at=T0,
                actor="U0ALICE",
                action="tier3.request",
                channel="C1",
                decision="refused",
                detail=OLD_DENIAL,
                detail_code="role_needed",
                detail_params=ROLE_NEEDED,
                cluster="prod-eu",
            )
        )


async def test_rows_from_before_codes_verify_after_the_upgrade_and_a_coded_row_chains_after(
    target: str,
) -> None:
    _store_before_codes(target)

    async with await Store.open(target) as store:
        before = await store.verify_audit()
        await store.append_audit(
            AuditRecord(
                at=T0,
                actor="U0ALICE",
                action="tier3.request",
                decision="refused",
                detail=OLD_DENIAL,
                detail_code="role_needed",
                detail_params=ROLE_NEEDED,
                cluster=NO_CLUSTER,
            )
        )
        after = await store.verify_audit()
        rows = await store.audit_since()

    assert (before.ok, before.rows) == (True, 2)
    assert (after.ok, after.rows) == (True, 3)
    assert [(r.detail_code, r.detail_params) for r in rows] == [
        ("", {}),
        ("", {}),
        ("role_needed", ROLE_NEEDED),
    ]
    assert [r.detail for r in rows] == [OLD_DENIAL, "action_already state=succeeded", OLD_DENIAL]


async def test_the_parameters_are_stored_as_canonical_json_and_none_as_empty(target: str) -> None:
    async with await Store.open(target) as store:
        for code, params in (
            ("role_needed", {"tier": 3, "what": "tier", "roles": ["b", "a"]}),
            ("no_role_bound", {}),
        ):
            await store.append_audit(
                AuditRecord(
                    at=T0,
                    actor="U0ALICE",
                    action="view",
                    decision="denied",
                    detail_code=code,
                    detail_params=params,
                    cluster=NO_CLUSTER,
                )
            )

    assert query(target, "SELECT detail_code, detail_params FROM audit ORDER BY id") == [
        ("role_needed", '{"roles":["b","a"],"tier":3,"what":"tier"}'),
        ("no_role_bound", ""),
    ]


@pytest.mark.parametrize(
    ("statement", "bad_id"),
    [
        ("UPDATE audit SET detail_code='no_role_bound' WHERE id=3", 3),  # another refusal
        ("UPDATE audit SET detail_code='' WHERE id=3", 3),  # its code blanked
        (
            'UPDATE audit SET detail_params=\'{"roles":["viewer"],"tier":3,"what":"tier"}\' '
            "WHERE id=3",
            3,
        ),  # another role named
        ("UPDATE audit SET detail_params='' WHERE id=3", 3),  # its parameters blanked
        ("UPDATE audit SET detail_code='no_policy' WHERE id=1", 1),  # an old row given a code
        ("UPDATE audit SET detail_params='{\"tier\":1}' WHERE id=2", 2),  # ... or parameters
    ],
)
async def test_changing_a_rows_code_or_parameters_breaks_the_chain_at_that_row(
    target: str, statement: str, bad_id: int
) -> None:
    await _upgraded_with_a_coded_row(target)
    lift(target, ["audit_no_update"], statement)

    async with await Store.open(target) as store:
        report = await store.verify_audit()

    assert (report.ok, report.bad_id) == (False, bad_id)
    assert "edited" in report.problem
