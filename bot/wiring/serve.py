"""``gpunode serve``: the bot against a real Slack workspace and a real cluster.

Fails fast, before opening any port, on a missing or malformed setting, naming the variable
to set. Secrets are never printed: only which ones are present.
"""

from __future__ import annotations

import argparse
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

from bot.config import Settings, alerts_enabled, load_settings
from bot.config.policy import read_policy
from bot.config.thresholds import read_thresholds
from bot.core.governance.policy import Policy, parse_policy
from bot.errors import ConfigError, SlackError
from bot.logs import configure_logging
from bot.render.checkup import log_line
from bot.services import doctor
from bot.services.leading import LeasePort
from bot.slack.chatting import make_client
from bot.store.checkup import check_store
from bot.telemetry.serving import listening_port, start_metrics_listener
from bot.wiring.heap import tune_malloc
from bot.wiring.runtime import Runtime, build_runtime
from bot.wiring.warming import warm_up

log = logging.getLogger("gpunode")
T = TypeVar("T")


#: each setting ``serve`` may miss, and how its English error names it
MISSING_SETTINGS = {
    "bot_token": "GPUNODE_SLACK__BOT_TOKEN (xoxb-...)",
    "app_token": "GPUNODE_SLACK__APP_TOKEN (xapp-..., Socket Mode)",
    "signing_secret": "GPUNODE_SLACK__SIGNING_SECRET (HTTP mode)",
    "incident_channel": (
        "GPUNODE_SLACK__INCIDENT_CHANNEL (channel ID for alert incidents; the alert "
        "intake is enabled)"
    ),
}


def check_settings(settings: Settings) -> None:
    """Raise ConfigError listing every missing setting for the chosen mode (keyed
    ``settings_missing`` with their codes, ``MISSING_SETTINGS``), or naming a token of the
    wrong kind (``bot_token_kind``, ``app_token_kind``): ``serve --lang`` words them."""
    missing = []
    s = settings.slack
    if s.bot_token is None:
        missing.append("bot_token")
    if s.socket_mode and s.app_token is None:
        missing.append("app_token")
    if not s.socket_mode and s.signing_secret is None:
        missing.append("signing_secret")
    if alerts_enabled(settings) and not s.incident_channel.strip():
        missing.append("incident_channel")
    if missing:
        raise ConfigError(
            "missing settings: " + ", ".join(MISSING_SETTINGS[m] for m in missing),
            key="settings_missing",
            params={"missing": missing},
        )
    token = s.bot_token.get_secret_value() if s.bot_token else ""
    if not token.startswith("xoxb-"):
        raise ConfigError(
            "GPUNODE_SLACK__BOT_TOKEN must be a bot token starting with xoxb-",
            key="bot_token_kind",
        )
    if s.socket_mode and s.app_token and not s.app_token.get_secret_value().startswith("xapp-"):
        raise ConfigError(
            "GPUNODE_SLACK__APP_TOKEN must be an app-level token starting with xapp-",
            key="app_token_kind",
        )


def load_policy(settings: Settings) -> Policy:
    """The policy file's policy; without one, a policy with no roles (every action denied).
    Its tier 1 asks no approval: the default quorum of 1 needs a role that approves, and a
    policy with no roles has none (it would be refused as invalid)."""
    if settings.actions.policy_file:
        return read_policy(settings.actions.policy_file)
    log.warning("no policy file (GPUNODE_ACTIONS__POLICY_FILE): every action is denied")
    return parse_policy({"approvals": {1: {"quorum": 0}}})


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


async def _serve(settings: Settings) -> None:
    from bot.kube.gateway import Gateway
    from bot.services.clusters import ClusterRegistry

    policy = load_policy(settings)
    thresholds = read_thresholds(settings)
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


def main(args: argparse.Namespace) -> int:
    tune_malloc()  # before any thread allocates (bot/wiring/heap.py)
    settings = load_settings(config_file=getattr(args, "config", None))
    configure_logging(settings.log_level)
    check_settings(settings)
    present = [
        k
        for k in ("bot_token", "signing_secret", "app_token")
        if getattr(settings.slack, k) is not None
    ]
    log.info("starting gpunode serve; Slack secrets present: %s", ", ".join(present))
    try:
        asyncio.run(_serve(settings))
    except KeyboardInterrupt:
        return 130
    return 0
