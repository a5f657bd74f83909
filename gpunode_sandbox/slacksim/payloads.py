"""Request bodies exactly as Slack sends them to an app (reference/slack.md section 1).

Pure builders: every id, ts and URL comes in as an argument. Slash commands and interactions
are ``application/x-www-form-urlencoded`` (interactions as one ``payload=<JSON>`` field);
events are JSON envelopes.
"""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urlencode

from gpunode_sandbox.slacksim.state import APP_ID, BOT_USER_ID, TEAM_DOMAIN, TEAM_ID, User

JSON = dict[str, Any]
VERIFICATION_TOKEN = "sandbox-verification-token"  # deprecated by Slack; still sent


def escape_text(text: str) -> str:
    """What Slack does to what a person types before sending it to an app (slash command
    ``text``, message ``text``): ``&`` ``<`` ``>`` become entities; nothing else changes."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _user(user: User) -> JSON:
    return {"id": user.id, "username": user.name, "name": user.name, "team_id": TEAM_ID}


def _team() -> JSON:
    return {"id": TEAM_ID, "domain": TEAM_DOMAIN}


def slash_command_body(
    user: User,
    channel: tuple[str, str],
    text: str,
    *,
    command: str,
    response_url: str,
    trigger_id: str,
) -> bytes:
    fields = {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "team_domain": TEAM_DOMAIN,
        "channel_id": channel[0],
        "channel_name": channel[1].lstrip("#"),
        "user_id": user.id,
        "user_name": user.name,
        "command": command,
        "text": escape_text(text),
        "api_app_id": APP_ID,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id,
    }
    return urlencode(fields).encode()


def interaction_body(payload: JSON) -> bytes:
    return urlencode({"payload": json.dumps(payload, separators=(",", ":"))}).encode()


def block_actions(
    user: User,
    channel: tuple[str, str],
    message: JSON,
    action: JSON,
    *,
    ephemeral: bool,
    trigger_id: str,
    response_url: str,
) -> JSON:
    """A ``block_actions`` payload for a click on a message (ephemeral: no ``message``)."""
    container: JSON = {
        "type": "message",
        "message_ts": message["ts"],
        "channel_id": channel[0],
        "is_ephemeral": ephemeral,
    }
    if message.get("thread_ts"):
        container["thread_ts"] = message["thread_ts"]
    payload: JSON = {
        "type": "block_actions",
        "user": _user(user),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "container": container,
        "trigger_id": trigger_id,
        "team": _team(),
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel[0], "name": channel[1].lstrip("#")},
    }
    if not ephemeral:
        payload["message"] = copy.deepcopy(message)
    payload.update(state={"values": {}}, response_url=response_url, actions=[action])
    return payload


def action_of(block: JSON, element: JSON, *, value: str | None, action_ts: str) -> JSON:
    action: JSON = {
        "action_id": element.get("action_id"),
        "block_id": block.get("block_id"),
        "type": element.get("type"),
        "action_ts": action_ts,
    }
    for key in ("text", "style"):
        if key in element:
            action[key] = copy.deepcopy(element[key])
    chosen = value if value is not None else element.get("value")
    if chosen is not None:
        action["value"] = chosen
    return action


def view_payload(kind: str, user: User, view: JSON, *, trigger_id: str | None) -> JSON:
    """``view_submission`` / ``view_closed`` payload for the given stored view."""
    payload: JSON = {
        "type": kind,
        "team": _team(),
        "user": _user(user),
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "view": copy.deepcopy(view),
    }
    payload["enterprise"] = None
    payload["is_enterprise_install"] = False
    if kind == "view_submission":
        payload["trigger_id"] = trigger_id
        payload["response_urls"] = []
    else:
        payload["is_cleared"] = False
    return payload


def event_envelope(event: JSON, *, event_id: str, event_time: int) -> bytes:
    envelope = {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": event_time,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": f"4-{event.get('type')}-{TEAM_ID}-{event.get('channel', '')}",
    }
    return json.dumps(envelope, separators=(",", ":")).encode()


def url_verification_body(challenge: str) -> bytes:
    body = {"token": VERIFICATION_TOKEN, "challenge": challenge, "type": "url_verification"}
    return json.dumps(body).encode()


def message_event(message: JSON, *, channel: str, kind: str = "message") -> JSON:
    """Event for a stored user message (thread replies carry thread_ts + parent_user_id)."""
    event = {
        k: copy.deepcopy(v)
        for k, v in message.items()
        if k in ("user", "text", "ts", "thread_ts", "parent_user_id", "blocks", "subtype")
    }
    event.update(type=kind, team=TEAM_ID, channel=channel, event_ts=message["ts"])
    if kind == "message":
        event["channel_type"] = "channel"
    return event
