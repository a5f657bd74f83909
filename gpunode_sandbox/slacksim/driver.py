"""The Slack side of the conversation: signed requests to the bot's request URL.

Every request is signed over the exact bytes sent (``v0:{ts}:{body}``, HMAC-SHA256 with the
signing secret; reference/slack.md section 1.1) with the *real* wall clock, because the bot's
verifier uses it; the workspace clock (injectable) only drives ts values and trigger expiry.
The bot's HTTP reply is honoured as Slack does: a JSON/text ack of a slash command becomes an
immediate (ephemeral by default) message; a view_submission reply's ``response_action``
(errors / update / push / clear; empty = close) is applied to the modal stack.

In Socket Mode (``Driver.socket`` set and enabled) the same payloads travel as envelopes over
the app's WebSocket instead (``socket_mode.py``), unsigned, and the app's ack payload is
honoured exactly like an HTTP reply body.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import aiohttp

from gpunode_sandbox.slacksim import methods_views as views
from gpunode_sandbox.slacksim import payloads
from gpunode_sandbox.slacksim.apierrors import ApiError, DriverError
from gpunode_sandbox.slacksim.blocks import find_element
from gpunode_sandbox.slacksim.methods_chat import bot_message
from gpunode_sandbox.slacksim.state import Workspace

if TYPE_CHECKING:
    from gpunode_sandbox.slacksim.socket_mode import SocketMode

JSON = dict[str, Any]
FORM = "application/x-www-form-urlencoded"
ACK_DEADLINE_S = 3.0  # Slack gives up on an ack after 3 s (slack.md 1.8)


@dataclass(frozen=True)
class DriverResult:
    """The bot's HTTP reply. ``status`` 0 means no reply (connection failed or timed out)."""

    status: int
    body: str
    elapsed_s: float
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def late(self) -> bool:
        """True when Slack would have given up waiting (over 3 s)."""
        return self.elapsed_s > ACK_DEADLINE_S

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class SignOptions:
    """Ways to sign badly, for tests of the bot's request verification."""

    secret: str | None = None  # sign with this secret instead of the real one
    timestamp_offset_s: float = 0.0  # e.g. -600: a stale timestamp
    tamper_body: bool = False  # change the body after signing
    unsigned: bool = False  # send no signature headers at all


def signature(secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


class Driver:
    def __init__(self, ws: Workspace, *, secret: str, timeout_s: float = 10.0) -> None:
        self.ws = ws
        self.secret = secret
        self.request_url = ""
        self.timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None
        self.socket: SocketMode | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def sign_headers(
        self, body: bytes, *, content_type: str, signing: SignOptions | None = None
    ) -> dict[str, str]:
        opts = signing or SignOptions()
        headers = {"Content-Type": content_type}
        if not opts.unsigned:
            ts = str(int(time.time() + opts.timestamp_offset_s))
            headers["X-Slack-Request-Timestamp"] = ts
            headers["X-Slack-Signature"] = signature(opts.secret or self.secret, ts, body)
        return headers

    async def send_raw(self, body: bytes, headers: dict[str, str]) -> DriverResult:
        """POST ``body`` as-is to the bot's request URL (status 0 when none is set)."""
        if not self.request_url:
            return DriverResult(0, "no request URL: call sim.set_request_url(url)", 0.0)
        if self._session is None:
            self._session = aiohttp.ClientSession()
        start = time.monotonic()
        try:
            timeout = aiohttp.ClientTimeout(total=self.timeout_s)
            async with self._session.post(
                self.request_url, data=body, headers=headers, timeout=timeout
            ) as resp:
                text = await resp.text()
                return DriverResult(resp.status, text, time.monotonic() - start, dict(resp.headers))
        except (aiohttp.ClientError, TimeoutError) as exc:
            return DriverResult(0, f"{type(exc).__name__}: {exc}", time.monotonic() - start)

    async def send(
        self,
        body: bytes,
        *,
        content_type: str = FORM,
        signing: SignOptions | None = None,
        extra_headers: dict[str, str] | None = None,
    ) -> DriverResult:
        headers = self.sign_headers(body, content_type=content_type, signing=signing)
        headers.update(extra_headers or {})
        if signing is not None and signing.tamper_body:
            body = body.replace(b"=", b"=x", 1) if b"=" in body else body + b" "
        return await self.send_raw(body, headers)

    @property
    def socket_mode(self) -> bool:
        return self.socket is not None and self.socket.enabled

    async def dispatch(
        self,
        kind: str,
        body: bytes,
        *,
        content_type: str = FORM,
        signing: SignOptions | None = None,
        extra_headers: dict[str, str] | None = None,
        retry_attempt: int = 0,
    ) -> DriverResult:
        """Deliver a request the way the app receives them: over its socket or a signed POST.

        ``kind`` is the Socket Mode envelope type (slash_commands, interactive, events_api);
        ``signing`` and ``extra_headers`` only apply to HTTP (Socket Mode is not signed).
        """
        if self.socket is not None and self.socket.enabled:
            payload = socket_payload(kind, body)
            return await self.socket.deliver(
                kind, payload, retry_attempt=retry_attempt, timeout_s=self.timeout_s
            )
        return await self.send(
            body, content_type=content_type, signing=signing, extra_headers=extra_headers
        )

    def _user(self, user_id: str) -> Any:
        user = self.ws.users.get(user_id)
        if user is None:
            raise DriverError(f"Unknown user {user_id!r}: add it with sim.add_user first.")
        return user

    def _channel(self, channel_id: str) -> tuple[str, str]:
        ch = self.ws.channels.get(channel_id)
        if ch is None:
            raise DriverError(f"Unknown channel {channel_id!r}: add it with sim.add_channel first.")
        return ch.id, ch.name

    async def slash_command(
        self,
        user_id: str,
        channel_id: str,
        text: str,
        *,
        command: str = "/gpunode",
        signing: SignOptions | None = None,
    ) -> DriverResult:
        user, channel = self._user(user_id), self._channel(channel_id)
        body = payloads.slash_command_body(
            user,
            channel,
            text,
            command=command,
            response_url=self.ws.issue_response_url(user.id, channel[0]),
            trigger_id=self.ws.issue_trigger(user.id),
        )
        result = await self.dispatch("slash_commands", body, signing=signing)
        self._record_command_ack(user.id, channel[0], command, result)
        return result

    def _record_command_ack(
        self, user: str, channel: str, command: str, result: DriverResult
    ) -> None:
        if result.status != 200:
            msg = {
                "type": "message",
                "user": "USLACKBOT",
                "text": f'{command} failed with the error "dispatch_failed"',
            }
            self.ws.add_ephemeral(user, channel, msg)
            return
        if not result.body:
            return
        ctype = result.headers.get("Content-Type", "")
        data = json.loads(result.body) if ctype.startswith("application/json") else result.body
        if isinstance(data, str):
            data = {"text": data}
        if not isinstance(data, dict) or not (data.get("text") or data.get("blocks")):
            return
        msg = bot_message(str(data.get("text") or ""), data.get("blocks"))
        if data.get("response_type") == "in_channel":
            self.ws.store(channel, msg)
        else:
            self.ws.add_ephemeral(user, channel, msg)

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
        """Click the element ``action_id`` of a stored (or the user's ephemeral) message."""
        body = self.click_body(
            user_id, channel_id, message_ts, action_id, value=value, block_id=block_id
        )
        return await self.dispatch("interactive", body, signing=signing)

    def click_body(
        self,
        user_id: str,
        channel_id: str,
        message_ts: str,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str | None = None,
    ) -> bytes:
        """The form body Slack POSTs for one click (a new action_ts and trigger each time):
        for tests that deliver clicks themselves, e.g. split across two replicas."""
        user, channel = self._user(user_id), self._channel(channel_id)
        message = self.ws.messages[channel[0]].get(message_ts)
        ephemeral = False
        if message is None:
            eph = self.ws.find_ephemeral(user.id, message_ts)
            if eph is None:
                raise DriverError(f"No message {message_ts} in {channel_id} visible to {user_id}.")
            message, ephemeral = eph.message, True
        found = find_element(message.get("blocks") or [], action_id, block_id=block_id)
        if found is None:
            raise DriverError(f"Message {message_ts} has no element {action_id!r}.")
        action = payloads.action_of(*found, value=value, action_ts=self.ws.next_ts())
        payload = payloads.block_actions(
            user,
            channel,
            message,
            action,
            ephemeral=ephemeral,
            trigger_id=self.ws.issue_trigger(user.id),
            response_url=self.ws.issue_response_url(
                user.id, channel[0], source_ts=message_ts, ephemeral=ephemeral
            ),
        )
        return payloads.interaction_body(payload)

    async def submit_view(
        self,
        user_id: str,
        view_id: str,
        values: dict[str, dict[str, Any]],
        *,
        signing: SignOptions | None = None,
    ) -> DriverResult:
        """Submit the user's open view; apply the bot's response_action reply."""
        user = self._user(user_id)
        opened = self.ws.views.get(view_id)
        if opened is None or opened.user != user.id:
            raise DriverError(f"View {view_id} is not open for {user_id}.")
        opened.view["state"] = {"values": views.state_values(opened.view, values)}
        trigger = self.ws.issue_trigger(user.id)
        payload = payloads.view_payload("view_submission", user, opened.view, trigger_id=trigger)
        body = payloads.interaction_body(payload)
        result = await self.dispatch("interactive", body, signing=signing)
        if result.status == 200:
            self._apply_view_reply(user.id, view_id, result)
        return result

    def _apply_view_reply(self, user: str, view_id: str, result: DriverResult) -> None:
        reply = result.json() if result.body.startswith("{") else None
        action = reply.get("response_action") if isinstance(reply, dict) else None
        opened = self.ws.views.get(view_id)
        if action is None:
            views.close_top(self.ws, user)
        elif action == "errors" and opened is not None:
            opened.errors = {str(k): str(v) for k, v in (reply or {}).get("errors", {}).items()}
            self.ws.changed()
        elif action == "clear":
            views.close_top(self.ws, user, clear=True)
        elif action in ("update", "push"):
            try:
                view = views.parse_view({"view": (reply or {}).get("view")})
                if action == "update":
                    views.replace_view(self.ws, view_id, view)
                else:
                    views.push_view(self.ws, user, view)
            except ApiError as err:
                if opened is not None:
                    opened.errors = {"_response_action": err.error}
                    self.ws.changed()

    async def close_view(self, user_id: str, view_id: str) -> DriverResult | None:
        """The user closes the modal; ``view_closed`` is sent only if ``notify_on_close``."""
        user = self._user(user_id)
        opened = self.ws.views.get(view_id)
        if opened is None:
            raise DriverError(f"View {view_id} is not open.")
        result = None
        if opened.view.get("notify_on_close"):
            payload = payloads.view_payload("view_closed", user, opened.view, trigger_id=None)
            result = await self.dispatch("interactive", payloads.interaction_body(payload))
        views.close_top(self.ws, user.id)
        return result


def socket_payload(kind: str, body: bytes) -> JSON:
    """The envelope payload for an HTTP body: form fields, the ``payload`` JSON, or the event."""
    if kind == "slash_commands":
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    if kind == "interactive":
        loaded = json.loads(dict(parse_qsl(body.decode("utf-8")))["payload"])
    else:
        loaded = json.loads(body)
    if not isinstance(loaded, dict):
        raise ValueError(f"a {kind} payload must be a JSON object")
    return loaded
