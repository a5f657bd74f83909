"""The audit chain's head is anchored outside the store, as Events on the bot's Deployment
(posted with the bot's own token, under deploy/base's RBAC) and as a context line in the
incident thread; `gpunode audit --verify --anchors` catches a rewrite of the whole store that
the chain alone cannot see."""

from __future__ import annotations

import argparse
import asyncio
import io
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.cli import audit as audit_cli
from bot.core.reporting.records import NO_CLUSTER
from bot.kube.gateway import Gateway
from bot.services.anchoring import Anchors
from bot.services.locales import LocaleChooser
from bot.slack.presenter import SlackPresenter
from bot.store import AuditRecord, Store, audit_chain, audit_guard
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.services.fakes import FakeChat

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DEPLOYMENT = "gpunode"


def record(minutes: int) -> AuditRecord:
    return AuditRecord(
        at=T0 + timedelta(minutes=minutes),
        actor="U1",
        action="tier1.execute",
        decision="ok",
        cluster=NO_CLUSTER,
    )


async def _anchored_store(path: str, gw: Gateway, every: int, rows: int) -> Anchors:
    async with await Store.open(path) as store:
        anchors = Anchors(store, gw, None, deployment=DEPLOYMENT, every=every, clock=lambda: T0)
        store.on_audit = anchors.after_append
        for minute in range(rows):
            await store.append_audit(record(minute))
    return anchors


def rewrite_everything(path: str) -> None:
    """What no check inside the file can see: every guard lifted, row 1 changed, every hash
    after it recomputed, the head set to match, the guards put back as shipped."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.row_factory = sqlite3.Row
    for name in audit_guard.SQLITE_TRIGGERS:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE audit SET actor = 'U0SOMEONEELSE' WHERE id = 1")
    prev = audit_chain.GENESIS
    for row in conn.execute("SELECT * FROM audit ORDER BY id").fetchall():
        values = dict(row) | {"prev_hash": prev}
        prev = audit_chain.row_digest(values)
        conn.execute(
            "UPDATE audit SET prev_hash = ?, row_hash = ? WHERE id = ?",
            (values["prev_hash"], prev, row["id"]),
        )
        last = row["id"]
    conn.execute("UPDATE audit_head SET last_id = ?, last_hash = ?", (last, prev))
    for sql in audit_guard.SQLITE_TRIGGERS.values():
        conn.execute(sql)
    conn.close()


def verify(path: str, sim: KubeSim, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    monkeypatch.setenv("GPUNODE_STORE__PATH", path)
    monkeypatch.setenv("GPUNODE_KUBE__NAMESPACE", "gpunode")
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    out = io.StringIO()
    args = argparse.Namespace(
        since=None,
        format="text",
        config=None,
        verify=True,
        anchors=True,
        kubeconfig=None,
        context=None,
        server=sim.url,
        token=BOT_TOKEN,
    )
    code = audit_cli.main(args, out=out)
    return code, out.getvalue()


async def test_every_nth_row_is_anchored_as_an_event_on_the_bots_deployment(
    gateway: tuple[Gateway, KubeSim], tmp_path: Path
) -> None:
    gw, _sim = gateway
    path = str(tmp_path / "gpunode.db")

    await _anchored_store(path, gw, every=2, rows=5)

    async with await Store.open(path) as store:
        hashes = await store.audit_hashes([2, 4])
    assert [(a.row_id, a.row_hash) for a in await gw.audit_anchors(DEPLOYMENT)] == [
        (2, hashes[2]),
        (4, hashes[4]),
    ]


async def test_a_resolve_anchors_the_head_in_the_thread_and_as_an_event(
    gateway: tuple[Gateway, KubeSim], tmp_path: Path
) -> None:
    gw, _sim = gateway
    chat = FakeChat()
    async with await Store.open(str(tmp_path / "gpunode.db")) as store:
        for minute in range(3):
            await store.append_audit(record(minute))
        presenter = SlackPresenter(chat, LocaleChooser(chat))
        anchors = Anchors(store, gw, presenter, deployment=DEPLOYMENT, every=0, clock=lambda: T0)

        head = await anchors.anchor(channel="C0INC", thread_ts="1700000000.000001")

    (posted,) = chat.messages.values()
    assert (posted.thread_ts, posted.blocks[0]["type"]) == ("1700000000.000001", "context")
    assert f"row 3 · sha256 `{head[1]}`" in posted.text
    assert [(a.row_id, a.row_hash) for a in await gw.audit_anchors(DEPLOYMENT)] == [head]


async def test_verify_with_anchors_catches_a_rewrite_of_the_whole_store(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gw, sim = await make_gateway()
    path = str(tmp_path / "gpunode.db")
    await _anchored_store(path, gw, every=2, rows=5)
    before = await asyncio.to_thread(verify, path, sim, monkeypatch)

    rewrite_everything(path)
    after = await asyncio.to_thread(verify, path, sim, monkeypatch)

    assert before == (
        0,
        "audit chain intact: 5 rows verified; signatures not checked (no store.audit_key)\n"
        "anchors: 2 anchored heads match the log\n",
    )
    code, text = after
    assert code == 1
    assert text.startswith("audit chain intact: 5 rows verified")  # the chain alone is fooled
    assert "anchors BROKEN: row 2 has hash" in text
    assert "(the log was rewritten)" in text


async def test_the_every_nth_anchor_is_handed_to_the_background_so_no_append_waits_on_it(
    gateway: tuple[Gateway, KubeSim], tmp_path: Path
) -> None:
    gw, _sim = gateway
    spawned: list[Coroutine[Any, Any, Any]] = []
    async with await Store.open(str(tmp_path / "gpunode.db")) as store:
        anchors = Anchors(
            store,
            gw,
            None,
            deployment=DEPLOYMENT,
            every=2,
            clock=lambda: T0,
            spawn=spawned.append,
        )
        store.on_audit = anchors.after_append
        for minute in range(2):
            await store.append_audit(record(minute))
        posted_before = await gw.audit_anchors(DEPLOYMENT)
        for work in spawned:
            await work
        head = await store.audit_head()

    assert (posted_before, len(spawned)) == ([], 1)
    assert [(a.row_id, a.row_hash) for a in await gw.audit_anchors(DEPLOYMENT)] == [head]
