"""aiohttp routes of the Web API stand-in: ``POST|GET /api/<method>`` and the upload/file URLs.

Contract (reference/slack.md section 6.1): arguments are merged from the query string, a
form body and a JSON body; ``Authorization: Bearer xoxb-...`` (or a ``token`` argument) is
required, else ``not_authed`` / ``invalid_auth`` (methods in ``app_methods``, such as
``apps.connections.open``, take an app-level ``xapp-`` token instead;
a bot token there gets ``not_allowed_token_type``); API errors are HTTP 200 with
``{"ok": false, "error": ...}``, except rate limiting (429 + ``Retry-After``). Every call is
recorded in :attr:`WebApi.calls`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from gpunode_sandbox.slacksim import methods_chat, methods_files, methods_home, methods_views
from gpunode_sandbox.slacksim.apierrors import ApiError
from gpunode_sandbox.slacksim.state import Workspace

JSON = dict[str, Any]
Handler = Callable[[Workspace, JSON], JSON]
HANDLERS = {
    **methods_chat.HANDLERS,
    **methods_views.HANDLERS,
    **methods_files.HANDLERS,
    **methods_home.HANDLERS,
}
SCOPES = "commands,chat:write,chat:write.public,users:read,usergroups:read,files:write,"
SCOPES += "channels:history,groups:history,app_mentions:read,reactions:write,pins:write"
#: the bot scope each method needs (Slack's method reference); a token without it gets
#: ``{"ok": false, "error": "missing_scope", "needed": ..., "provided": ...}``
NEEDED_SCOPE = {
    "users.info": "users:read",
    "usergroups.users.list": "usergroups:read",
    "usergroups.list": "usergroups:read",
    "pins.add": "pins:write",
    "pins.remove": "pins:write",
    "pins.list": "pins:read",
}


@dataclass(frozen=True)
class ApiCall:
    """One recorded Web API call."""

    method: str
    args: JSON
    ok: bool
    error: str | None = None


@dataclass
class _Fault:
    error: str
    status: int
    times: int


@dataclass
class WebApi:
    ws: Workspace
    calls: list[ApiCall] = field(default_factory=list)
    rate_limited: dict[str, int] = field(default_factory=dict)
    faults: dict[str, _Fault] = field(default_factory=dict)
    #: methods called with an app-level (xapp-) token, e.g. apps.connections.open
    app_methods: dict[str, Handler] = field(default_factory=dict)
    #: the scopes the app's bot token was granted (``revoke_scope`` takes one away)
    scopes: list[str] = field(default_factory=lambda: SCOPES.split(","))
    #: methods whose calls wait, unanswered, until ``release`` (Slack slow or unreachable)
    held: dict[str, asyncio.Event] = field(default_factory=dict)

    def routes(self) -> list[web.RouteDef]:
        return [
            web.route("*", "/api/{method}", self.handle),
            web.post("/upload/v1/{fid}", self.upload),
            web.get("/files/{fid}/{name}", self.download),
        ]

    async def _args(self, request: web.Request) -> JSON:
        args: JSON = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            raw = await request.read()
            ctype = request.content_type
            if ctype == "application/json":
                try:
                    body = json.loads(raw or b"{}")
                except ValueError as exc:
                    raise ApiError("invalid_json") from exc
                if not isinstance(body, dict):
                    raise ApiError("invalid_json")
                args.update(body)
            elif raw:
                args.update(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
        return args

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args: JSON = {}
        headers: dict[str, str] = {}
        try:
            args = await self._args(request)
            gate = self.held.get(method)
            if gate is not None:
                await gate.wait()
            token = args.pop("token", None)
            auth = request.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                token = auth.removeprefix("Bearer ")
            if not token:
                raise ApiError("not_authed")
            handler = self._handler(method, str(token))
            self._check_scope(method)
            self._inject_faults(method)
            body = {"ok": True, **handler(self.ws, args)}
            status = 200
            if method == "auth.test":
                headers["x-oauth-scopes"] = ",".join(self.scopes)
            self.calls.append(ApiCall(method, args, True))
        except ApiError as err:
            body, status = err.body(), err.status
            if status == 429:
                headers.update({"Retry-After": "1", "x-slack-failure": err.error})
            self.calls.append(ApiCall(method, args, False, err.error))
        return web.json_response(body, status=status, headers=headers)

    def _handler(self, method: str, token: str) -> Handler:
        """The method's handler, once the token is of the kind it needs (xapp- or xoxb-)."""
        app_level = self.app_methods.get(method)
        if app_level is not None:
            if token.startswith(("xoxb-", "xoxp-")):
                raise ApiError("not_allowed_token_type")
            if not token.startswith("xapp-"):
                raise ApiError("invalid_auth")
            return app_level
        if not token.startswith("xoxb-"):
            raise ApiError("invalid_auth")
        handler = HANDLERS.get(method)
        if handler is None:
            raise ApiError("unknown_method", status=404)
        return handler

    def _check_scope(self, method: str) -> None:
        needed = NEEDED_SCOPE.get(method)
        if needed is not None and needed not in self.scopes:
            raise ApiError("missing_scope", needed=needed, provided=",".join(self.scopes))

    def revoke_scope(self, scope: str) -> None:
        """The app as installed without ``scope`` (an old manifest, a trimmed install)."""
        self.scopes = [s for s in self.scopes if s != scope]

    def _inject_faults(self, method: str) -> None:
        if self.rate_limited.get(method, 0) > 0:
            self.rate_limited[method] -= 1
            raise ApiError("ratelimited", status=429)
        fault = self.faults.get(method)
        if fault is not None and fault.times > 0:
            fault.times -= 1
            raise ApiError(fault.error, status=fault.status)

    def rate_limit(self, method: str, *, times: int = 1) -> None:
        self.rate_limited[method] = times

    def hold(self, method: str) -> None:
        """Calls of ``method`` from now on get no answer until ``release``."""
        self.held.setdefault(method, asyncio.Event())

    def release(self, method: str | None = None) -> None:
        """Answer the held calls of ``method`` (None: of every held method), and the next
        ones at once."""
        for name in [method] if method is not None else list(self.held):
            gate = self.held.pop(name, None)
            if gate is not None:
                gate.set()

    def fail(
        self, method: str, *, error: str = "fatal_error", times: int = 1, status: int = 200
    ) -> None:
        self.faults[method] = _Fault(error, status, times)

    async def upload(self, request: web.Request) -> web.Response:
        content = await request.read()
        if not methods_files.receive_upload(self.ws, request.match_info["fid"], content):
            return web.Response(status=404, text="file_not_found")
        return web.Response(text=f"OK - {len(content)}")

    async def download(self, request: web.Request) -> web.Response:
        f = self.ws.files.get(request.match_info["fid"])
        if f is None or f.content is None:
            return web.Response(status=404, text="file_not_found")
        mimetype = methods_files.mimetype_of(f.filename)
        charset = "utf-8" if mimetype.startswith("text/") else None
        return web.Response(body=f.content, content_type=mimetype, charset=charset)
