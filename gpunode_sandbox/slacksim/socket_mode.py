"""Socket Mode for the Slack stand-in: ``apps.connections.open`` and the WebSocket link.

Slack's side of Socket Mode (reference/slack.md section 4.4): the app calls
``apps.connections.open`` with its app-level ``xapp-`` token and gets a one-time
``ws://.../link/?ticket=...`` URL; on connect Slack sends ``{"type": "hello", ...}``; each
request the app would otherwise receive over HTTP arrives as an envelope
``{"envelope_id", "payload", "type": "slash_commands"|"interactive"|"events_api",
"accepts_response_payload", "retry_attempt", "retry_reason"}``; the app acks with
``{"envelope_id", "payload"?}``. Nothing is signed: the socket itself is the authentication.

An app may hold several connections at once (one per replica, up to ``MAX_CONNECTIONS``);
Slack then sends each envelope to exactly ONE of them, chosen at random (bolt-python issue
#448, Slack's maintainers: "the Slack API server will send each event to only 1 random
connection"). The stand-in does the same with ``rng`` (seedable), and records which
connection got each envelope (``Envelope.connection``, the connection's serial number).

Contract: :meth:`SocketMode.deliver` returns the same :class:`DriverResult` an HTTP delivery
would (status 200 and the ack payload as a JSON body when acked; status 0 when no app is
connected or no ack came within the timeout), so the driver honours acks exactly as it
honours HTTP replies. Every envelope sent and every ack received is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from gpunode_sandbox.slacksim.driver import DriverResult
from gpunode_sandbox.slacksim.state import APP_ID, Workspace

JSON = dict[str, Any]
#: Envelope types; ``accepts_response_payload`` is true for these payload kinds only (an
#: ack payload of a block_actions or an event is ignored by Slack).
KINDS = ("slash_commands", "interactive", "events_api")
RESPONDS = {"view_submission", "block_suggestion"}
#: how long a delivery waits for an app that is (re)connecting; Slack queues briefly too
CONNECT_GRACE_S = 2.0
#: Slack's limit of simultaneous Socket Mode connections per app
MAX_CONNECTIONS = 10


@dataclass(frozen=True)
class Envelope:
    envelope_id: str
    type: str
    payload: JSON
    accepts_response_payload: bool
    retry_attempt: int
    retry_reason: str
    #: serial number of the connection it was sent on (the stand-in's record, not on the wire)
    connection: int = 0

    def wire(self) -> JSON:
        return {
            "envelope_id": self.envelope_id,
            "payload": self.payload,
            "type": self.type,
            "accepts_response_payload": self.accepts_response_payload,
            "retry_attempt": self.retry_attempt,
            "retry_reason": self.retry_reason,
        }


@dataclass(frozen=True)
class Ack:
    """One message received from the app: ``matched`` when it acked a pending envelope."""

    envelope_id: str | None
    payload: JSON | None
    matched: bool
    elapsed_s: float | None


@dataclass
class SocketMode:
    ws: Workspace
    enabled: bool = False
    envelopes: list[Envelope] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    connections: list[web.WebSocketResponse] = field(default_factory=list)
    connects: int = 0
    #: picks the one connection each envelope goes to (seed it for a reproducible split)
    rng: random.Random = field(default_factory=random.Random)
    _serials: dict[int, int] = field(default_factory=dict)
    _tickets: set[str] = field(default_factory=set)
    _pending: dict[str, tuple[asyncio.Future[JSON], float]] = field(default_factory=dict)

    # -- apps.connections.open (token checked by WebApi: xapp- only) ------------------------
    def open_connection(self, _ws: Workspace, _args: JSON) -> JSON:
        ticket = self.ws.new_id("tk")
        self._tickets.add(ticket)
        base = self.ws.base_url.replace("http://", "ws://", 1)
        return {"url": f"{base}/link/?ticket={ticket}&app_id={APP_ID}"}

    def routes(self) -> list[web.RouteDef]:
        return [web.get("/link/", self.link)]

    async def link(self, request: web.Request) -> web.StreamResponse:
        """The WebSocket endpoint; a ticket works once (Slack's URLs are single-use)."""
        ticket = request.query.get("ticket", "")
        if ticket not in self._tickets:
            return web.Response(status=401, text="invalid_ticket")
        self._tickets.discard(ticket)
        if len([c for c in self.connections if not c.closed]) >= MAX_CONNECTIONS:
            return web.Response(status=429, text="too_many_websockets")
        sock = web.WebSocketResponse(autoping=True)  # answers the client's pings
        await sock.prepare(request)
        self.connections.append(sock)
        self.connects += 1
        self._serials[id(sock)] = self.connects
        await sock.send_json(self._hello())
        try:
            async for msg in sock:
                if msg.type == WSMsgType.TEXT:
                    self._receive(str(msg.data))
        finally:
            self.connections.remove(sock)
            self._serials.pop(id(sock), None)
        return sock

    def _hello(self) -> JSON:
        return {
            "type": "hello",
            "num_connections": len(self.connections),
            "debug_info": {"host": "applink-sandbox", "approximate_connection_time": 18060},
            "connection_info": {"app_id": APP_ID},
        }

    def _receive(self, data: str) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            self.acks.append(Ack(None, None, False, None))
            return
        if not isinstance(message, dict):
            self.acks.append(Ack(None, None, False, None))
            return
        envelope_id = message.get("envelope_id")
        payload = message.get("payload")
        pending = self._pending.pop(str(envelope_id), None)
        elapsed = time.monotonic() - pending[1] if pending else None
        body = payload if isinstance(payload, dict) else None
        self.acks.append(Ack(envelope_id, body, pending is not None, elapsed))
        if pending is not None and not pending[0].done():
            pending[0].set_result(message)

    # -- delivery -------------------------------------------------------------------------
    async def _connection(self) -> web.WebSocketResponse | None:
        deadline = time.monotonic() + CONNECT_GRACE_S
        while True:
            live = [c for c in self.connections if not c.closed]
            if live or time.monotonic() >= deadline:
                return self.rng.choice(live) if live else None
            await asyncio.sleep(0.05)

    async def deliver(
        self, kind: str, payload: JSON, *, retry_attempt: int = 0, timeout_s: float = 10.0
    ) -> DriverResult:
        """Send one envelope to one open connection (chosen at random) and wait for its ack."""
        if kind not in KINDS:
            raise ValueError(f"unknown envelope type {kind!r}: one of {KINDS}")
        start = time.monotonic()
        sock = await self._connection()
        if sock is None:
            return DriverResult(0, "no Socket Mode connection: the app is not connected", 0.0)
        accepts = kind == "slash_commands" or payload.get("type") in RESPONDS
        envelope = Envelope(
            self.ws.new_id("env-"),
            kind,
            payload,
            accepts,
            retry_attempt,
            "timeout" if retry_attempt else "",
            self._serials.get(id(sock), 0),
        )
        self.envelopes.append(envelope)
        future: asyncio.Future[JSON] = asyncio.get_running_loop().create_future()
        self._pending[envelope.envelope_id] = (future, time.monotonic())
        try:
            await sock.send_json(envelope.wire())
            ack = await asyncio.wait_for(future, timeout_s)
        except (TimeoutError, ConnectionError) as exc:
            self._pending.pop(envelope.envelope_id, None)
            return DriverResult(0, f"no ack: {type(exc).__name__}", time.monotonic() - start)
        reply = ack.get("payload")
        body = json.dumps(reply) if accepts and isinstance(reply, dict) and reply else ""
        headers = {"Content-Type": "application/json"} if body else {}
        return DriverResult(200, body, time.monotonic() - start, headers)

    async def close(self) -> None:
        """Close every connection (1001 going away), as Slack does on shutdown."""
        for sock in list(self.connections):
            with contextlib.suppress(ConnectionError):
                await sock.close(code=1001, message=b"sandbox stopping")
        for future, _ in self._pending.values():
            future.cancel()
        self._pending.clear()
