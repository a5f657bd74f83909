"""``SlackSim``: the Slack stand-in in one object (Web API server, driver, console, state).

Usage::

    sim = SlackSim(signing_secret="s")
    await sim.start()                      # -> "http://127.0.0.1:PORT"
    client = AsyncWebClient(token="xoxb-sim", base_url=sim.api_url)
    sim.set_request_url("http://127.0.0.1:P/slack/events")
    await sim.slash_command("U0ALICE", "C0INCIDENT", "diagnose gpu-node-01")

The default workspace has channel ``C0INCIDENT`` (#gpu-incidents) and five people:
U0ALICE (on-call SRE), U0BOB (SRE lead, approver), U0CAROL (ML engineer), U0DAVE (viewer, no
role), and U0LIWEI (li.wei, on-call SRE whose Slack is set to Simplified Chinese, ``zh-CN``;
the others use ``en-US``). Their role lives in ``title``; the bot's policy decides what a
role may do.

Socket Mode: ``SlackSim(..., socket_mode=True)`` or ``sim.use_socket_mode()``; the app then
connects with ``apps.connections.open`` (xapp- token) and every driver method delivers its
payload as an envelope over the app's WebSocket instead of a signed POST (``socket_mode.py``).

Wired: the bot can be reached once its request URL is set (HTTP) or its app holds a Socket
Mode connection. The console answers before that (``gpunode demo`` starts the stand-in, then
builds the bot), so its commands wait for the bot (``wait_wired``, at most ``console_hold_s``);
the driver's own methods never wait: a test that forgot the request URL learns it at once.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gpunode_sandbox.slacksim import console, responses
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.slacksim.driver import Driver, DriverResult, SignOptions
from gpunode_sandbox.slacksim.events import EventDelivery, EventSender
from gpunode_sandbox.slacksim.socket_mode import Ack, Envelope, SocketMode
from gpunode_sandbox.slacksim.state import Channel, User, UserGroup, Workspace
from gpunode_sandbox.slacksim.webapi import ApiCall, WebApi

JSON = dict[str, Any]
DEFAULT_USERS = (
    ("U0ALICE", "alice", "Alice Ng", "On-call SRE", "en-US"),
    ("U0BOB", "bob", "Bob Okafor", "SRE lead (approver)", "en-US"),
    ("U0CAROL", "carol", "Carol Diaz", "ML engineer", "en-US"),
    ("U0DAVE", "dave", "Dave Kim", "Viewer (no role)", "en-GB"),
    ("U0LIWEI", "li.wei", "李伟 (Li Wei)", "On-call SRE (值班 SRE)", "zh-CN"),
)
#: how long a console command waits for the bot to be wired: ``gpunode demo`` serves the
#: console 2-4 s before its bot is wired (building the runtime, compiling the templates;
#: measured 2.1 s at load 1.2 and 2.9-3.6 s at load 2 on a 2-core machine). Ten seconds is
#: nearly three times the slowest; past it the bot is likely not coming, and the person is
#: told so rather than kept waiting
CONSOLE_HOLD_S = 10.0
#: how often a held console command looks for the bot again (the delay it adds at most)
WIRED_POLL_S = 0.05


class SlackSim:
    def __init__(
        self,
        *,
        signing_secret: str,
        bot_token: str = "xoxb-sim",  # noqa: S107
        clock: Callable[[], float] = time.time,
        socket_mode: bool = False,
    ) -> None:
        self.bot_token = bot_token
        self.ws = Workspace(clock=clock)
        self.api = WebApi(self.ws)
        self.driver = Driver(self.ws, secret=signing_secret)
        self.events = EventSender(self.driver)
        self.socket = SocketMode(self.ws, enabled=socket_mode)
        self.driver.socket = self.socket
        self.api.app_methods["apps.connections.open"] = self.socket.open_connection
        self._runner: web.AppRunner | None = None
        self.base_url = ""
        self.console_hold_s = CONSOLE_HOLD_S
        for uid, name, real, title, locale in DEFAULT_USERS:
            self.add_user(uid, name, real_name=real, title=title, locale=locale)
        self.add_channel("C0INCIDENT", "#gpu-incidents")
        self.add_usergroup("S0ONCALL", "gpu-oncall", ["U0ALICE"])

    # -- lifecycle --------------------------------------------------------------------------
    def web_app(self) -> web.Application:
        app = web.Application()
        app.add_routes(self.api.routes())
        app.add_routes(responses.routes(self.ws))
        app.add_routes(console.routes(self))
        app.add_routes(self.socket.routes())
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.web_app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = int(self._runner.addresses[0][1])
        self.base_url = f"http://{host}:{bound}"
        self.ws.base_url = self.base_url
        return self.base_url

    async def stop(self) -> None:
        self.api.release()  # a held call is answered, so the server can stop
        self.ws.closed = True
        self.ws.changed()
        await self.socket.close()
        await self.driver.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def api_url(self) -> str:
        return self.base_url + "/api/"

    def set_request_url(self, url: str) -> None:
        self.driver.request_url = url

    @property
    def wired(self) -> bool:
        """Whether a request can reach the bot: over an open Socket Mode connection (Socket
        Mode) or at its request URL (HTTP)."""
        if self.socket.enabled:
            return any(not c.closed for c in self.socket.connections)
        return bool(self.driver.request_url)

    async def wait_wired(self, timeout_s: float) -> bool:
        """Wait at most ``timeout_s`` for the bot to be wired; False if it was not (or the
        stand-in stopped meanwhile)."""
        deadline = time.monotonic() + timeout_s
        while not self.wired:
            if self.ws.closed or time.monotonic() >= deadline:
                return False
            await asyncio.sleep(WIRED_POLL_S)
        return True

    def use_socket_mode(self, on: bool = True) -> None:
        """Deliver requests over the app's Socket Mode connection (``on``) or by HTTP POST."""
        self.socket.enabled = on

    # -- workspace setup --------------------------------------------------------------------
    def add_user(
        self, id: str, name: str, *, real_name: str = "", title: str = "", locale: str = "en-US"
    ) -> None:
        self.ws.add_user(User(id, name, real_name, title, locale=locale))

    def add_usergroup(self, id: str, handle: str, members: list[str]) -> None:
        self.ws.usergroups[id] = UserGroup(id, handle, list(members))

    def add_channel(self, id: str, name: str, *, bot_member: bool = True) -> None:
        self.ws.add_channel(Channel(id, name, bot_member=bot_member))

    # -- knobs ------------------------------------------------------------------------------
    def rate_limit(self, method: str, *, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` get 429 + Retry-After: 1 + ratelimited."""
        self.api.rate_limit(method, times=times)

    def fail(
        self, method: str, *, error: str = "fatal_error", times: int = 1, status: int = 200
    ) -> None:
        """The next ``times`` calls of ``method`` fail with ``error`` (HTTP ``status``)."""
        self.api.fail(method, error=error, times=times, status=status)

    def hold(self, method: str) -> None:
        """Calls of ``method`` wait, unanswered, until ``release`` (Slack slow to answer)."""
        self.api.hold(method)

    def release(self, method: str | None = None) -> None:
        """Answer the held calls of ``method`` (None: every held method)."""
        self.api.release(method)

    # -- driver -----------------------------------------------------------------------------
    async def slash_command(
        self,
        user_id: str,
        channel_id: str,
        text: str,
        *,
        command: str = "/gpunode",
        signing: SignOptions | None = None,
    ) -> DriverResult:
        return await self.driver.slash_command(
            user_id, channel_id, text, command=command, signing=signing
        )

    async def click(
        self,
        user_id: str,
        channel_id: str,
        message_ts: str,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str | None = None,
        signing: SignOptions | None = None,
    ) -> DriverResult:
        return await self.driver.click(
            user_id,
            channel_id,
            message_ts,
            action_id,
            value=value,
            block_id=block_id,
            signing=signing,
        )

    async def submit_view(
        self,
        user_id: str,
        view_id: str,
        values: dict[str, dict[str, Any]],
        *,
        signing: SignOptions | None = None,
    ) -> DriverResult:
        return await self.driver.submit_view(user_id, view_id, values, signing=signing)

    async def close_view(self, user_id: str, view_id: str) -> DriverResult | None:
        return await self.driver.close_view(user_id, view_id)

    async def post_user_message(
        self,
        user_id: str,
        channel_id: str,
        text: str,
        *,
        thread_ts: str | None = None,
        deliveries: int = 1,
        signing: SignOptions | None = None,
    ) -> str:
        return await self.events.post_user_message(
            user_id, channel_id, text, thread_ts=thread_ts, deliveries=deliveries, signing=signing
        )

    async def mention(
        self, user_id: str, channel_id: str, text: str, *, thread_ts: str | None = None
    ) -> str:
        return await self.events.mention(user_id, channel_id, text, thread_ts=thread_ts)

    async def open_home(self, user_id: str) -> list[DriverResult]:
        """``user_id`` opens the app's Home tab (a signed ``app_home_opened`` event)."""
        return await self.events.open_home(user_id)

    def home(self, user_id: str) -> JSON | None:
        """The Home tab last published for ``user_id`` (None: never published)."""
        found = self.ws.homes.get(user_id)
        return copy.deepcopy(found) if found is not None else None

    def pinned(self, channel_id: str) -> list[str]:
        """The ts of each message pinned in ``channel_id`` that still exists, oldest first."""
        history = self.ws.messages.get(channel_id, {})
        return [p.ts for p in self.ws.pins.get(channel_id, []) if p.ts in history]

    async def url_verification(self, challenge: str) -> DriverResult:
        return await self.events.url_verification(challenge)

    async def send_raw(self, body: bytes, headers: dict[str, str]) -> DriverResult:
        return await self.driver.send_raw(body, headers)

    def sign_headers(
        self,
        body: bytes,
        *,
        content_type: str = "application/x-www-form-urlencoded",
        signing: SignOptions | None = None,
    ) -> dict[str, str]:
        return self.driver.sign_headers(body, content_type=content_type, signing=signing)

    # -- inspection -------------------------------------------------------------------------
    @property
    def calls(self) -> list[ApiCall]:
        return self.api.calls

    @property
    def envelopes(self) -> list[Envelope]:
        """Socket Mode envelopes sent to the app, oldest first."""
        return self.socket.envelopes

    @property
    def acks(self) -> list[Ack]:
        """Messages the app sent back over its socket (acks), oldest first."""
        return self.socket.acks

    @property
    def deliveries(self) -> list[EventDelivery]:
        return self.events.deliveries

    def messages(self, channel_id: str, *, thread_ts: str | None = None) -> list[JSON]:
        if thread_ts is not None:
            return self.ws.thread(channel_id, thread_ts)
        return self.ws.top_level(channel_id)

    def message(self, channel_id: str, ts: str) -> JSON | None:
        found = self.ws.messages.get(channel_id, {}).get(ts)
        return dict(found) if found is not None else None

    def ephemerals(self, user_id: str) -> list[JSON]:
        return [{**e.message, "channel": e.channel} for e in self.ws.ephemerals.get(user_id, [])]

    def open_views(self, user_id: str) -> list[JSON]:
        """The user's modal stack, bottom first; each view has ``errors`` from the last reply."""
        stack = self.ws.stacks.get(user_id, [])
        return [{**self.ws.views[v].view, "errors": dict(self.ws.views[v].errors)} for v in stack]

    def files(self, channel_id: str) -> list[JSON]:
        return [
            {
                "id": f.id,
                "name": f.filename,
                "title": f.title,
                "thread_ts": f.thread_ts,
                "content": f.content,
            }
            for f in self.ws.files.values()
            if channel_id in f.channels
        ]

    def text_of_thread(self, channel_id: str, thread_ts: str) -> str:
        """Plain text of a thread (parent and replies, blocks rendered as lines)."""
        parts = []
        for msg in self.ws.thread(channel_id, thread_ts):
            who = self.ws.users.get(msg.get("user", ""))
            name = who.name if who else msg.get("user", "?")
            body = message_text(msg)
            files = [f"[file {f['name']}]" for f in msg.get("files", [])]
            parts.append("\n".join([f"{name}:", body, *files]).rstrip())
        return "\n\n".join(parts)
