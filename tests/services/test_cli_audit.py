from __future__ import annotations

import argparse
import asyncio
import io
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.cli.audit import main
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.reporting.records import NO_CLUSTER, ActionRecord
from bot.errors import StoreError, UsageError
from bot.store import AuditRecord, Store, audit_guard
from tests.render.test_catalogs import english_words

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _seed(path: str) -> None:
    async def go() -> None:
        async with await Store.open(path) as store:
            for hours, decision in ((10, "allowed"), (3, "denied"), (1, "executed")):
                await store.append_audit(
                    AuditRecord(
                        at=NOW - timedelta(hours=hours),
                        actor="U0SRE00001",
                        action="cordon_evict",
                        tier=1,
                        channel="C0INC",
                        incident_id="INC-0001",
                        decision=decision,
                        outcome="ok" if decision == "executed" else "",
                        changes=[{"verb": "cordon", "name": "gpu-node-01"}],
                        cluster=NO_CLUSTER,
                    )
                )

    asyncio.run(go())


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = str(tmp_path / "audit.db")
    monkeypatch.setenv("GPUNODE_STORE__PATH", path)
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    _seed(path)
    return path


def run(**kwargs: object) -> str:
    out = io.StringIO()
    args = argparse.Namespace(since=None, format="text", config=None)
    for key, value in kwargs.items():
        setattr(args, key, value)
    assert main(args, now=NOW, out=out) == 0
    return out.getvalue()


def test_text_output_is_a_table_of_every_row(db: str) -> None:
    lines = run().splitlines()
    assert lines[0].split()[:4] == ["AT", "ACTOR", "ACTION", "DECISION"]
    assert len(lines) == 4
    assert "cordon_evict (tier 1)" in lines[1] and "allowed" in lines[1]


def test_since_limits_the_rows(db: str) -> None:
    lines = run(since="4h").splitlines()
    assert len(lines) == 3
    assert "denied" in lines[1] and "executed" in lines[2]
    assert "allowed" not in "".join(lines)


def test_json_output_is_one_object_per_line(db: str) -> None:
    rows = [json.loads(line) for line in run(format="json", since="2h").splitlines()]
    assert len(rows) == 1
    assert rows[0]["decision"] == "executed"
    assert rows[0]["changes"] == [{"verb": "cordon", "name": "gpu-node-01"}]


def test_an_empty_period_says_so(db: str) -> None:
    assert run(since="30m").strip() == "no audit records in this period"


def test_a_bad_duration_is_a_usage_error(db: str) -> None:
    with pytest.raises(UsageError, match="30m, 4h, 7d"):
        run(since="yesterday")


def test_a_missing_database_is_a_store_error_not_a_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "nothing.db"
    monkeypatch.setenv("GPUNODE_STORE__PATH", str(path))
    with pytest.raises(StoreError, match="GPUNODE_STORE__PATH"):
        run()
    assert not path.exists()


def test_the_cli_entry_point_prints_the_audit(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main as cli_main

    assert cli_main(["audit", "--format", "json"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_verify_reports_an_intact_chain_and_exits_0(db: str) -> None:
    assert run(verify=True).strip() == (
        "audit chain intact: 3 rows verified; signatures not checked (no store.audit_key)"
    )


def test_verify_reports_in_the_readers_language(db: str) -> None:
    zh = run(verify=True, lang="zh-CN").strip()
    xa = run(verify=True, lang="en-XA").strip()
    assert zh == "审计链完整：已校验 3 行；未校验签名（未设置 store.audit_key）"
    assert "⟦" in xa and english_words(xa) == []


def test_verify_names_the_first_edited_row_and_exits_1(db: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_update")
    conn.execute("UPDATE audit SET actor='U0SOMEONE' WHERE id=2")
    conn.close()
    out = io.StringIO()
    args = argparse.Namespace(since=None, format="text", config=None, verify=True)

    assert main(args, now=NOW, out=out) == 1
    assert "trigger audit_no_update was dropped" in out.getvalue()


def test_verify_from_the_command_line_finds_a_deleted_row(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main as cli_main

    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DROP TRIGGER audit_no_delete")
    conn.execute("DELETE FROM audit WHERE id=2")
    conn.execute(audit_guard.SQLITE_TRIGGERS["audit_no_delete"])  # put back as shipped
    conn.close()

    assert cli_main(["audit", "--verify"]) == 1
    assert "BROKEN at row 3" in capsys.readouterr().out


def test_text_output_escapes_control_characters_and_newlines_in_every_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "forged-lines.db")
    monkeypatch.setenv("GPUNODE_STORE__PATH", path)
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    forged_line = "\n2026-03-01 11:00:00  U0ADMIN  tier3.apply  approved"

    async def go() -> None:
        async with await Store.open(path) as store:
            await store.append_audit(
                AuditRecord(
                    at=NOW,
                    actor="U1\x1b[2J",
                    action="tier1.execute\r",
                    channel="C\tX",
                    incident_id="INC\u2028-1",
                    decision="refused\x07",
                    outcome="x\u202e",
                    detail="reason" + forged_line + "\\n",
                    cluster=NO_CLUSTER,
                )
            )

    asyncio.run(go())

    lines = run().splitlines()

    assert len(lines) == 2  # the header and the one row: no forged line
    row = lines[1]
    assert all(ch.isprintable() for ch in row)
    for escaped in (
        "U1\\x1b[2J",
        "tier1.execute\\r",
        "C\\tX",
        "INC\\u2028-1",
        "refused\\x07",
        "x\\u202e",
        "reason\\n2026-03-01 11:00:00",
        "approved\\\\n",
    ):
        assert escaped in row


def _seed_stale_refusal(path: str) -> None:
    """A tier-1 plan refused as stale, as the action service records it: the audit row keeps
    the English detail, the action keeps the reason's code and values."""

    async def go() -> None:
        async with await Store.open(path) as store:
            at = NOW - timedelta(minutes=5)
            await store.open_or_join_incident(
                "gpu-node-01", "C0INC", opened_by="U0SRE00001", at=at, locale="en"
            )
            await store.create_action(
                ActionRecord(
                    action_id="A-stale",
                    incident_id="INC-0001",
                    tier=1,
                    requester="U0SRE00001",
                    created_at=at,
                    updated_at=at,
                    cluster=DEFAULT_CLUSTER,
                )
            )
            assert await store.claim_action("A-stale", "r1", at=at)
            reason = "the evidence is 12 min old (limit 10 min)"
            assert await store.set_action_state(
                "A-stale",
                "refused",
                at=at,
                result={
                    "reason": reason,
                    "code": "evidence_old",
                    "params": {"age_min": 12, "limit_min": 10},
                },
            )
            await store.append_audit(
                AuditRecord(
                    at=at,
                    actor="U0SRE00001",
                    action="tier1.cordon_evict",
                    tier=1,
                    incident_id="INC-0001",
                    action_id="A-stale",
                    decision="refused",
                    outcome="stale",
                    detail=reason,
                    cluster=DEFAULT_CLUSTER,
                )
            )

    asyncio.run(go())


def test_a_plan_refused_as_stale_is_explained_in_the_readers_language(db: str) -> None:
    """The stale reason is worded from the code and values the action stored; the heads and
    the time are the reader's too, and no English sentence is left in the Chinese table."""
    _seed_stale_refusal(db)

    en = run(since="10m").splitlines()
    zh = run(since="10m", lang="zh-CN").splitlines()
    xa = run(since="10m", lang="en-XA").splitlines()

    assert en[0].split()[:2] == ["AT", "ACTOR"]
    assert "2026-03-01 11:55:00" in en[1]
    assert en[1].endswith("re-diagnose to act on current numbers")
    assert zh[0].split()[:2] == ["时间", "执行者"]
    assert "2026年3月1日" in zh[1] and "证据已有 12 分钟" in zh[1]
    assert english_words("\n".join(zh)) == []
    assert "⟦" in xa[1] and english_words("\n".join(xa)) == []


def test_an_empty_period_says_so_in_the_readers_language(db: str) -> None:
    said = run(since="30m", lang="zh-CN").strip()
    assert said == "这段时间内没有审计记录" and english_words(said) == []
