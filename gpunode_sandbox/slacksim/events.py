"""Events API deliveries: human messages, mentions, url_verification, retries.

A human message is stored first (so ``conversations.replies`` sees it), then delivered as an
``event_callback``. Every event has a unique ``event_id``; a redelivery repeats the same
``event_id`` with ``X-Slack-Retry-Num`` / ``X-Slack-Retry-Reason`` (slack.md section 1.7).
With ``retry_failed`` on, a non-2xx or late (over 3 s) reply triggers up to 3 retries, sent
back to back (Slack waits about 1 and 5 minutes between them; the sandbox does not).
In Socket Mode the envelope carries ``retry_attempt`` / ``retry_reason`` instead of headers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gpunode_sandbox.slacksim import payloads
from gpunode_sandbox.slacksim.apierrors import DriverError
from gpunode_sandbox.slacksim.driver import Driver, DriverResult, SignOptions
from gpunode_sandbox.slacksim.methods_home import home_channel
from gpunode_sandbox.slacksim.state import BOT_USER_ID, TEAM_ID

JSON = dict[str, Any]
MAX_RETRIES = 3


@dataclass(frozen=True)
class EventDelivery:
    event_id: str
    retry_num: int
    result: DriverResult


class EventSender:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.ws = driver.ws
        self.deliveries: list[EventDelivery] = []
        self.retry_failed = False

    async def deliver(
        self, event: JSON, *, deliveries: int = 1, signing: SignOptions | None = None
    ) -> list[DriverResult]:
        """Deliver ``event`` ``deliveries`` times under one event_id (plus automatic retries)."""
        event_id = self.ws.new_id("Ev")
        body = payloads.event_envelope(event, event_id=event_id, event_time=int(self.ws.clock()))
        results: list[DriverResult] = []
        for attempt in range(MAX_RETRIES + 1):
            if attempt >= max(1, deliveries) and not self._should_retry(results[-1]):
                break
            extra = {}
            if attempt:
                # a forced redelivery of a 2xx reply is reported as Slack's usual http_timeout
                reason = "http_error" if results[-1].status >= 300 else "http_timeout"
                extra = {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason}
            result = await self.driver.dispatch(
                "events_api",
                body,
                content_type="application/json",
                signing=signing,
                extra_headers=extra,
                retry_attempt=attempt,
            )
            results.append(result)
            self.deliveries.append(EventDelivery(event_id, attempt, result))
        return results

    def _should_retry(self, last: DriverResult) -> bool:
        failed = not 200 <= last.status < 300 or last.late
        return self.retry_failed and failed and last.headers.get("X-Slack-No-Retry") != "1"

    def _store_human(self, user_id: str, channel_id: str, text: str, thread_ts: str | None) -> JSON:
        if user_id not in self.ws.users:
            raise DriverError(f"Unknown user {user_id!r}: add it with sim.add_user first.")
        history = self.ws.messages.get(channel_id)
        if history is None:
            raise DriverError(f"Unknown channel {channel_id!r}.")
        if thread_ts is not None and thread_ts not in history:
            raise DriverError(f"No thread {thread_ts} in {channel_id}.")
        rich = {
            "type": "rich_text",
            "block_id": self.ws.new_id("r")[:5],
            "elements": [
                {"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}
            ],
        }
        msg = {"type": "message", "user": user_id, "text": text, "team": TEAM_ID, "blocks": [rich]}
        return self.ws.store(channel_id, msg, thread_ts=thread_ts)

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
        stored = self._store_human(user_id, channel_id, payloads.escape_text(text), thread_ts)
        event = payloads.message_event(stored, channel=channel_id)
        await self.deliver(event, deliveries=deliveries, signing=signing)
        return str(stored["ts"])

    async def mention(
        self, user_id: str, channel_id: str, text: str, *, thread_ts: str | None = None
    ) -> str:
        """A message mentioning the bot: delivers ``message`` and ``app_mention`` events."""
        tag = f"<@{BOT_USER_ID}>"
        if tag not in text:
            text = f"{tag} {text}"
        # what the person typed is escaped; the mention itself is Slack's control sequence
        text = payloads.escape_text(text).replace(payloads.escape_text(tag), tag)
        stored = self._store_human(user_id, channel_id, text, thread_ts)
        await self.deliver(payloads.message_event(stored, channel=channel_id))
        await self.deliver(payloads.message_event(stored, channel=channel_id, kind="app_mention"))
        return str(stored["ts"])

    async def open_home(self, user_id: str) -> list[DriverResult]:
        """``user_id`` opens the app's Home tab: an ``app_home_opened`` event (tab ``home``),
        with the view last published for them when there is one (Slack's event reference)."""
        if user_id not in self.ws.users:
            raise DriverError(f"Unknown user {user_id!r}: add it with sim.add_user first.")
        event: JSON = {
            "type": "app_home_opened",
            "user": user_id,
            "channel": home_channel(user_id),
            "tab": "home",
            "event_ts": self.ws.next_ts(),
        }
        published = self.ws.homes.get(user_id)
        if published is not None:
            event["view"] = copy.deepcopy(published)
        return await self.deliver(event)

    async def url_verification(self, challenge: str) -> DriverResult:
        body = payloads.url_verification_body(challenge)
        return await self.driver.send(body, content_type="application/json")
