"""``run``: ``gpunode serve`` once its settings are checked and its policy and thresholds read.

Apart from ``bot.wiring.serve`` (the command's entry point), which imports this module only
then: a start it refuses (a missing setting, a token of the wrong kind, a policy or
thresholds file it cannot read) is worded without importing what serving needs first
(aiohttp, the Slack and Kubernetes SDKs, the runtime and its services: 1.0 s of CPU of the
1.35 s such a refusal took, measured).
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import signal
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TypeVar

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError

from bot.config import Settings
from bot.core.governance.policy import Policy
from bot.core.model.thresholds import Thresholds
from bot.errors import ConfigError, SlackError
from bot.render.checkup import log_line
from bot.services import doctor
from bot.services.leading import LeasePort
from bot.slack.chatting import make_client
from bot.store.checkup import check_store
from bot.telemetry.serving import listening_port, start_metrics_listener
from bot.wiring.runtime import Runtime, build_runtime
from bot.wiring.warming import warm_up

log = logging.getLogger("gpunode")
T = TypeVar("T")


async def start_socket_mode(runtime: Runtime, app_token: str) -> AsyncSocketModeHandler:
    """Connect the bot to Slack over Socket Mode; the caller closes the handler.

    ``apps.connections.open`` goes through the app's own Web API client (its ``base_url``, so
    the Slack stand-in works too). It is called once here, before connecting, so a refused
    app token fails fast with SlackError instead of the SDK's endless reconnect loop.
    """
    handler = AsyncSocketModeHandler(runtime.app, app_token)
    try:
        handler.client.wss_uri = await handler.client.issue_new_wss_url()
    except SlackApiError as exc:
        await handler.close_async()  # type: ignore[no-untyped-call]
        error = exc.response.get("error", "unknown")
        raise SlackError(
            f"Slack refused the app-level token for Socket Mode ({error}): set "
            "GPUNODE_SLACK__APP_TOKEN to an xapp- token with the connections:write scope",
            key="app_token_refused",
            params={"error": error},
        ) from exc
    await handler.connect_async()  # type: ignore[no-untyped-call]
    return handler


async def run(settings: Settings, *, policy: Policy, thresholds: Thresholds) -> None:
    """The bot, served until SIGTERM or SIGINT: ``settings`` checked and ``policy`` and
    ``thresholds`` read by ``bot.wiring.serve.main``."""
    from bot.kube.gateway import Gateway
    from bot.services.clusters import ClusterRegistry

    kube = ClusterRegistry.from_settings(
        settings, build=functools.partial(Gateway.from_settings, informers=True)
    )
    assert settings.slack.bot_token is not None  # checked by check_settings
    client = make_client(
        settings.slack.bot_token.get_secret_value(),
        base_url=settings.slack.api_base_url,
        share_session=True,  # closed by runtime.close()
    )
    # gpunode doctor's checks, logged; a store shared with a live replica without a Lease
    # refuses to start (each would mark the other's running actions interrupted)
    await doctor.at_start(
        kube.default_port(),
        namespace=settings.kube.namespace,
        lease_name=settings.leader.lease_name,
        collector_mode=settings.kube.collector_mode,
        store_rows=lambda: check_store(settings, clock=lambda: datetime.now(UTC), starting=True),
        logger=log,
        describe=log_line,  # English: the log is the operators'
    )
    runtime = await build_runtime(
        settings,
        clusters=kube,
        client=client,
        policy=policy,
        thresholds=thresholds,
        leases=lease_api(settings, kube.default_port()),  # in the default cluster
    )
    runner: web.AppRunner | None = None
    metrics_runner: web.AppRunner | None = None
    handler = None
    stop = asyncio.Event()
    # SIGTERM (a rolling update, a node drain) or SIGINT (Ctrl-C): stop taking work, let the
    # work in flight finish (Runtime.close drains it), give the leader Lease up, then exit.
    # Installed explicitly: a process started in the background by a non-interactive shell
    # inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    try:  # from here on, a failure (a port taken) still closes what was started
        # the worker started (matplotlib imported there), the templates compiled, the heap
        # settled: before taking traffic, not inside the first incident's diagnosis
        await warm_up(runtime)
        # the default cluster's pods and nodes listed now, then watched: the first `top` (and
        # the first gang plan) reads memory, not a list of every pod while someone waits
        kube.prime_default()
        runner = web.AppRunner(runtime.web_app)
        await runner.setup()
        http = settings.http
        site = web.TCPSite(runner, http.host, http.port)
        await listen(site.start(), http.host, http.port, setting="GPUNODE_HTTP__PORT")
        log.info(
            "listening on %s:%s (%s mode)",
            http.host,
            listening_port(runner),  # http.port, or the one picked for 0
            "socket" if settings.slack.socket_mode else "http",
        )
        metrics = settings.metrics
        if metrics.enabled and metrics.port is not None:
            metrics_runner = await listen(
                start_metrics_listener(runtime.metrics, host=metrics.host, port=metrics.port),
                metrics.host,
                metrics.port,
                setting="GPUNODE_METRICS__PORT",
            )
            log.info("metrics on %s:%s/metrics", metrics.host, listening_port(metrics_runner))
        if settings.slack.socket_mode:
            assert settings.slack.app_token is not None  # checked by check_settings
            token = settings.slack.app_token.get_secret_value()
            handler = await start_socket_mode(runtime, token)
        await stop.wait()
        log.info("stop signal: finishing the work in flight, then stopping")
    finally:
        if handler is not None:
            await handler.close_async()  # type: ignore[no-untyped-call]
        if metrics_runner is not None:
            await metrics_runner.cleanup()
        if runner is not None:
            await runner.cleanup()
        await runtime.close()


async def listen(start: Awaitable[T], host: str, port: int, *, setting: str) -> T:
    """``start`` (a listener's start), or, when the address cannot be bound (the port taken,
    a privileged port, an address not on this machine), a ``ConfigError`` naming the address,
    the system's reason and the setting to change: not a traceback."""
    try:
        return await start
    except OSError as exc:
        code = errno.errorcode.get(exc.errno or 0, "") or type(exc).__name__
        address = f"{host}:{port}"
        raise ConfigError(
            f"cannot listen on {address} ({code}): stop what holds that port, or set "
            f"{setting} to a free one (0: any free port)",
            key="listen_refused",
            params={"address": address, "code": code, "setting": setting},
        ) from exc


def lease_api(settings: Settings, kube: object) -> LeasePort | None:
    """The leader-election Lease of ``settings.leader`` on the bot's own API client."""
    lead = settings.leader
    if not lead.lease_name:
        return None
    from bot.kube.gateway import Gateway
    from bot.kube.leasing import LeaseApi

    assert isinstance(kube, Gateway)
    return LeaseApi(
        kube.transport.api_client,
        namespace=lead.lease_namespace or settings.kube.namespace,
        name=lead.lease_name,
    )
