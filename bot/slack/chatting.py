"""``SlackChat``: the ChatPort over slack_sdk's AsyncWebClient.

Rate limits are retried by the client's ``AsyncRateLimitErrorRetryHandler`` (it honours
Retry-After); connection errors by ``AsyncConnectionErrorRetryHandler``. Whatever still
fails becomes ``SlackError`` here, once. Tokens never appear in messages or logs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from bot.errors import SlackError

log = logging.getLogger(__name__)

#: how long a failed locale lookup is remembered before Slack is asked again
FAILED_LOCALE_TTL_S = 60.0

#: what a Web API call can raise: Slack's errors, and aiohttp's own when the connection
#: fails after the retry handlers gave up (slack_sdk does not wrap those)
_FAILURES = (SlackApiError, SlackClientError, aiohttp.ClientError, asyncio.TimeoutError)


def make_client(
    token: str, *, base_url: str, max_retries: int = 3, share_session: bool = False
) -> ObservedWebClient:
    """``share_session``: one aiohttp session for every call (``gpunode serve``; whoever
    sets it closes the client with ``close()``, as ``Runtime.close`` does)."""
    client = ObservedWebClient(token=token, base_url=base_url)
    client.share_session = share_session
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=max_retries))
    client.retry_handlers.append(AsyncConnectionErrorRetryHandler(max_retry_count=2))
    return client


#: ``(method, HTTP status or None, Slack error code or None)`` after each Web API call
SlackObserver = Callable[[str, int | None, str | None], None]


class ObservedWebClient(AsyncWebClient):
    """AsyncWebClient that reports every Web API call's end to ``observer``: the one place
    Slack calls are counted, whoever makes them (``SlackChat``, Bolt's listeners, Socket
    Mode's ``apps.connections.open``). Every method of the SDK goes through ``api_call``;
    it runs after the client's retry handlers, so a rate limit retried into success is one
    successful call. An observer that fails is logged, never raised into the call."""

    observer: SlackObserver | None = None
    share_session = False
    #: the session this client made for itself, and the loop it belongs to
    _own: tuple[aiohttp.ClientSession, asyncio.AbstractEventLoop] | None = None

    def _shared_session(self) -> None:
        """One aiohttp session (one connection pool, kept-alive TLS connections) for every
        call on this loop: without one the SDK opens and closes a session per call, a new
        connection and TLS handshake each time (9 per diagnosis, issue #25)."""
        loop = asyncio.get_running_loop()
        own = self._own
        if own is not None and own[1] is loop and not own[0].closed:
            return
        if self.session is not None and own is None:
            return  # given by the caller: theirs to manage
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.timeout),
            trust_env=self.trust_env_in_session,
        )
        self._own = (self.session, loop)

    async def close(self) -> None:
        """Close the session this client made (``SlackChat.close`` and shutdown call it)."""
        own, self._own = self._own, None
        if own is not None:
            self.session = None
            if own[1] is asyncio.get_running_loop():
                await own[0].close()

    async def api_call(self, api_method: str, **kwargs: Any) -> AsyncSlackResponse:
        if self.share_session:
            self._shared_session()
        try:
            response = await super().api_call(api_method, **kwargs)
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", None)
            code = exc.response.get("error") if exc.response is not None else None
            self._observe(api_method, status, str(code or f"http_{status or 0}"))
            raise
        except (SlackClientError, aiohttp.ClientError) as exc:
            self._observe(api_method, None, "connection_error")
            raise exc
        except TimeoutError:
            self._observe(api_method, None, "timeout")
            raise
        self._observe(api_method, response.status_code, None)
        return response

    def _observe(self, method: str, status: int | None, error: str | None) -> None:
        if self.observer is None:
            return
        try:
            self.observer(method, status, error)
        except Exception:
            log.exception("the Slack call observer failed")


def _fail(method: str, exc: Exception) -> SlackError:
    if isinstance(exc, SlackApiError):
        error = exc.response.get("error", "unknown_error") if exc.response else "unknown_error"
        return SlackError(f"Slack {method} failed: {error}", code=str(error))
    return SlackError(f"Slack {method} failed: {type(exc).__name__}; check connectivity")


class SlackChat:
    """ChatPort implementation. ``usergroup_members`` is cached for ``cache_ttl_s``, a
    person's locale for ``locale_ttl_s`` (people rarely change their Slack language)."""

    def __init__(
        self, client: AsyncWebClient, *, cache_ttl_s: float = 300.0, locale_ttl_s: float = 3600.0
    ) -> None:
        self._client = client
        self._ttl = cache_ttl_s
        self._locale_ttl = locale_ttl_s
        self._groups: dict[str, tuple[float, list[str]]] = {}
        self._names: dict[str, str] = {}
        self._locales: dict[str, tuple[float, str | None]] = {}
        self._locale_lookups: dict[str, asyncio.Future[str | None]] = {}

    @property
    def client(self) -> AsyncWebClient:
        return self._client

    async def post(
        self, channel: str, *, text: str, blocks: list[dict[str, Any]], thread_ts: str | None
    ) -> str:
        try:
            resp = await self._client.chat_postMessage(
                channel=channel, text=text, blocks=blocks, thread_ts=thread_ts
            )
        except _FAILURES as exc:
            raise _fail("chat.postMessage", exc) from exc
        return str(resp["ts"])

    async def update(
        self, channel: str, ts: str, *, text: str, blocks: list[dict[str, Any]]
    ) -> None:
        try:
            await self._client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)
        except _FAILURES as exc:
            raise _fail("chat.update", exc) from exc

    async def post_ephemeral(
        self,
        channel: str,
        user: str,
        *,
        text: str,
        blocks: list[dict[str, Any]],
        thread_ts: str | None = None,
    ) -> None:
        try:
            await self._client.chat_postEphemeral(
                channel=channel, user=user, text=text, blocks=blocks, thread_ts=thread_ts
            )
        except _FAILURES as exc:
            raise _fail("chat.postEphemeral", exc) from exc

    async def upload(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        filename: str,
        title: str,
        content: str | bytes,
        alt_txt: str | None = None,
    ) -> None:
        """Slack's upload flow (``files_upload_v2``): ``files.getUploadURLExternal`` with the
        byte length, the bytes POSTed to the returned ``upload_url``, then
        ``files.completeUploadExternal`` with ``channel_id`` and ``thread_ts``."""
        try:
            await self._client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                filename=filename,
                title=title,
                alt_txt=alt_txt,
                **({"file": content} if isinstance(content, bytes) else {"content": content}),
            )
        except _FAILURES as exc:
            raise _fail("files.upload", exc) from exc

    async def upload_files(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        files: list[tuple[str, str, str]],
        comment: str,
    ) -> None:
        """``files_upload_v2`` with ``file_uploads``: one ``files.getUploadURLExternal`` and
        one POST per file, then a single ``files.completeUploadExternal`` sharing them all
        in one message whose text is ``comment``."""
        uploads = [{"filename": n, "title": t, "content": c} for n, t, c in files]
        try:
            await self._client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                file_uploads=uploads,
                initial_comment=comment,
            )
        except _FAILURES as exc:
            raise _fail("files.upload", exc) from exc

    async def open_view(self, trigger_id: str, view: dict[str, Any]) -> str:
        try:
            resp = await self._client.views_open(trigger_id=trigger_id, view=view)
        except _FAILURES as exc:
            raise _fail("views.open", exc) from exc
        return str(resp["view"]["id"])

    async def publish_home(self, user: str, view: dict[str, Any]) -> None:
        try:
            await self._client.views_publish(user_id=user, view=view)
        except _FAILURES as exc:
            raise _fail("views.publish", exc) from exc

    async def pin(self, channel: str, ts: str) -> None:
        try:
            await self._client.pins_add(channel=channel, timestamp=ts)
        except SlackApiError as exc:
            if exc.response.get("error") == "already_pinned":
                return
            raise _fail("pins.add", exc) from exc
        except _FAILURES as exc:
            raise _fail("pins.add", exc) from exc

    async def user_name(self, user_id: str) -> str:
        """``users.info``: the display name (with the real name when it differs), cached per
        process; a lookup that fails gives the id back (a name is never worth a failure)."""
        if user_id in self._names:
            return self._names[user_id]
        try:
            resp = await self._client.users_info(user=user_id)
        except _FAILURES:
            return user_id
        user = resp.get("user") or {}
        profile = user.get("profile") or {}
        display = profile.get("display_name") or user.get("name") or user_id
        real = profile.get("real_name") or user.get("real_name") or ""
        name = f"{display} ({real})" if real and real != display else str(display)
        self._names[user_id] = name
        return name

    async def user_locale(self, user_id: str) -> str | None:
        """``users.info`` with ``include_locale``: the person's Slack locale as Slack spells
        it (``zh-CN``, ``en-US``), cached per person for ``locale_ttl_s``. None when it cannot
        be read (``missing_scope`` without ``users:read``, ``user_not_found``, Slack down):
        the caller falls back to the default, and the log says why (the error code only).

        One lookup per person at a time: callers asking while it runs wait for that one
        (forty commands from three people ask Slack three times, not forty). A caller that
        stops waiting (a timeout) does not stop it: its answer is cached for the next."""
        if not user_id:
            return None
        cached = self._locales.get(user_id)
        if cached is not None and time.monotonic() - cached[0] < self._locale_ttl:
            return cached[1]
        flight = self._locale_lookups.get(user_id)
        if flight is None or flight.get_loop() is not asyncio.get_running_loop():
            flight = asyncio.ensure_future(self._read_locale(user_id))
            self._locale_lookups[user_id] = flight
            flight.add_done_callback(lambda _: self._locale_lookups.pop(user_id, None))
        return await asyncio.shield(flight)

    async def _read_locale(self, user_id: str) -> str | None:
        now = time.monotonic()
        try:
            resp = await self._client.users_info(user=user_id, include_locale=True)
        except _FAILURES as exc:
            log.warning(
                "the Slack locale of %s is unknown (%s); writing in the default language",
                user_id,
                _fail("users.info", exc).code,
            )
            # remembered briefly, so a missing scope costs one call a minute, not one a message
            self._locales[user_id] = (now - max(self._locale_ttl - FAILED_LOCALE_TTL_S, 0), None)
            return None
        locale = (resp.get("user") or {}).get("locale")
        found = str(locale) if isinstance(locale, str) and locale else None
        self._locales[user_id] = (now, found)
        return found

    async def usergroup_members(self, usergroup_id: str) -> list[str]:
        cached = self._groups.get(usergroup_id)
        now = time.monotonic()
        if cached and now - cached[0] < self._ttl:
            return cached[1]
        try:
            resp = await self._client.usergroups_users_list(usergroup=usergroup_id)
        except _FAILURES as exc:
            raise _fail("usergroups.users.list", exc) from exc
        users: list[Any] = list(resp.get("users") or [])
        members = [str(u) for u in users]
        self._groups[usergroup_id] = (now, members)
        return members
