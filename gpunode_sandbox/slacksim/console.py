"""The browser console: a page plus a small JSON API and a live-update stream.

``GET /`` serves ``static/index.html`` (vanilla JS, no CDN, no build step). The page reads
``GET /console/api/state?user=U&channel=C[&lang=L]`` and re-reads it whenever
``GET /console/events`` (server-sent events) reports a new workspace version.

The page's own labels (``console_labels``: the console's words live with the console) come
with the state, in ``lang`` (``/?lang=zh-CN``) or else the acting person's Slack locale, as
Slack's own client follows its user's language; messages from the bot are in whatever
language the bot chose for them. Everything a person does in the page
goes through the driver, i.e. as signed requests to the bot, exactly like a test would.

A command typed before the bot is wired (``gpunode demo`` serves the page before its bot is
built) is held until it is, then sent; if the bot is not wired within ``sim.console_hold_s``
the command is not sent and the answer says so (``{"starting": true, "text": ...}``), so the
page can say "still starting" and give the command back, instead of a developer message.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from gpunode_sandbox.slacksim import console_labels
from gpunode_sandbox.slacksim.driver import DriverResult

if TYPE_CHECKING:
    from gpunode_sandbox.slacksim.sim import SlackSim

JSON = dict[str, Any]
STATIC = Path(__file__).with_name("static")
KEEPALIVE_S = 15.0


def console_locale(sim: SlackSim, user: str, lang: str | None = None) -> str:
    """``lang`` if the console has labels in it, else the person's Slack locale, else ``en``."""
    person = sim.ws.users.get(user)
    return console_labels.choose(asked=lang, person=person.locale if person else None)


def state_of(sim: SlackSim, user: str, channel: str, *, lang: str | None = None) -> JSON:
    """Everything the page shows for ``user`` looking at ``channel``."""
    ws = sim.ws
    locale = console_locale(sim, user, lang)
    top = sim.messages(channel) if channel in ws.channels else []
    threads = {
        m["ts"]: sim.messages(channel, thread_ts=m["ts"])[1:] for m in top if m.get("reply_count")
    }
    files = [{k: v for k, v in f.items() if k != "content"} for f in sim.files(channel)]
    return {
        "version": ws.version,
        "locale": locale,
        "labels": console_labels.labels(locale),
        "users": [
            {
                "id": u.id,
                "name": u.name,
                "real_name": u.real_name,
                "title": u.title,
                "is_bot": u.is_bot,
            }
            for u in ws.users.values()
        ],
        "channels": [{"id": c.id, "name": c.name} for c in ws.channels.values()],
        "channel": channel,
        "messages": top,
        "threads": threads,
        "ephemerals": [e for e in sim.ephemerals(user) if e["channel"] == channel],
        "views": sim.open_views(user),
        "files": files,
    }


def _result(result: DriverResult | None) -> web.Response:
    if result is None:
        return web.json_response({"status": None})
    return web.json_response(
        {"status": result.status, "body": result.body, "elapsed_s": result.elapsed_s}
    )


def routes(sim: SlackSim) -> list[web.AbstractRouteDef]:
    async def index(request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / "index.html")

    async def favicon(request: web.Request) -> web.Response:
        return web.Response(status=204)

    async def state(request: web.Request) -> web.Response:
        user = request.query.get("user", "U0ALICE")
        channel = request.query.get("channel", "C0INCIDENT")
        lang = request.query.get("lang") or None
        return web.json_response(state_of(sim, user, channel, lang=lang))

    async def stream(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        try:
            await resp.write(f"event: version\ndata: {sim.ws.version}\n\n".encode())
            while not sim.ws.closed:
                if await sim.ws.wait_changed(KEEPALIVE_S):
                    await resp.write(f"event: version\ndata: {sim.ws.version}\n\n".encode())
                else:
                    await resp.write(b": keepalive\n\n")
        except ConnectionResetError:
            pass  # the page went away
        return resp

    def action(kind: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            data = await request.json()
            try:
                if kind == "command":
                    user, channel, text = data["user"], data["channel"], data["text"]
                    if not await sim.wait_wired(sim.console_hold_s):
                        return web.json_response({"status": None, "starting": True, "text": text})
                    res = await sim.slash_command(user, channel, text)
                elif kind == "click":
                    res = await sim.click(
                        data["user"],
                        data["channel"],
                        data["ts"],
                        data["action_id"],
                        value=data.get("value"),
                        block_id=data.get("block_id"),
                    )
                elif kind == "submit":
                    res = await sim.submit_view(data["user"], data["view_id"], data["values"])
                elif kind == "close":
                    return _result(await sim.close_view(data["user"], data["view_id"]))
                else:
                    ts = await sim.post_user_message(
                        data["user"], data["channel"], data["text"], thread_ts=data.get("thread_ts")
                    )
                    return web.json_response({"ts": ts})
            except LookupError as exc:  # DriverError (unknown user, view...), a missing key
                return web.json_response({"error": str(exc)}, status=400)
            return _result(res)

        return handler

    return [
        web.get("/", index),
        web.get("/favicon.ico", favicon),
        web.static("/static", STATIC),
        web.get("/console/api/state", state),
        web.get("/console/events", stream),
        *[
            web.post(f"/console/api/{k}", action(k))
            for k in ("command", "click", "submit", "close", "reply")
        ],
    ]
