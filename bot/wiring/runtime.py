"""Wiring: settings + the clusters served (a ``ClusterRegistry``; one cluster is a registry
of one) + a Slack client -> the services and the Bolt app.

Used by ``gpunode serve`` (real Slack and cluster) and by ``gpunode demo`` (stand-ins), so
both run exactly the same code; only the endpoints differ.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings, alerts_enabled
from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.alert_caps import AlertCaps
from bot.core.governance.policy import TIERS, Policy
from bot.core.model.thresholds import Thresholds
from bot.errors import ConfigError
from bot.offloading import WORKER_IDLE_S, Offloader
from bot.prom.history import HistoryService
from bot.render.sentences import sentence
from bot.services.act import ActService
from bot.services.alerts import AlertService
from bot.services.analysing import Analyst
from bot.services.anchoring import AnchorPort, Anchors
from bot.services.background import Background
from bot.services.chatops import BotServices, report_malformed
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.services.leading import LeaderElector, LeaderWork, LeasePort, OnChange
from bot.services.locales import LocaleChooser
from bot.services.operations import IncidentOps
from bot.slack.app import COMMAND, command_listener
from bot.slack.bolt import build_app
from bot.slack.chatting import SlackChat
from bot.slack.edge import Malformed, SlackEdge, SlashCommand
from bot.slack.presenter import DRAW_CHARTS, SlackPresenter
from bot.store.storing import Store
from bot.telemetry.lag import LoopLag
from bot.telemetry.metrics import Metrics
from bot.telemetry.serving import add_metrics_route
from bot.telemetry.wiring import instrument
from bot.wiring.server import build_web_app

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


def verdict_sentence(diagnosis: Diagnosis) -> str:
    """The verdict as the incident's timeline records it: one plain English sentence."""
    v = diagnosis.verdict
    return sentence("verdicts", v.cause, v.params, fmt="text", subject=v.subject, locale="en")


def new_id() -> str:
    """Action and approval ids: 12 hex characters, unguessable (they appear in buttons)."""
    return secrets.token_hex(6)


#: how often pending approvals are checked for expiry; a minute is fine-grained enough for
#: TTLs of several minutes and costs one small query. Runs on the leader only.
APPROVAL_SWEEP_S = 60.0


def alert_caps(settings: Settings) -> AlertCaps:
    a = settings.alerts
    return AlertCaps(
        per_request=a.max_diagnoses_per_request,
        per_node=a.max_diagnoses_per_node,
        per_window=a.max_diagnoses_per_window,
        window_s=a.window_s,
    )


def alert_intake_state(settings: Settings) -> str:
    """``token``, ``open`` (the unauthenticated opt-out, logged loudly) or ``disabled``.

    Raises ConfigError when the intake is on but has no channel to open incidents in."""
    if not alerts_enabled(settings):
        log.info(
            "alert intake disabled: /alertmanager answers 404 until "
            "GPUNODE_HTTP__ALERTMANAGER_TOKEN is set"
        )
        return "disabled"
    if not settings.slack.incident_channel.strip():
        raise ConfigError(
            "the alert intake is enabled but GPUNODE_SLACK__INCIDENT_CHANNEL is empty: set it "
            "to the channel ID (C...) where alert incidents open, and invite the bot there"
        )
    if settings.http.alertmanager_token is not None:
        return "token"
    log.warning(
        "ALERT INTAKE IS OPEN WITHOUT A TOKEN (alerts.allow_unauthenticated=true): anyone who "
        "reaches /alertmanager can open incidents and start diagnostic Jobs. Set "
        "GPUNODE_HTTP__ALERTMANAGER_TOKEN instead unless a proxy authenticates every request"
    )
    return "open"


def _edge(app: AsyncApp, services: BotServices, secret: str | None) -> SlackEdge:
    if not secret:
        raise ConfigError("GPUNODE_SLACK__SIGNING_SECRET is required in HTTP mode")

    def on_malformed(m: Malformed) -> None:
        report = report_malformed(
            services, kind=f"slack.{m.kind}", user=m.user, channel=m.channel, problem=m.problem
        )
        services.bg.spawn(report, name="malformed")

    command = SlashCommand(COMMAND, command_listener(services))
    return SlackEdge(app, signing_secret=secret, on_malformed=on_malformed, command=command)


@dataclass
class Runtime:
    app: AsyncApp
    web_app: web.Application
    services: BotServices
    store: Store
    chat: SlackChat
    #: this bot's metrics (``/metrics``); the leader election reports to ``set_leader``
    metrics: Metrics = field(default_factory=Metrics)

    leader: LeaderWork | None = None
    #: samples the event loop's lag into ``gpunode_event_loop_lag_seconds``
    lag: LoopLag | None = None

    async def close(self) -> None:
        if self.lag is not None:
            await self.lag.stop()
        if self.leader is not None:
            await self.leader.stop()  # no leader work may start on a store about to close
        await self.services.bg.drain(timeout_s=30)
        await self.services.diagnose.close()
        await self.store.close()
        # off the loop: a gateway's close waits for its threads' calls in flight (each within
        # the request timeout), and the loop keeps serving meanwhile
        await asyncio.to_thread(self.services.diagnose.clusters.close)
        close = getattr(self.chat.client, "close", None)
        if close is not None:
            await close()  # its shared HTTP session (bot.slack.chatting.ObservedWebClient)


def check_policy_clusters(policy: Policy, clusters: ClusterRegistry) -> None:
    """Every cluster a role is scoped to is one the settings list (a typo would silently
    give the role nothing)."""
    for name, role in sorted(policy.roles.items()):
        unknown = [c for c in role.clusters if c not in clusters.names]
        if unknown:
            raise ConfigError(
                f"the policy's role {name} is scoped to cluster {', '.join(unknown)}, which the "
                f"settings do not list (clusters: {', '.join(sorted(clusters.names))}); fix "
                "the role's clusters or add the cluster to the settings"
            )
    # a tier someone may request in a cluster where nobody may approve it would wait forever
    for tier in TIERS:
        if not policy.quorum(tier):
            continue
        for cluster in clusters.names:
            roles = [r for r in policy.roles.values() if r.applies_in(cluster)]
            if any(tier in r.allows for r in roles) and not any(
                tier in r.can_approve for r in roles
            ):
                raise ConfigError(
                    f"tier {tier} needs approval, and may be requested in cluster {cluster}, "
                    f"but no role may approve it there; give an approver role cluster "
                    f"{cluster} (or no clusters), or set approvals.{tier}.quorum to 0"
                )


#: what each new analysis worker is sent first: ``render_pngs`` of no charts, which imports
#: matplotlib there (a diagnosis's worker, started as its Job starts, imports it meanwhile)
IMPORT_CHARTS = functools.partial(DRAW_CHARTS, {}, "en")


def analysis_offloader() -> Offloader:
    """The worker process a long-running bot analyses and draws charts in (issue #25: not on
    its event loop's interpreter), as ``build_runtime`` wires it: each diagnosis holds it
    (``Analyst.held``) from its Job's start to its chart, and it ends when none holds it
    (``WORKER_IDLE_S`` after a call made outside a diagnosis): matplotlib's memory is the
    bot's only while it draws (#25's 300 MiB for the bot's processes at 5,000 nodes)."""
    return Offloader(process=True, name="analysis", idle_s=WORKER_IDLE_S, prime=IMPORT_CHARTS)


async def build_runtime(
    settings: Settings,
    *,
    clusters: ClusterRegistry,
    client: AsyncWebClient,
    policy: Policy,
    thresholds: Thresholds,
    clock: Callable[[], datetime] = utc_now,
    replica_id: str | None = None,
    metrics: Metrics | None = None,
    leases: LeasePort | None = None,
    on_leader: OnChange | None = None,
    offload: Offloader | None = None,
) -> Runtime:
    """``leases``: the Lease to elect the background-work leader with (``settings.leader``;
    None: this replica always leads). ``on_leader(holder, me)``: told of leadership changes.
    ``offload``: the analysis worker to use instead of the runtime's own
    (``analysis_offloader``, ended with the runtime): one given is its giver's to close
    (``gpunode_sandbox.demo.share_analysis_worker``: the test suite's demos share one).
    ``metrics``: a fresh ``Metrics`` unless given (its registry is this runtime's alone); the
    Slack client, the gateway and the store report to it when they can
    (``bot.telemetry.wiring.instrument``), and so does the leader election."""
    check_policy_clusters(policy, clusters)
    metrics = metrics or Metrics()
    replica_id = replica_id or settings.leader.identity or f"replica-{secrets.token_hex(4)}"
    store = await Store.open(settings.store.target)  # a SQLite path's folder is created
    store.export_audit = settings.store.audit_to_log
    store.audit_key = settings.store.audit_key_bytes
    # incidents and actions recorded before clusters existed belong to the default cluster
    await store.adopt_unclustered(clusters.default)
    chat = SlackChat(
        client,
        cache_ttl_s=settings.actions.usergroup_cache_ttl_s,
        locale_ttl_s=settings.slack.user_locale_cache_ttl_s,
    )
    # every cluster's Kubernetes calls are counted, each port as it is first built
    instrument(metrics, store=store, client=client, kube=clusters, replica_id=replica_id)
    bg = Background()
    # one set of language rules: the services keep a new thread's locale, the presenter
    # words every outcome in its reader's language
    locales = LocaleChooser(chat, channel_locales=settings.slack.channel_locales)
    # a long-running bot analyses and draws charts beside its event loop, in a worker
    # process, not on its interpreter (#25); closed with the diagnose service
    owned = offload is None
    offload = offload or analysis_offloader()
    presenter = SlackPresenter(chat, locales, offload=offload)
    diagnose = DiagnoseService(
        clusters,
        store,
        chat,
        thread=presenter,
        charts=presenter,
        clock=clock,
        thresholds=thresholds,
        history=HistoryService.from_settings(settings.prometheus),
        locales=locales,
        metrics=metrics,
        dashboard_url=settings.links.dashboard_url,
        verdict_words=verdict_sentence,
        analyst=Analyst(offload=offload, close_offload=owned),
    )
    act = ActService(
        clusters,
        store,
        chat,
        diagnose,
        bg,
        policy=policy,
        thread=presenter,
        clock=clock,
        new_id=new_id,
        replica_id=replica_id,
        evidence_max_age_s=settings.actions.evidence_max_age_s,
        approval_ttl_s=settings.actions.approval_ttl_s,
        watch_timeout_s=settings.actions.watch_timeout_s,
        watch_interval_s=settings.actions.watch_interval_s,
        metrics=metrics,
    )
    home = clusters.default_port()  # the cluster the bot's Deployment runs in
    anchors = Anchors(
        store,
        home if isinstance(home, AnchorPort) else None,
        presenter,
        deployment=settings.store.anchor_deployment,
        every=settings.store.anchor_every,
        clock=clock,
        spawn=lambda work: bg.spawn(work, name="audit-anchor"),
    )
    store.on_audit = anchors.after_append
    services = BotServices(
        clusters=clusters,
        store=store,
        chat=chat,
        diagnose=diagnose,
        ops=IncidentOps(store, clock=clock, clusters=clusters),
        bg=bg,
        clock=clock,
        channels=frozenset(policy.channels),
        act=act,
        metrics=metrics,
        anchors=anchors,
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
    alerts = (
        AlertService(
            diagnose,
            store,
            chat,
            bg,
            channel=settings.slack.incident_channel,
            clock=clock,
            check_nodes=True,
            caps=alert_caps(settings),
            cluster_label=settings.alerts.cluster_label,
        )
        if alert_intake_state(settings) != "disabled"
        else None
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
        _edge(app, services, secret) if not settings.slack.socket_mode else None,
        alerts=alerts,
        alert_token=token.get_secret_value() if token else None,
        ready=ready,
    )
    if settings.metrics.enabled and settings.metrics.port is None:
        add_metrics_route(web_app, metrics)  # else serve starts a listener of its own

    def leadership(holder: str | None, me: bool) -> None:
        metrics.set_leader(holder, me)
        if on_leader is not None:
            on_leader(holder, me)

    if leases is not None:
        metrics.set_leader(None, False)  # until the election says otherwise
    leader = leader_work(settings, store, act, leases=leases, clock=clock, on_change=leadership)
    await leader.start()
    web_app.cleanup_ctx.append(leader.context())
    lag = LoopLag(metrics.event_loop_lag)
    lag.start()
    return Runtime(
        app=app,
        web_app=web_app,
        services=services,
        store=store,
        chat=chat,
        leader=leader,
        metrics=metrics,
        lag=lag,
    )


def leader_work(
    settings: Settings,
    store: Store,
    act: ActService,
    *,
    leases: LeasePort | None,
    clock: Callable[[], datetime],
    on_change: OnChange | None,
) -> LeaderWork:
    """The background work of this replica, led by ``leases`` when given (bot/services/
    leading.py)."""
    lead = settings.leader
    elector = (
        LeaderElector(
            leases,
            identity=act.deps.config.replica_id,
            duration_s=lead.lease_duration_s,
            renew_deadline_s=lead.renew_deadline_s,
            clock=clock,
            on_change=on_change,
        )
        if leases is not None
        else None
    )
    return LeaderWork(
        store=store,
        actions=act,
        replica_id=act.deps.config.replica_id,
        clock=clock,
        elector=elector,
        retry_s=lead.retry_s,
        approval_sweep_s=APPROVAL_SWEEP_S,
        reconcile_s=lead.reconcile_s,
        orphan_after_s=float(lead.lease_duration_s),
        on_change=on_change,
        evidence_keep=(
            timedelta(days=settings.store.evidence_days) if settings.store.evidence_days else None
        ),
    )
