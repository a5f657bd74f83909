"""``gpunode audit --lang``: a refusal is audited with the code and parameters the clicker was
told, so the audit log words it in the reader's language with the Slack refusal's words: a
role needed, a role scoped to another cluster, a permission no role grants, an action
already done, a plan refused as stale. The details only the audit says are kept as codes too
and worded from them (a plan or approval request named, alerts refused, an approval asked
for or expired, a kit shared), their English unchanged. A row written before codes were kept
shows its English as stored, and the chain still verifies; a changed parameter does not. On
both stores (SQLite, PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.cli.audit import main
from bot.core.governance.policy import parse_policy
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.reporting.outcomes import Refused
from bot.core.reporting.records import NO_CLUSTER
from bot.services import approving
from bot.services.alerts import AlertService, parse_payload
from bot.services.chatops import denied, permitted
from bot.services.prevention import prevent_incident
from bot.store import AuditRecord
from tests.render.test_catalogs import english_words
from tests.services.world import (
    APPROVER,
    CHANNEL,
    MAX_AGE_S,
    NODE,
    REQ,
    TTL_S,
    VIEWER,
    World,
    bot_services,
    make_world,
)
from tests.store.conftest import lift

EU_SRE = "U0EUSRE"
#: responders everywhere; an SRE of prod-eu only; approvers of tier 1; viewers who may only
#: diagnose; no role may resolve
POLICY = {
    "roles": {
        "responder": {"allows": [1, 2, 3], "can_undo": True, "can_diagnose": True},
        "eu_sre": {"allows": [1, 2, 3], "can_diagnose": True, "clusters": ["prod-eu"]},
        "approver": {"can_approve": [1], "can_diagnose": True},
        "viewer": {"can_diagnose": True},
    },
    "bindings": {
        "responder": {"users": [REQ]},
        "eu_sre": {"users": [EU_SRE]},
        "approver": {"users": [APPROVER]},
        "viewer": {"users": [VIEWER]},
    },
}
EDITS: dict[str, Any] = {"memory_limit": "70Gi", "memory_request": "60Gi"}
#: a denial as a gpunode that kept no code stored it
OLD_DENIAL = (
    "you need the responder role for tier 2; ask an admin to add you to it in the policy file"
)


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each store, named to ``gpunode audit`` as the settings name it."""
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    if request.param == "postgres":
        dsn = str(request.getfixturevalue("pg_dsn"))
        monkeypatch.setenv("GPUNODE_STORE__DSN", dsn)
        return dsn
    path = str(tmp_path / "gpunode.db")
    monkeypatch.setenv("GPUNODE_STORE__PATH", path)
    return path


@pytest.fixture
async def world(target: str) -> AsyncIterator[World]:
    """The use-case world on that store, with the policy above."""
    w = await make_world(target)
    w.policy = parse_policy(POLICY)
    w.act = w.service(w.store, replica="replica-a")
    yield w
    await w.bg.drain(timeout_s=30)
    for store in (w.store, *w.extra):
        await store.close()
    assert not w.bg.errors, w.bg.errors


async def _refused_clicks(world: World) -> None:
    """Each kind of refusal with parameters, as people meet them."""
    action_id = await world.request(3, **EDITS)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    # pressed again: the action is already done
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    [incident] = await world.store.open_incidents(node=NODE)
    for user in (VIEWER, EU_SRE):  # a viewer, and an SRE of another cluster, press tier 3
        await world.act.open_confirmation(
            tier=3,
            incident_id=incident.id,
            plan_id="any",
            user=user,
            channel=CHANNEL,
            trigger_id="T1",
        )
    s = bot_services(world)
    # nobody may resolve; an SRE of prod-eu lists incidents here
    assert not await permitted(s, "resolve", user=REQ, channel=CHANNEL, cluster=DEFAULT_CLUSTER)
    assert await denied(s, "view", user=EU_SRE, channel=CHANNEL, cluster=DEFAULT_CLUSTER)
    # a row from before codes were kept
    await world.store.append_audit(
        AuditRecord(
            at=world.clock(),
            actor=VIEWER,
            action="tier2.request",
            channel=CHANNEL,
            tier=2,
            decision="refused",
            detail=OLD_DENIAL,
            cluster=NO_CLUSTER,
        )
    )


def _audit(**asked: object) -> tuple[int, str]:
    out = io.StringIO()
    args = argparse.Namespace(since=None, format="text", config=None, **asked)
    status = main(args, out=out)
    return status, out.getvalue()


CODES = {"action_already", "role_needed", "role_not_in_cluster", "no_role_allows"}


async def test_a_refused_click_reads_in_the_readers_language_from_its_code(
    world: World,
) -> None:
    await _refused_clicks(world)
    records = await world.store.audit_since(None)
    coded = [r for r in records if r.detail_code]
    assert {r.detail_code for r in coded} == CODES
    told = {t.code: t.params for _, _, t in world.thread.said if isinstance(t, Refused)}
    for r in coded:  # the row keeps what the clicker was told
        assert told[r.detail_code] == r.detail_params

    tables: dict[str, list[str]] = {}
    for lang in ("en", "zh-CN", "en-XA"):
        status, text = await asyncio.to_thread(_audit, lang=lang)
        assert status == 0
        tables[lang] = text.splitlines()[1:]
        assert len(tables[lang]) == len(records)
    coded_rows = [i for i, r in enumerate(records) if r.detail_code]

    en = "\n".join(tables["en"][i] for i in coded_rows)
    assert "you need the responder role for tier 3" in en
    assert "this is cluster default and your role does not cover it (eu_sre applies" in en
    assert "no role in the policy file allows resolve in cluster default" in en
    assert "this action is already succeeded" in en
    for lang in ("zh-CN", "en-XA"):
        for i in coded_rows:
            row = tables[lang][i]
            assert english_words(row) == [], (lang, row)
            assert records[i].detail not in row
        [needed] = [i for i in coded_rows if records[i].detail_code == "role_needed"]
        assert "responder" in tables[lang][needed]  # the role's name, as the policy spells it
    [old] = [i for i, r in enumerate(records) if r.detail == OLD_DENIAL]
    assert tables["zh-CN"][old].endswith(OLD_DENIAL), "a row without a code: as stored"


async def test_the_chain_verifies_with_coded_rows_and_names_the_row_whose_parameters_changed(
    world: World, target: str
) -> None:
    await _refused_clicks(world)
    records = await world.store.audit_since(None)
    row = next(r for r in records if r.detail_code == "role_needed")

    status, intact = await asyncio.to_thread(_audit, verify=True, anchors=False, lang="zh-CN")
    assert status == 0
    assert f"{len(records)} " in intact and english_words(intact) == []

    lift(
        target,
        ["audit_no_update"],
        'UPDATE audit SET detail_params=\'{"roles":["viewer"],"tier":3,"what":"tier"}\' '
        f"WHERE id={row.id}",
    )
    status, broken = await asyncio.to_thread(_audit, verify=True, anchors=False, lang="en")
    assert status == 1
    assert f"audit chain BROKEN at row {row.id}: its content does not match its hash" in broken


async def test_a_refusal_naming_a_plan_or_an_approval_request_keeps_the_name_in_every_language(
    world: World,
) -> None:
    await world.diagnosed()
    [incident] = await world.store.open_incidents(node=NODE)
    await world.act.open_confirmation(
        tier=3,
        incident_id=incident.id,
        plan_id="P-older",
        user=REQ,
        channel=CHANNEL,
        trigger_id="T1",
    )
    meta = {"incident": incident.id, "plan_id": "P-forged", "channel": CHANNEL}
    await world.act.validate_submission(meta, {"reason": "forged"} | EDITS, user=REQ)
    await world.act.vote(approval_id="A-unknown", user=APPROVER, channel=CHANNEL, yes=True)
    records = await world.store.audit_since(None)
    named = [i for i, r in enumerate(records) if r.detail_code]
    assert [records[i].detail_code for i in named] == [
        "plan_not_current",
        "plan_not_current",
        "approval_unknown",
    ]

    for lang in ("en", "zh-CN", "en-XA"):
        status, text = await asyncio.to_thread(_audit, lang=lang)
        assert status == 0
        rows = text.splitlines()[1:]
        said = [rows[i] for i in named]
        for row, name in zip(said, ("P-older", "P-forged", "A-unknown"), strict=True):
            assert name in row, (lang, row)
        if lang == "en":
            assert said[1].endswith("plan P-forged is not a current plan of this incident")
            assert said[2].endswith("unknown approval request A-unknown")
        else:
            assert all(english_words(row) == [] for row in said), said
            for i, row in zip(named, said, strict=True):
                assert row.rsplit("  ", 1)[-1] != records[i].detail, (lang, row)


async def _alerts_for(world: World, *nodes: str) -> None:
    """Alertmanager posts one firing alert per node."""
    alerts = AlertService(
        world.diagnose,
        world.store,
        world.chat,
        world.bg,
        channel=CHANNEL,
        clock=world.clock,
        check_nodes=True,
    )
    body = {
        "version": "4",
        "groupKey": "g",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "GpunodeMemoryAvailableLow", "node": node},
                "startsAt": "2026-03-14T09:00:00Z",
                "fingerprint": node,
            }
            for node in nodes
        ],
    }
    await alerts.intake(parse_payload(json.dumps(body).encode()))
    await world.bg.drain()


async def test_an_alert_for_nodes_no_cluster_has_names_them_in_every_language(
    world: World,
) -> None:
    await _alerts_for(world, "gpu-node-99", "gpu-node-98")
    [row] = await world.store.audit_since(None)
    assert (row.detail_code, row.detail_params) == (
        "unknown_nodes",
        {"nodes": ["gpu-node-99", "gpu-node-98"]},
    )

    said = {}
    for lang in ("en", "zh-CN", "en-XA"):
        status, text = await asyncio.to_thread(_audit, lang=lang)
        assert status == 0
        [said[lang]] = text.splitlines()[1:]
    assert said["en"].endswith("no GPU node named gpu-node-99, gpu-node-98")
    for lang in ("zh-CN", "en-XA"):
        assert "gpu-node-99, gpu-node-98" in said[lang]
        assert english_words(said[lang]) == [], said[lang]


async def test_an_alert_whose_node_label_is_refused_reads_its_error_in_every_language(
    world: World,
) -> None:
    await _alerts_for(world, "GPU-Node-01", "gpu_node!")
    records = await world.store.audit_since(None)
    assert [r.detail_code for r in records] == ["alert_label_refused"] * 2
    assert [r.detail_params["node"] for r in records] == ["GPU-Node-01", "gpu_node!"]

    for lang in ("en", "zh-CN", "en-XA"):
        status, text = await asyncio.to_thread(_audit, lang=lang)
        assert status == 0
        rows = text.splitlines()[1:]
        for record, row in zip(records, rows, strict=True):
            assert record.detail_params["node"] in row
            if lang == "en":  # the error's own English, as stored
                assert row.endswith(record.detail), row
            else:
                assert english_words(row) == [], (lang, row)


async def test_an_approval_asked_for_and_expired_and_a_shared_kit_read_from_their_codes(
    world: World,
) -> None:
    action_id = await world.request(1)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)  # tier 1: approval
    world.clock.advance(TTL_S + 1)
    assert await approving.expire_overdue(world.act.deps) == 1
    [incident] = await world.store.open_incidents(node=NODE)
    await prevent_incident(world.store, world.thread, incident.id, user=REQ, now=world.clock())
    records = await world.store.audit_since(None)
    coded = {r.detail_code: i for i, r in enumerate(records) if r.detail_code}
    assert set(coded) == {"approval_quorum", "approval_expired", "kit_shared"}
    assert records[coded["approval_quorum"]].detail_params["quorum"] == 1
    assert records[coded["kit_shared"]].detail_params["files"]

    for lang in ("en", "zh-CN", "en-XA"):
        status, text = await asyncio.to_thread(_audit, lang=lang)
        assert status == 0
        rows = text.splitlines()[1:]
        for i in coded.values():
            if lang == "en":  # the English is the stored sentence, word for word
                assert rows[i].endswith(records[i].detail), rows[i]
            else:
                assert rows[i].rsplit("  ", 1)[-1] != records[i].detail, (lang, rows[i])
                assert english_words(rows[i]) == [], (lang, rows[i])


async def test_a_plan_refused_as_stale_reads_its_reason_from_the_code(world: World) -> None:
    action_id = await world.request(3, **EDITS)
    world.clock.advance(MAX_AGE_S + 60)  # the evidence is too old to act on
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    records = await world.store.audit_since(None)
    [stale] = [i for i, r in enumerate(records) if r.outcome == "stale"]
    assert records[stale].detail_code == "plan_stale"
    assert records[stale].detail_params["reason"] == "evidence_old"

    rows = {}
    for lang in ("en", "zh-CN", "en-XA"):
        status, text = await asyncio.to_thread(_audit, lang=lang)
        assert status == 0
        rows[lang] = text.splitlines()[1:][stale]
    assert "min old" in rows["en"] and "re-diagnose to act on current numbers" in rows["en"]
    for lang in ("zh-CN", "en-XA"):
        assert english_words(rows[lang]) == [], (lang, rows[lang])
