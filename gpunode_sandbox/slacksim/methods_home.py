"""Pins and the Home tab: ``pins.add`` / ``pins.remove`` / ``pins.list`` and ``views.publish``.

Contracts from Slack's method reference (docs.slack.dev/reference/methods/pins.add etc.):
- ``pins.add`` (scope ``pins:write``): ``channel`` and ``timestamp``; errors
  ``channel_not_found``, ``no_item_specified`` (no timestamp), ``bad_timestamp``,
  ``message_not_found``, ``already_pinned``, ``not_in_channel`` (the bot is not a member),
  ``too_many_pins``. A pinned message carries ``pinned_to: [channel]`` in history.
- ``pins.remove`` (``pins:write``): the same arguments; ``not_pinned`` for a message that is
  not pinned.
- ``pins.list`` (``pins:read``): ``items`` of ``{type: "message", created, created_by,
  channel, message}``, newest first. A deleted message's pin goes with it.
- ``views.publish`` (no scope): ``user_id`` and ``view``, a ``home`` view (no title, submit or
  close; at most 100 blocks; 250 KB); ``invalid_arguments`` "invalid `user_id`" for an unknown
  user, ``not_enabled`` when the app has no Home tab, ``hash_conflict`` for a stale ``hash``.
  The view keeps its id across publishes for that user; its ``hash`` changes each time.
Sandbox choice: the pin limit per channel is 100 (Slack's help centre gives 100 pins per
conversation; the API reference names only the error).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from gpunode_sandbox.slacksim.apierrors import ApiError
from gpunode_sandbox.slacksim.methods_chat import Handler
from gpunode_sandbox.slacksim.methods_views import parse_view, stored_view
from gpunode_sandbox.slacksim.state import BOT_USER_ID, TEAM_DOMAIN, Pin, Workspace

JSON = dict[str, Any]
PINS_MAX = 100
_TS_RE = re.compile(r"^\d+\.\d{6}$")


def _pin_target(ws: Workspace, args: JSON) -> tuple[str, JSON]:
    """(channel id, stored message) named by ``channel`` and ``timestamp``."""
    raw = str(args.get("channel") or "")
    if raw not in ws.channels:
        raise ApiError("channel_not_found")
    ts = args.get("timestamp")
    if ts in (None, ""):
        raise ApiError("no_item_specified")
    if not _TS_RE.match(str(ts)):
        raise ApiError("bad_timestamp")
    msg = ws.messages[raw].get(str(ts))
    if msg is None:
        raise ApiError("message_not_found")
    return raw, msg


def _live_pins(ws: Workspace, channel: str) -> list[Pin]:
    """The channel's pins whose message still exists (deleting a message unpins it)."""
    pins = [p for p in ws.pins.get(channel, []) if p.ts in ws.messages[channel]]
    ws.pins[channel] = pins
    return pins


def pins_add(ws: Workspace, args: JSON) -> JSON:
    channel, msg = _pin_target(ws, args)
    if not ws.channels[channel].bot_member:
        raise ApiError("not_in_channel")
    pins = _live_pins(ws, channel)
    if any(p.ts == msg["ts"] for p in pins):
        raise ApiError("already_pinned")
    if len(pins) >= PINS_MAX:
        raise ApiError("too_many_pins")
    pins.append(Pin(msg["ts"], int(ws.clock()), BOT_USER_ID))
    msg["pinned_to"] = [channel]
    ws.changed()
    return {}


def pins_remove(ws: Workspace, args: JSON) -> JSON:
    channel, msg = _pin_target(ws, args)
    pins = _live_pins(ws, channel)
    if not any(p.ts == msg["ts"] for p in pins):
        raise ApiError("not_pinned")
    ws.pins[channel] = [p for p in pins if p.ts != msg["ts"]]
    msg.pop("pinned_to", None)
    ws.changed()
    return {}


def pins_list(ws: Workspace, args: JSON) -> JSON:
    channel = str(args.get("channel") or "")
    if channel not in ws.channels:
        raise ApiError("channel_not_found")
    items = []
    for pin in reversed(_live_pins(ws, channel)):
        message = copy.deepcopy(ws.messages[channel][pin.ts])
        link = f"https://{TEAM_DOMAIN}.slack.com/archives/{channel}/p{pin.ts.replace('.', '')}"
        message["permalink"] = link
        items.append(
            {
                "type": "message",
                "created": pin.created,
                "created_by": pin.created_by,
                "channel": channel,
                "message": message,
            }
        )
    return {"items": items}


def views_publish(ws: Workspace, args: JSON) -> JSON:
    user = str(args.get("user_id") or "")
    if user not in ws.users or ws.users[user].is_bot:
        raise ApiError("invalid_arguments", response_metadata={"messages": ["invalid `user_id`"]})
    view = parse_view(args, kind="home")
    if not ws.home_tab_enabled:
        raise ApiError("not_enabled")
    current = ws.homes.get(user)
    if args.get("hash") and (current is None or args["hash"] != current["hash"]):
        raise ApiError("hash_conflict")
    ext = view.get("external_id")
    if ext and any(h.get("external_id") == ext for u, h in ws.homes.items() if u != user):
        raise ApiError("duplicate_external_id")
    vid = current["id"] if current is not None else ws.new_id("V")
    stored = stored_view(ws, view, vid=vid, root=vid, previous=None)
    ws.homes[user] = stored
    ws.changed()
    return {"view": copy.deepcopy(stored)}


def home_channel(user: str) -> str:
    """The app's direct-message channel with ``user`` (where ``app_home_opened`` points)."""
    return "D" + user.removeprefix("U")


HANDLERS: dict[str, Handler] = {
    "pins.add": pins_add,
    "pins.remove": pins_remove,
    "pins.list": pins_list,
    "views.publish": views_publish,
}
