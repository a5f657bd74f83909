"""The HTTP surface: ``/slack/events`` (``bot.slack.edge``, then Bolt), ``/healthz``,
``/readyz`` and ``/alertmanager``.

``/slack/events`` is served in HTTP mode only: in Socket Mode the Bolt app skips request
signature verification (Slack's socket is the authentication), so an HTTP route would let
anyone who reaches the port act as any Slack user.

``/readyz`` answers 200 only once the store is open and the Slack token was accepted
(``auth.test``), so a Deployment does not route traffic to a pod that cannot work.

``/alertmanager`` is closed by default: ``alerts`` is None (404, saying how to enable it)
unless a bearer token is set or ``alerts.allow_unauthenticated`` opts out, loudly.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.errors import KubeError, UsageError
from bot.services.alerts import AlertService, parse_payload
from bot.slack.edge import SlackEdge

Ready = Callable[[], Awaitable[bool]]
INTAKE_DISABLED = (
    "the alert intake is disabled: set GPUNODE_HTTP__ALERTMANAGER_TOKEN and send it from "
    "Alertmanager as a bearer token (webhook_configs http_config authorization)"
)


def build_web_app(
    slack: SlackEdge | None,
    *,
    alerts: AlertService | None,
    alert_token: str | None,
    ready: Ready,
) -> web.Application:
    """``slack``: the ``/slack/events`` handler (None in Socket Mode: no such route)."""
    web_app = web.Application()
    if slack is not None:
        web_app.router.add_post("/slack/events", slack.handle)

    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    async def readyz(_: web.Request) -> web.Response:
        ok = await ready()
        return web.json_response({"ok": ok}, status=200 if ok else 503)

    async def alertmanager(request: web.Request) -> web.Response:
        if alerts is None:
            return web.json_response({"error": INTAKE_DISABLED}, status=404)
        if alert_token:
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {alert_token}".encode()):
                return web.json_response({"error": "missing or wrong bearer token"}, status=401)
        body = await request.read()
        try:
            payload = parse_payload(body)
        except UsageError as err:
            return web.json_response({"error": err.message}, status=400)
        try:
            result = await alerts.intake(payload)
        except KubeError as err:
            # the cluster cannot say which nodes exist: 503, so Alertmanager sends it again
            return web.json_response({"error": err.message, "code": err.code}, status=503)
        return web.json_response(result.as_json())

    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/readyz", readyz)
    web_app.router.add_post("/alertmanager", alertmanager)
    return web_app
