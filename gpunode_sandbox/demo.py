"""``gpunode demo``: the whole product on loopback, no Slack workspace and no cluster.

One process runs the Kubernetes stand-in (a scenario, ``seed`` by default), the Slack
stand-in with its browser console, and the real bot wired to both exactly as ``serve`` wires
it to the real services. ``--script`` runs the demo story headless and prints the thread.
With ``socket_mode=True`` the bot connects to the Slack stand-in over Socket Mode (an xapp-
token, ``apps.connections.open``, a WebSocket) through the same ``start_socket_mode`` that
``serve`` uses, and has no signing secret: nothing is posted to its ``/slack/events``.

Two clusters (``gpunode demo`` by default; ``second=`` here): a second Kubernetes stand-in
runs another scenario, and the bot serves both, named ``prod-eu`` (the first, the default
cluster) and ``prod-us``, through ``clusters:`` settings exactly as ``serve`` reads them.
The two-cluster policy adds Erin, an SRE of prod-eu only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import yaml
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.config import (
    ActionSettings,
    AlertSettings,
    ClusterSettings,
    HttpSettings,
    KubeSettings,
    Settings,
    SlackSettings,
    StoreSettings,
)
from bot.config.policy import read_policy
from bot.core.model.thresholds import Thresholds
from bot.errors import ConfigError
from bot.render.environment import compile_views
from bot.services.clusters import ClusterRegistry
from bot.slack.chatting import make_client
from bot.store.engines import demo_settings_path, demo_store_path
from bot.wiring.running import start_socket_mode
from bot.wiring.runtime import Runtime, build_runtime
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN as KUBE_BOT_TOKEN
from gpunode_sandbox.kubesim.scenarios import ScenarioError
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.story import CHANNEL, run_story
from gpunode_sandbox.story_clusters import run_clusters_story, transcript

if TYPE_CHECKING:
    from bot.kube.gateway import Gateway
    from bot.offloading import Offloader

SIGNING_SECRET = "demo-signing-secret"
BOT_TOKEN = "xoxb-demo"
APP_TOKEN = "xapp-1-A0GPUNODE-demo"
POLICY = Path(__file__).with_name("demo_policy.yaml")
CLUSTERS_POLICY = Path(__file__).with_name("demo_policy_clusters.yaml")
NAMESPACE = "gpunode"
#: the demo's two clusters: the first stand-in (default cluster) and the second
FIRST, SECOND = "prod-eu", "prod-us"
#: Erin: an SRE of prod-eu only (in the two-cluster policy)
ERIN = ("U0ERIN", "erin", "Erin Sato", "SRE, prod-eu only")


@dataclass
class Demo:
    kube: KubeSim
    slack: SlackSim
    runtime: Runtime
    bot_url: str
    console_url: str
    socket: AsyncSocketModeHandler | None = None
    #: every cluster's stand-in by name (one cluster: ``{"default": kube}``)
    kubes: dict[str, KubeSim] | None = None

    async def drain(self) -> None:
        await self.runtime.services.bg.drain(timeout_s=120)


def _gateway(url: str) -> Gateway:
    """The bot's gateway with the bot's ServiceAccount token: the stand-in enforces the RBAC
    and admission policies of deploy/base, so the demo has exactly the deployed rights."""
    from bot.config import KubeSettings
    from bot.kube.gateway import Gateway

    return Gateway.from_settings(
        KubeSettings(
            mode="server", server=url, token=KUBE_BOT_TOKEN, verify_tls=False, namespace=NAMESPACE
        )
    )


@contextlib.asynccontextmanager
async def running_standins(
    scenario: str = "seed",
    *,
    console_port: int = 0,
    socket_mode: bool = False,
    access_dir: Path | None = None,
) -> AsyncIterator[tuple[KubeSim, SlackSim]]:
    """The Kubernetes and Slack stand-ins on loopback (the console is the Slack one's).
    ``access_dir``: the kustomization whose RBAC and admission policies the cluster has
    (deploy/base by default; e.g. deploy/overlays/impersonation)."""
    # deploy/base installs the gpunode namespace, RBAC and admission policies; the bot sends
    # its ServiceAccount token, kubectl (no token over HTTP) is the insecure port's superuser
    kube = KubeSim(
        load_scenario(scenario),
        insecure_superuser=True,
        clock_from_start=True,
        access_dir=access_dir,
    )
    await kube.start()
    slack = SlackSim(signing_secret=SIGNING_SECRET, bot_token=BOT_TOKEN, socket_mode=socket_mode)
    try:
        await slack.start(port=console_port)
        try:
            yield kube, slack
        finally:
            await slack.stop()
    finally:
        await kube.stop()


def demo_clusters(urls: dict[str, str]) -> dict[str, ClusterSettings]:
    """``clusters:`` settings for stand-ins by name: URL + the bot's ServiceAccount token;
    every other setting the product's default (its request timeout too: the stand-ins share
    the bot's event loop, so on a loaded machine they answer later than a real server)."""
    return {
        name: ClusterSettings(mode="server", server=url, token=KUBE_BOT_TOKEN, verify_tls=False)
        for name, url in urls.items()
    }


@contextlib.asynccontextmanager
async def running_bot(
    *,
    kube_url: str,
    slack_api_url: str,
    store_path: str | None = None,
    alert_token: str | None = None,
    socket_mode: bool = False,
    app_token: str = APP_TOKEN,
    alerts: AlertSettings | None = None,
    incident_channel: str = CHANNEL,
    clusters: dict[str, str] | None = None,
    channel_locales: dict[str, str] | None = None,
    policy_file: Path | None = None,
    offload: Offloader | None = None,
) -> AsyncIterator[tuple[Runtime, str, AsyncSocketModeHandler | None]]:
    """The real bot, wired to the given endpoints exactly as ``serve`` wires it.

    ``clusters``: name -> API URL of several clusters (the first is the default); without
    it the one cluster at ``kube_url``. ``offload``: an analysis worker the bot uses instead
    of its own (``build_runtime``'s), left running when the bot stops. Yields (runtime,
    bot_url, socket-mode handler or None)."""
    from bot.kube.gateway import Gateway

    tmp = tempfile.TemporaryDirectory(prefix="gpunode-demo-")
    policy = policy_file or (CLUSTERS_POLICY if clusters else POLICY)
    settings = Settings(
        slack=SlackSettings(
            signing_secret=None if socket_mode else SIGNING_SECRET,
            bot_token=BOT_TOKEN,
            app_token=app_token if socket_mode else None,
            socket_mode=socket_mode,
            api_base_url=slack_api_url,
            incident_channel=incident_channel,
            channel_locales=channel_locales or {},
        ),
        store=StoreSettings(path=store_path or str(Path(tmp.name) / "gpunode.db")),
        # the stand-in rolls out within a second: a short watch keeps the demo snappy
        actions=ActionSettings(policy_file=str(policy), watch_timeout_s=15, watch_interval_s=0.2),
        http=HttpSettings(alertmanager_token=alert_token),
        alerts=alerts or AlertSettings(),
        kube=KubeSettings(namespace=NAMESPACE),
        clusters=demo_clusters(clusters or {}),
    )
    served = (
        ClusterRegistry.from_settings(settings, build=Gateway.from_settings)
        if clusters
        else ClusterRegistry.single(_gateway(kube_url))
    )
    runtime = await build_runtime(
        settings,
        clusters=served,
        client=make_client(BOT_TOKEN, base_url=slack_api_url),
        policy=read_policy(policy),
        thresholds=Thresholds(),
        offload=offload,
    )
    # serve's warm-up compiles every template before traffic (bot.wiring.warming): without
    # it a first click compiled its modal's templates before views.open, 0.3 s idle and past
    # Slack's 3 s trigger_id lifetime under load. Compiled once a process (the environments
    # are cached); the warm-up's worker start and matplotlib import stay with first use here,
    # since every demo would pay them again.
    await asyncio.to_thread(compile_views)
    runner = web.AppRunner(runtime.web_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    handler = None
    try:
        if socket_mode:
            handler = await start_socket_mode(runtime, app_token)
        yield runtime, f"http://127.0.0.1:{port}", handler
    finally:
        if handler is not None:
            await handler.close_async()  # type: ignore[no-untyped-call]
        await runtime.close()
        await runner.cleanup()
        tmp.cleanup()


#: the analysis worker every demo of this process uses, if set (``share_analysis_worker``)
_shared_analysis: Offloader | None = None


def share_analysis_worker(offload: Offloader | None) -> Offloader | None:
    """Have every later demo of this process (``running_demo``) analyse and chart in
    ``offload``, kept across demos and closed by the caller, instead of a worker of its own
    started for each diagnosis (None: each its own again, as ``serve`` does). The test suite
    sets one per test process: its demos' diagnoses then import matplotlib once, not each in
    a new worker (about 1 s of CPU each, most of its end-to-end tests' own work). Returns
    the one it replaces."""
    global _shared_analysis
    before, _shared_analysis = _shared_analysis, offload
    return before


@contextlib.asynccontextmanager
async def running_demo(
    scenario: str = "seed",
    *,
    console_port: int = 0,
    store_path: str | None = None,
    alert_token: str | None = None,
    socket_mode: bool = False,
    app_token: str = APP_TOKEN,
    alerts: AlertSettings | None = None,
    incident_channel: str = CHANNEL,
    second: str | None = None,
    channel_locales: dict[str, str] | None = None,
    policy_file: Path | None = None,
    access_dir: Path | None = None,
) -> AsyncIterator[Demo]:
    """Start the three parts on loopback; stop them all on exit.

    ``second``: the scenario of a second cluster; the bot then serves two clusters,
    ``prod-eu`` (``scenario``, the default) and ``prod-us`` (``second``).
    ``alert_token``: require ``Authorization: Bearer <token>`` on ``/alertmanager`` (without
    one the intake is disabled, as in ``serve``, unless ``alerts`` opts out).
    ``incident_channel``: where alert incidents open (a channel the stand-in must know).
    ``channel_locales``: the settings' per-channel language override (``slack.channel_locales``).
    ``policy_file``: another role policy (e.g. one with impersonation); ``access_dir``: the
    kustomization whose RBAC and admission policies the Kubernetes stand-in installs.
    ``socket_mode``: Slack talks to the bot over Socket Mode with ``app_token`` (a refused
    token raises SlackError from ``start_socket_mode``, after everything is stopped again).
    """
    async with contextlib.AsyncExitStack() as stack:
        kube, slack = await stack.enter_async_context(
            running_standins(
                scenario, console_port=console_port, socket_mode=socket_mode, access_dir=access_dir
            )
        )
        kubes = {"default": kube}
        if second is not None:
            other = KubeSim(load_scenario(second), insecure_superuser=True, clock_from_start=True)
            await other.start()
            stack.push_async_callback(other.stop)
            kubes = {FIRST: kube, SECOND: other}
            slack.add_user(ERIN[0], ERIN[1], real_name=ERIN[2], title=ERIN[3])
        runtime, bot_url, handler = await stack.enter_async_context(
            running_bot(
                kube_url=kube.url,
                slack_api_url=slack.api_url,
                store_path=store_path,
                alert_token=alert_token,
                socket_mode=socket_mode,
                app_token=app_token,
                alerts=alerts,
                incident_channel=incident_channel,
                channel_locales=channel_locales,
                clusters={n: k.url for n, k in kubes.items()} if second is not None else None,
                policy_file=policy_file,
                offload=_shared_analysis,
            )
        )
        if not socket_mode:
            slack.set_request_url(f"{bot_url}/slack/events")
        yield Demo(kube, slack, runtime, bot_url, slack.base_url, socket=handler, kubes=kubes)


async def _script(scenario: str, second: str | None = None, *, metrics: bool = False) -> str | None:
    """Run the story (two clusters when ``second``) and print it; the ``/metrics`` scrape
    after it if asked."""
    scraped = None
    async with running_demo(scenario, second=second) as demo:
        if second is not None:
            assert demo.kubes is not None
            both = await run_clusters_story(
                demo.slack, demo.drain, demo.kubes, first=FIRST, second=SECOND
            )
            print(transcript(both))
            if metrics:
                scraped = await scrape_metrics(demo.bot_url)
            return scraped
        log = await run_story(demo.slack, demo.drain)
        assert log.thread_ts is not None
        print(demo.slack.text_of_thread(CHANNEL, log.thread_ts))
        print()
        for step in log.steps:
            print(f"✓ {step}")
        if metrics:
            scraped = await scrape_metrics(demo.bot_url)
    return scraped


async def scrape_metrics(bot_url: str) -> str:
    """The bot's ``/metrics``, fetched over HTTP as Prometheus would."""
    async with aiohttp.ClientSession() as http, http.get(f"{bot_url}/metrics") as resp:
        resp.raise_for_status()
        return await resp.text()


def fresh_demo_store() -> Path:
    """The demo's store at its well-known path, emptied: each demo tells its story anew."""
    path = demo_store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    leftovers = (path.with_name(path.name + x) for x in ("-wal", "-shm"))
    for leftover in (path, demo_settings_path(), *leftovers):
        leftover.unlink(missing_ok=True)
    return path


def write_demo_settings(demo: Demo, store: Path) -> Path:
    """The settings the CLI reads the demo with (``bot.cli.common.cli_settings``): its store,
    its Slack stand-in (people's display names for ``gpunode timeline``) and its cluster."""
    path = demo_settings_path()
    settings = {
        "store": {"path": str(store)},
        "slack": {"bot_token": BOT_TOKEN, "api_base_url": demo.slack.api_url},
        "kube": {"mode": "server", "server": demo.kube.url, "token": KUBE_BOT_TOKEN},
    }
    path.write_text(yaml.safe_dump(settings, sort_keys=False), encoding="utf-8")
    return path


async def _interactive(scenario: str, port: int, second: str | None) -> int:
    store = fresh_demo_store()
    async with running_demo(
        scenario, console_port=port, second=second, store_path=str(store)
    ) as demo:
        write_demo_settings(demo, store)
        print(f"gpunode demo ({scenario}) is running.")
        print(f"  console:        {demo.console_url}/")
        print(f"  incident store: {store}   (gpunode status|audit|timeline read it)")
        for name, sim in (demo.kubes or {}).items():
            if second is not None:
                print(f"  cluster {name}: {sim.url}   ({sim.scenario.name})")
        print(f"  Kubernetes API: {demo.kube.url}   (kubectl get nodes --server {demo.kube.url})")
        print(f"  the bot's token (its deployed RBAC): {KUBE_BOT_TOKEN}")
        print("Open the console, pick a user, and type: diagnose gpu-node-01   (Ctrl-C stops)")
        sys.stdout.flush()
        await asyncio.Event().wait()
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        second = None if getattr(args, "one_cluster", False) else getattr(args, "second", None)
        if args.script:
            metrics_out = getattr(args, "metrics_out", None)
            scraped = asyncio.run(_script(args.scenario, second, metrics=metrics_out is not None))
            if metrics_out is not None and scraped is not None:
                Path(metrics_out).write_text(scraped, encoding="utf-8")
                print(f"✓ /metrics after the story written to {metrics_out}")
            return 0
        return asyncio.run(_interactive(args.scenario, args.port, second))
    except ScenarioError as exc:
        raise ConfigError(str(exc)) from exc  # the CLI prints it and exits 1
    except KeyboardInterrupt:
        return 0
