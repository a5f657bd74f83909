"""``POST /slack/events``: verify, then parse, then hand Bolt a checked body.

Bolt's own HTTP handler parses the body *before* it checks the signature, and parses it
with a substring test (``"payload" in body``; ``slack_bolt/request/internals.py``
``parse_body``). So an unsigned ``payload=%7Bx`` ended in a 500 with a traceback, and a
signed slash command whose text merely contains the word "payload" was parsed as an empty
interaction and answered 404 (Slack shows the user ``dispatch_failed``). This edge does the
steps in the safe order, each answered with at most one log line and never a 5xx:

0. Slack's ``ssl_check`` probe (only ``ssl_check=1`` and ``token``) is answered 200 with
   nothing done, signed or not, as Bolt does;
1. the signature over the raw bytes (``v0:{timestamp}:{body}``, HMAC-SHA256, timestamps
   within 5 minutes; reference/slack.md 1.1): otherwise 401;
2. a replay of a request already received (same signature) within that window: 200 with an
   empty body, nothing done. The memory is per process: with two replicas behind a load
   balancer a replay that lands on the other replica is not caught there (buttons stay
   safe: their effects are claimed in the shared store);
3. the body parsed by its ``Content-Type``, the form decoded field by field (a slash
   command is a form with ``command``; an interaction is a form whose only field is
   ``payload``); garbage gets 400;
4. the envelope Bolt routes on (``bot.slack.payloads.check_envelope``): a signed request
   that is malformed there is answered 200 (Slack would show an error icon otherwise) and
   reported to ``on_malformed`` (an ephemeral message and an audit row); 400 when no user
   can be told.

Bolt then gets the parsed dict (``mode="socket_mode"`` is Bolt's only constructor for a
pre-parsed body; it skips Bolt's own signature check, which step 1 already did on the raw
bytes). Bolt's other entry points keep their own verification.

5. except the slash command (``command``, given as ``SlashCommand``): its listener is called
   here, with Bolt's own ``AsyncAck``, so the answer is what Bolt would send, byte for byte.
   Bolt's dispatch did nothing else for it that gpunode uses (its middleware checks what
   steps 0-4 checked, or concerns events; its authorization's ``auth.test`` result is not
   read by the listener), and on a busy loop it cost a slash command more CPU than
   the listener itself: a context with a new Web API client, keyword arguments built twice
   by inspection, and an ack polled every 10 ms. A listener that fails before acking is
   answered 500 and logged, as Bolt does.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.errors import RequestError
from bot.slack.payloads import PayloadError, addressee, check_envelope, printable

log = logging.getLogger(__name__)

#: Slack refuses to sign with timestamps older than 5 minutes, and so do we (slack.md 1.1)
WINDOW_S = 300
#: 5 minutes of Slack traffic for one bot is far below this; past it the entry closest to
#: expiry is dropped first (a replay of it is then possible for the rest of its window)
MAX_REMEMBERED = 100_000
FORM = "application/x-www-form-urlencoded"
JSON_TYPE = "application/json"
MAX_FORM_FIELDS = 64  # a slash command has 16 fields


@dataclass(frozen=True)
class Malformed:
    """A signed request gpunode cannot use, for ``on_malformed`` to tell and audit."""

    kind: str  # "slash_command" | "block_actions" | "view_submission" | "event" | ...
    user: str | None
    channel: str | None
    problem: str


@dataclass(frozen=True)
class SlashCommand:
    """A slash command the edge answers itself: its ``name`` (``/gpunode``) and its Bolt
    listener, called as Bolt calls it (``ack``, ``body``)."""

    name: str
    listener: Callable[[Any, dict[str, Any]], Awaitable[None]]


class ReplayGuard:
    """Signatures seen within their validity window, bounded (``MAX_REMEMBERED``)."""

    def __init__(
        self,
        *,
        window_s: int = WINDOW_S,
        max_entries: int = MAX_REMEMBERED,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._window_s = window_s
        self._max = max_entries
        self._clock = clock
        self._expiry: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []

    def __len__(self) -> int:
        return len(self._expiry)

    def first_time(self, timestamp: int, signature: str) -> bool:
        """True the first time ``signature`` is seen while its timestamp is valid."""
        now = self._clock()
        while self._heap and (self._heap[0][0] < now or len(self._heap) > self._max):
            _, old = heapq.heappop(self._heap)
            self._expiry.pop(old, None)
        if signature in self._expiry:
            return False
        # valid until the verifier would refuse its timestamp (it allows skew both ways)
        expires = timestamp + self._window_s + 1
        self._expiry[signature] = expires
        heapq.heappush(self._heap, (expires, signature))
        return True


def signed(
    raw: bytes, timestamp: str, signature: str, *, secret: bytes, now: float
) -> tuple[bool, str]:
    """(valid, why not) for Slack's v0 request signature over the exact bytes received."""
    if not timestamp or not signature:
        return False, "no signature headers"
    if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 12):
        return False, "malformed timestamp"
    if abs(now - int(timestamp)) > WINDOW_S:
        return False, "timestamp outside the 5-minute window"
    base = b"v0:" + timestamp.encode() + b":" + raw
    expected = "v0=" + hmac.new(secret, base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        return False, "signature mismatch"
    return True, ""


def parse_body(raw: bytes, content_type: str) -> dict[str, Any]:
    """The request as one JSON object; RequestError for anything Slack does not send."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestError("the body is not UTF-8") from None
    if content_type == JSON_TYPE:
        return _json_object(text, "the JSON body")
    if content_type != FORM:
        raise RequestError(f"unsupported content type {content_type[:60]!r}")
    try:
        pairs = form_pairs(text)
    except (ValueError, UnicodeDecodeError):
        raise RequestError("the form body does not parse") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):
        raise RequestError("the form repeats a field")
    if "command" in fields:
        return fields  # a slash command: every field a string, ``text`` whatever was typed
    if set(fields) == {"payload"}:
        return _json_object(fields["payload"], "the interaction payload")
    raise RequestError("a form that is neither a slash command nor an interaction")


def form_pairs(text: str) -> list[tuple[str, str]]:
    """``parse_qsl(text, keep_blank_values=True, strict_parsing=True,
    max_num_fields=MAX_FORM_FIELDS, errors="strict")``, for a text that is not empty: a
    ValueError for a field without ``=`` (an empty one too) or too many fields. It decodes
    only the names and values that hold ``%`` or ``+``: a slash command's ids never do, and
    the stdlib's loop over every field was a tenth of an ack's CPU."""
    if not text:
        return []
    fields = text.split("&")
    if len(fields) > MAX_FORM_FIELDS:
        raise ValueError("Max number of fields exceeded")
    pairs = []
    for field in fields:
        name, sep, value = field.partition("=")
        if not sep:
            raise ValueError("bad query field")
        if "%" in field or "+" in field:
            name = unquote(name.replace("+", " "), errors="strict")
            value = unquote(value.replace("+", " "), errors="strict")
        pairs.append((name, value))
    return pairs


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise RequestError(f"{what} is not JSON") from None
    if not isinstance(data, dict):
        raise RequestError(f"{what} is not a JSON object")
    return data


def _is_ssl_check(raw: bytes, content_type: str) -> bool:
    """Slack's certificate probe of a slash command URL (``ssl_check=1&token=...``): Bolt
    answers it before verifying, as it may come unsigned; it carries nothing to act on."""
    if content_type != FORM or len(raw) > 512 or b"ssl_check" not in raw:
        return False  # every slash command and interaction: no second parse of the form
    fields = dict(parse_qsl(raw.decode("ascii", "replace"), keep_blank_values=True))
    return fields.get("ssl_check") == "1" and set(fields) <= {"ssl_check", "token"}


def _kind(body: dict[str, Any]) -> str:
    if "command" in body:
        return "slash_command"
    return printable(str(body.get("type") or "unknown"), 40)


class SlackEdge:
    """The aiohttp handler for ``/slack/events`` in HTTP mode (see the module docstring)."""

    def __init__(
        self,
        app: AsyncApp,
        *,
        signing_secret: str,
        on_malformed: Callable[[Malformed], None],
        replay: ReplayGuard | None = None,
        clock: Callable[[], float] = time.time,
        command: SlashCommand | None = None,
    ) -> None:
        self._app = app
        self._command = command
        self._secret = signing_secret.encode()
        self._on_malformed = on_malformed
        self._clock = clock
        self.replay = replay or ReplayGuard(clock=clock)

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        if _is_ssl_check(raw, request.content_type):
            return web.Response(status=200)  # does nothing; Bolt answers these unsigned too
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        ok, why = signed(raw, timestamp, signature, secret=self._secret, now=self._clock())
        if not ok:
            log.warning("refused a Slack request from %s: %s", request.remote, why)
            return web.json_response({"error": "invalid request signature"}, status=401)
        if not self.replay.first_time(int(timestamp), signature):
            log.warning("dropped a replayed Slack request (timestamp %s)", timestamp)
            return web.Response(status=200)
        try:
            body = parse_body(raw, request.content_type)
        except RequestError as err:
            log.warning("refused a signed Slack request: %s", err.message)
            return web.json_response({"error": err.message}, status=400)
        try:
            check_envelope(body)
        except PayloadError as err:
            user, channel = addressee(body)
            kind = _kind(body)
            log.warning("refused a malformed %s from %s: %s", kind, user, err.message)
            self._on_malformed(Malformed(kind, user, channel, err.message))
            if user is None:
                return web.json_response({"error": err.message}, status=400)
            return web.Response(status=200)
        if self._command is not None and body.get("command") == self._command.name:
            return await self._answer_command(body)
        bolt_request = AsyncBoltRequest(
            body=body,
            query=request.query_string,
            headers=dict(request.headers.items()),
            mode="socket_mode",
        )
        return await to_aiohttp_response(await self._app.async_dispatch(bolt_request))

    async def _answer_command(self, body: dict[str, Any]) -> web.Response:
        """Step 5: the slash command's listener, with Bolt's ``AsyncAck``."""
        assert self._command is not None
        ack = AsyncAck()  # type: ignore[no-untyped-call]  # Bolt leaves __init__ untyped
        try:
            await self._command.listener(ack, body)
        except Exception:
            log.exception("the %s listener failed", self._command.name)
            if ack.response is None:
                return web.Response(status=500)
        if ack.response is None:  # Bolt's answer to a listener that never acks
            log.warning("the %s listener did not acknowledge", self._command.name)
            return web.json_response({"error": "no response from listener"}, status=404)
        return await to_aiohttp_response(ack.response)
