"""``/metrics`` over HTTP: a route on the bot's own server, or a listener of its own.

With ``metrics.port`` unset, ``/metrics`` is a route on the bot's HTTP server (which runs in
Socket Mode too, for the kubelet's probes). With it set, ``/metrics`` is served only on that
port, so a NetworkPolicy can open it to Prometheus without opening ``/slack/events`` and
``/alertmanager`` (deploy/base does that).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.telemetry.metrics import Metrics

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def metrics_handler(metrics: Metrics) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        body, content_type = await metrics.render(request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": content_type})

    return handle


def add_metrics_route(app: web.Application, metrics: Metrics) -> None:
    app.router.add_get("/metrics", metrics_handler(metrics))


def metrics_app(metrics: Metrics) -> web.Application:
    """A small application serving only ``/metrics`` (for ``metrics.port``)."""
    app = web.Application()
    add_metrics_route(app, metrics)
    return app


async def start_metrics_listener(metrics: Metrics, *, host: str, port: int) -> web.AppRunner:
    """Serve ``/metrics`` on ``host:port``; the caller cleans the runner up. ``port`` 0 picks
    a free port: read it back with ``listening_port``."""
    runner = web.AppRunner(metrics_app(metrics), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    return runner


def listening_port(runner: web.AppRunner) -> int:
    """The port ``runner``'s first listener is bound to (the one the system picked for 0)."""
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the listener is not bound to a TCP address")
