"""``response_url`` endpoints: what a bot's ``respond()`` does to the workspace.

Slack semantics (reference/slack.md section 1.6): JSON body; ``replace_original`` replaces the
source message (ephemeral sources too), ``delete_original`` deletes it, otherwise a new
message is posted, ephemeral unless ``response_type`` is ``in_channel``; ``thread_ts`` posts
into a thread. A URL works 5 times within 30 minutes; after that the stand-in answers 404
``used_url`` / ``expired_url`` (a sandbox choice: Slack's exact reply is undocumented).
Success is ``200 ok`` as text/plain.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from gpunode_sandbox.slacksim.apierrors import ApiError
from gpunode_sandbox.slacksim.methods_chat import bot_message, checked_content, truthy
from gpunode_sandbox.slacksim.state import ResponseUrl, Workspace

JSON = dict[str, Any]
MAX_USES = 5
MAX_AGE_S = 30 * 60


def apply_response(ws: Workspace, ctx: ResponseUrl, body: JSON) -> tuple[int, str]:
    """Apply one respond() payload; returns (HTTP status, plain-text body)."""
    if ctx.uses >= MAX_USES:
        return 404, "used_url"
    if ws.clock() - ctx.created_at > MAX_AGE_S:
        return 404, "expired_url"
    ctx.uses += 1
    if truthy(body.get("delete_original")):
        _delete_source(ws, ctx)
        return 200, "ok"
    try:
        text, blocks, _ = checked_content(body, strict_len=False)
    except ApiError as err:
        return 400, err.error
    if truthy(body.get("replace_original")) and ctx.source_ts is not None:
        _replace_source(ws, ctx, text, blocks)
        return 200, "ok"
    msg = bot_message(text, blocks)
    thread_ts = body.get("thread_ts") or None
    if body.get("response_type") == "in_channel":
        if thread_ts and thread_ts not in ws.messages[ctx.channel]:
            return 404, "thread_not_found"
        ws.store(ctx.channel, msg, thread_ts=thread_ts)
    else:
        if thread_ts:
            msg["thread_ts"] = thread_ts
        ws.add_ephemeral(ctx.user, ctx.channel, msg)
    return 200, "ok"


def _replace_source(ws: Workspace, ctx: ResponseUrl, text: str, blocks: list[JSON] | None) -> None:
    assert ctx.source_ts is not None
    if ctx.source_ephemeral:
        eph = ws.find_ephemeral(ctx.user, ctx.source_ts)
        if eph is not None:
            thread_ts = eph.message.get("thread_ts")
            eph.message = {**bot_message(text, blocks), "ts": eph.ts}
            if thread_ts:
                eph.message["thread_ts"] = thread_ts
    else:
        msg = ws.messages[ctx.channel].get(ctx.source_ts)
        if msg is not None:
            msg["text"] = text
            if blocks is not None:
                msg["blocks"] = blocks
            else:
                msg.pop("blocks", None)
    ws.changed()


def _delete_source(ws: Workspace, ctx: ResponseUrl) -> None:
    if ctx.source_ts is None:
        return
    if ctx.source_ephemeral:
        ws.ephemerals[ctx.user] = [
            e for e in ws.ephemerals.get(ctx.user, []) if e.ts != ctx.source_ts
        ]
        ws.changed()
    elif ctx.source_ts in ws.messages[ctx.channel]:
        ws.delete(ctx.channel, ctx.source_ts)


def routes(ws: Workspace) -> list[web.RouteDef]:
    async def hook(request: web.Request) -> web.Response:
        ctx = ws.response_urls.get(request.match_info["token"])
        if ctx is None:
            return web.Response(status=404, text="no_service")
        try:
            body = json.loads(await request.read())
        except ValueError:
            return web.Response(status=400, text="invalid_payload")
        if not isinstance(body, dict):
            return web.Response(status=400, text="invalid_payload")
        status, text = apply_response(ws, ctx, body)
        return web.Response(status=status, text=text)

    return [web.post("/hooks/{team}/{token}", hook)]
