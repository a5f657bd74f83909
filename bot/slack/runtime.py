"""Wiring: settings + a KubePort + a Slack client -> the services and the Bolt app.

Used by ``gpunode serve`` (real Slack and cluster) and by ``gpunode demo`` (stand-ins), so
both run exactly the same code; only the endpoints differ.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.core.policy import Policy
from bot.core.thresholds import Thresholds
from bot.services.act import ActService
from bot.services.alerts import AlertService
from bot.services.background import Background
from bot.services.diagnose import DiagnoseService
from bot.services.operations import IncidentOps
from bot.services.ports import KubePort
from bot.slack.app import BotServices, build_app
from bot.slack.chatting import SlackChat
from bot.slack.server import build_web_app
from bot.store.storing import Store

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """Action and approval ids: 12 hex characters, unguessable (they appear in buttons)."""
    return secrets.token_hex(6)


#: how often pending approvals are checked for expiry; a minute is fine-grained enough for
#: TTLs of several minutes and costs one small query.
APPROVAL_SWEEP_S = 60.0


def _approval_sweeper(
    act: ActService, *, interval_s: float
) -> Callable[[web.Application], AsyncIterator[None]]:
    """An aiohttp cleanup context: expires unanswered approvals while the server runs."""

    async def sweep_forever() -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await act.expire_overdue()
            except Exception:
                log.exception("approval expiry sweep failed")

    async def ctx(_: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(sweep_forever(), name="approval-sweeper")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    return ctx


@dataclass
class Runtime:
    app: AsyncApp
    web_app: web.Application
    services: BotServices
    store: Store
    chat: SlackChat

    async def close(self) -> None:
        await self.services.bg.drain(timeout_s=30)
        await self.store.close()


async def build_runtime(
    settings: Settings,
    *,
    kube: KubePort,
    client: AsyncWebClient,
    policy: Policy,
    thresholds: Thresholds,
    clock: Callable[[], datetime] = utc_now,
    replica_id: str | None = None,
) -> Runtime:
    if settings.store.path != ":memory:":
        Path(settings.store.path).parent.mkdir(parents=True, exist_ok=True)
    store = await Store.open(settings.store.path)
    chat = SlackChat(client, cache_ttl_s=settings.actions.usergroup_cache_ttl_s)
    bg = Background()
    diagnose = DiagnoseService(kube, store, chat, clock=clock, thresholds=thresholds)
    act = ActService(
        kube,
        store,
        chat,
        diagnose,
        bg,
        policy=policy,
        clock=clock,
        new_id=new_id,
        replica_id=replica_id or f"replica-{secrets.token_hex(4)}",
        evidence_max_age_s=settings.actions.evidence_max_age_s,
        approval_ttl_s=settings.actions.approval_ttl_s,
        watch_timeout_s=settings.actions.watch_timeout_s,
        watch_interval_s=settings.actions.watch_interval_s,
    )
    services = BotServices(
        kube=kube,
        store=store,
        chat=chat,
        diagnose=diagnose,
        ops=IncidentOps(store, clock=clock),
        bg=bg,
        clock=clock,
        channels=frozenset(policy.channels),
        act=act,
    )
    secret = (
        settings.slack.signing_secret.get_secret_value() if settings.slack.signing_secret else None
    )
    app = build_app(
        client=client,
        signing_secret=secret,
        services=services,
        socket_mode=settings.slack.socket_mode,
    )
    alerts = AlertService(
        diagnose, store, chat, bg, channel=settings.slack.incident_channel, clock=clock
    )
    token = settings.http.alertmanager_token
    ready_state = {"ok": False}

    async def ready() -> bool:
        if not ready_state["ok"]:
            try:
                await client.auth_test()
                ready_state["ok"] = True
            except Exception:
                return False
        return True

    web_app = build_web_app(
        app,
        alerts=alerts,
        alert_token=token.get_secret_value() if token else None,
        ready=ready,
        slack_events=not settings.slack.socket_mode,
    )
    web_app.cleanup_ctx.append(_approval_sweeper(act, interval_s=APPROVAL_SWEEP_S))
    await act.reconcile_interrupted()
    return Runtime(app=app, web_app=web_app, services=services, store=store, chat=chat)
