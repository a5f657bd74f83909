"""Web API methods for messages and the directory (chat.*, conversations.*, users.*, ...).

Each handler takes the workspace and the merged call arguments and returns the success body
or raises :class:`ApiError` with Slack's error code. Sandbox choices that Slack does not
document are marked as such.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from gpunode_sandbox.slacksim.apierrors import ApiError
from gpunode_sandbox.slacksim.blocks import normalize_blocks, text_length
from gpunode_sandbox.slacksim.state import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    TEAM_DOMAIN,
    TEAM_ID,
    Workspace,
)
from gpunode_sandbox.slacksim.validation import BLOCKS_TEXT_MAX, blocks_errors

JSON = dict[str, Any]
Handler = Callable[[Workspace, JSON], JSON]
TEXT_TRUNCATE = 40_000  # chat.postMessage truncates above this (slack.md 2.2)
TEXT_MAX_STRICT = 4_000  # chat.update / chat.postEphemeral: msg_too_long above this


def truthy(value: Any) -> bool:
    return value in (True, 1, "1", "true", "True")


def require(args: JSON, *names: str) -> None:
    missing = [n for n in names if args.get(n) in (None, "")]
    if missing:
        raise ApiError(
            "invalid_arguments",
            response_metadata={
                "messages": [f"[ERROR] missing required field: {n}" for n in missing]
            },
        )


def channel_id(ws: Workspace, args: JSON) -> str:
    require(args, "channel")
    raw = str(args["channel"])
    if raw in ws.channels:
        return raw
    for ch in ws.channels.values():
        if raw.lstrip("#") == ch.name.lstrip("#"):
            return ch.id
    raise ApiError("channel_not_found")


def parse_blocks(args: JSON) -> list[JSON] | None:
    """``blocks`` as a list (JSON clients send arrays, form clients JSON strings)."""
    raw = args.get("blocks")
    if raw is None or raw == "":
        return None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ApiError("invalid_blocks_format") from exc
    if not isinstance(raw, list):
        raise ApiError("invalid_blocks_format")
    return raw


def checked_content(args: JSON, *, strict_len: bool) -> tuple[str, list[JSON] | None, list[str]]:
    """(text, stored blocks, warnings) after Slack's checks on text and blocks."""
    text = str(args.get("text") or "")
    blocks = parse_blocks(args)
    if blocks is not None:
        errors = blocks_errors(blocks)
        if errors:
            raise ApiError("invalid_blocks", errors=errors, response_metadata={"messages": errors})
        if text_length(blocks) > BLOCKS_TEXT_MAX:
            raise ApiError("msg_blocks_too_long")
    if not text and not blocks and not args.get("attachments"):
        raise ApiError("no_text")
    warnings = []
    if strict_len and len(text) > TEXT_MAX_STRICT:
        raise ApiError("msg_too_long")
    if len(text) > TEXT_TRUNCATE:
        text, warnings = text[:TEXT_TRUNCATE], ["message_truncated"]
    return text, (normalize_blocks(blocks) if blocks is not None else None), warnings


def bot_message(text: str, blocks: list[JSON] | None) -> JSON:
    msg: JSON = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "app_id": APP_ID}
    msg.update(text=text, team=TEAM_ID)
    if blocks is not None:
        msg["blocks"] = blocks
    return msg


def with_warnings(body: JSON, warnings: list[str]) -> JSON:
    if warnings:
        body["warning"] = ",".join(warnings)
        body["response_metadata"] = {"warnings": warnings}
    return body


def auth_test(ws: Workspace, args: JSON) -> JSON:
    return {
        "url": f"https://{TEAM_DOMAIN}.slack.com/",
        "team": "gpunode sandbox",
        "user": "gpunode",
        "team_id": TEAM_ID,
        "user_id": BOT_USER_ID,
        "bot_id": BOT_ID,
        "is_enterprise_install": False,
    }


def chat_post_message(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    if not ws.channels[channel].bot_member:
        raise ApiError("not_in_channel")  # a public channel the bot was not invited to
    text, blocks, warnings = checked_content(args, strict_len=False)
    thread_ts = args.get("thread_ts") or None
    if thread_ts is not None and thread_ts not in ws.messages[channel]:
        raise ApiError("thread_not_found")  # sandbox choice: Slack's behaviour is undocumented
    msg = bot_message(text, blocks)
    if thread_ts is not None and truthy(args.get("reply_broadcast")):
        msg["subtype"] = "thread_broadcast"
    stored = ws.store(channel, msg, thread_ts=thread_ts)
    body = {"channel": channel, "ts": stored["ts"], "message": copy.deepcopy(stored)}
    return with_warnings(body, warnings)


def chat_update(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    require(args, "ts")
    msg = ws.messages[channel].get(str(args["ts"]))
    if msg is None:
        raise ApiError("message_not_found")  # ephemerals are never found: Slack keeps none
    if msg.get("bot_id") != BOT_ID:
        raise ApiError("cant_update_message")
    if args.get("text") is None and parse_blocks(args) is None:
        args = {**args, "text": msg.get("text", "")}
    text, blocks, _ = checked_content(args, strict_len=True)
    msg["text"] = text
    if blocks is not None:  # chat.update keeps the previous blocks unless new ones are given
        msg["blocks"] = blocks
    msg["edited"] = {"user": BOT_USER_ID, "ts": ws.next_ts()}
    ws.changed()
    return {"channel": channel, "ts": msg["ts"], "text": text, "message": copy.deepcopy(msg)}


def chat_post_ephemeral(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    require(args, "user")
    if args["user"] not in ws.users:
        raise ApiError("user_not_in_channel")
    text, blocks, _ = checked_content(args, strict_len=True)
    msg = bot_message(text, blocks)
    if args.get("thread_ts"):
        msg["thread_ts"] = args["thread_ts"]
    eph = ws.add_ephemeral(str(args["user"]), channel, msg)
    return {"message_ts": eph.ts}


def chat_delete(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    require(args, "ts")
    msg = ws.messages[channel].get(str(args["ts"]))
    if msg is None:
        raise ApiError("message_not_found")
    if msg.get("bot_id") != BOT_ID:
        raise ApiError("cant_delete_message")
    ws.delete(channel, msg["ts"])
    return {"channel": channel, "ts": msg["ts"]}


def _page(items: list[JSON], args: JSON, default: int) -> JSON:
    limit = int(args.get("limit") or default)
    cursor = str(args.get("cursor") or "")
    try:
        start = int(cursor.removeprefix("off_")) if cursor else 0
    except ValueError as exc:
        raise ApiError("invalid_cursor") from exc
    page = items[start : start + limit]
    more = start + limit < len(items)
    return {
        "messages": page,
        "has_more": more,
        "response_metadata": {"next_cursor": f"off_{start + limit}" if more else ""},
    }


def conversations_replies(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    require(args, "ts")
    msgs = ws.thread(channel, str(args["ts"]))
    if not msgs:
        raise ApiError("thread_not_found")
    return _page(msgs, args, 1000)


def conversations_history(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    return _page(list(reversed(ws.top_level(channel))), args, 100)


def conversations_info(ws: Workspace, args: JSON) -> JSON:
    ch = ws.channels[channel_id(ws, args)]
    return {
        "channel": {
            "id": ch.id,
            "name": ch.name.lstrip("#"),
            "is_channel": True,
            "is_private": False,
            "is_archived": False,
            "is_member": True,
        }
    }


def users_info(ws: Workspace, args: JSON) -> JSON:
    require(args, "user")
    user = ws.users.get(str(args["user"]))
    if user is None:
        raise ApiError("user_not_found")
    return {"user": user.to_api(include_locale=truthy(args.get("include_locale")))}


def usergroups_users_list(ws: Workspace, args: JSON) -> JSON:
    require(args, "usergroup")
    group = ws.usergroups.get(str(args["usergroup"]))
    if group is None:
        raise ApiError("no_such_subteam")
    return {"users": list(group.members)}


def usergroups_list(ws: Workspace, args: JSON) -> JSON:
    groups = []
    for g in ws.usergroups.values():
        entry: JSON = {"id": g.id, "team_id": TEAM_ID, "handle": g.handle, "name": g.handle}
        entry["user_count"] = len(g.members)
        if truthy(args.get("include_users")):
            entry["users"] = list(g.members)
        groups.append(entry)
    return {"usergroups": groups}


def reactions_add(ws: Workspace, args: JSON) -> JSON:
    channel = channel_id(ws, args)
    require(args, "timestamp", "name")
    msg = ws.messages[channel].get(str(args["timestamp"]))
    if msg is None:
        raise ApiError("message_not_found")
    name = str(args["name"]).strip(":")
    reactions = msg.setdefault("reactions", [])
    entry = next((r for r in reactions if r["name"] == name), None)
    if entry is None:
        entry = {"name": name, "users": [], "count": 0}
        reactions.append(entry)
    if BOT_USER_ID in entry["users"]:
        raise ApiError("already_reacted")
    entry["users"].append(BOT_USER_ID)
    entry["count"] += 1
    ws.changed()
    return {}


HANDLERS: dict[str, Handler] = {
    "auth.test": auth_test,
    "chat.postMessage": chat_post_message,
    "chat.update": chat_update,
    "chat.postEphemeral": chat_post_ephemeral,
    "chat.delete": chat_delete,
    "conversations.replies": conversations_replies,
    "conversations.history": conversations_history,
    "conversations.info": conversations_info,
    "users.info": users_info,
    "usergroups.users.list": usergroups_users_list,
    "usergroups.list": usergroups_list,
    "reactions.add": reactions_add,
}
