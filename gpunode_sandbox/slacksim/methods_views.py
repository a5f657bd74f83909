"""Modal views: views.open / views.push / views.update and the per-user stack.

A trigger_id is single use (``exchanged_trigger_id``) and expires 3 s after it was issued
(``expired_trigger_id``, measured with the workspace clock). A stack holds at most 3 views
(``push_limit_reached``). ``views.update`` with a stale ``hash`` fails with ``hash_conflict``.
The functions at the bottom apply a bot's ``response_action`` reply to a submission.
"""

from __future__ import annotations

import copy
import json
import re
import secrets
from typing import Any

from gpunode_sandbox.slacksim.apierrors import ApiError
from gpunode_sandbox.slacksim.blocks import normalize_blocks
from gpunode_sandbox.slacksim.methods_chat import Handler
from gpunode_sandbox.slacksim.state import APP_ID, BOT_ID, TEAM_ID, OpenView, Workspace
from gpunode_sandbox.slacksim.validation import view_errors

JSON = dict[str, Any]
TRIGGER_TTL_S = 3.0
STACK_MAX = 3
VIEW_MAX_BYTES = 250_000
_TRIGGER_RE = re.compile(r"^\d+\.\d+\.[0-9a-zA-Z]+$")


def consume_trigger(ws: Workspace, trigger_id: Any) -> str:
    """The user the trigger was issued to; the trigger is used up."""
    if not isinstance(trigger_id, str) or not _TRIGGER_RE.match(trigger_id):
        raise ApiError("invalid_trigger_id")
    trigger = ws.triggers.get(trigger_id)
    if trigger is None:
        raise ApiError("invalid_trigger_id")
    if trigger.used:
        raise ApiError("exchanged_trigger_id")
    if ws.clock() - trigger.issued_at > TRIGGER_TTL_S:
        raise ApiError("expired_trigger_id")
    trigger.used = True
    return trigger.user


def parse_view(args: JSON, *, kind: str = "modal") -> JSON:
    raw = args.get("view")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as exc:
            raise ApiError("invalid_arguments") from exc
    errors = view_errors(raw, kind=kind)
    if errors:
        raise ApiError("invalid_arguments", response_metadata={"messages": errors})
    assert isinstance(raw, dict)
    if len(json.dumps(raw)) > VIEW_MAX_BYTES:
        raise ApiError("view_too_large")
    return raw


def stored_view(ws: Workspace, view: JSON, *, vid: str, root: str, previous: str | None) -> JSON:
    out = copy.deepcopy(view)
    out["blocks"] = normalize_blocks(view.get("blocks", []))
    out.update(
        id=vid,
        team_id=TEAM_ID,
        state={"values": {}},
        previous_view_id=previous,
        root_view_id=root,
        app_id=APP_ID,
        app_installed_team_id=TEAM_ID,
        bot_id=BOT_ID,
        hash=f"{int(ws.clock())}.{secrets.token_hex(4)}",
    )
    for key, default in (("private_metadata", ""), ("callback_id", ""), ("external_id", "")):
        out.setdefault(key, default)
    out.setdefault("clear_on_close", False)
    out.setdefault("notify_on_close", False)
    return out


def _check_external_id(ws: Workspace, view: JSON, *, except_id: str | None = None) -> None:
    ext = view.get("external_id")
    if ext and any(
        v.view.get("external_id") == ext and v.id != except_id for v in ws.views.values()
    ):
        raise ApiError("duplicate_external_id")


def open_view(ws: Workspace, user: str, view: JSON) -> JSON:
    """Start a new stack for ``user`` with ``view`` (replacing any open one)."""
    for old in ws.stacks.pop(user, []):
        ws.views.pop(old, None)
    vid = ws.new_id("V")
    stored = stored_view(ws, view, vid=vid, root=vid, previous=None)
    ws.views[vid] = OpenView(vid, user, stored)
    ws.stacks[user] = [vid]
    ws.changed()
    return stored


def push_view(ws: Workspace, user: str, view: JSON) -> JSON:
    stack = ws.stacks.get(user, [])
    if not stack:
        return open_view(ws, user, view)
    if len(stack) >= STACK_MAX:
        raise ApiError("push_limit_reached")
    vid = ws.new_id("V")
    stored = stored_view(ws, view, vid=vid, root=stack[0], previous=stack[-1])
    ws.views[vid] = OpenView(vid, user, stored)
    stack.append(vid)
    ws.changed()
    return stored


def replace_view(ws: Workspace, vid: str, view: JSON) -> JSON:
    current = ws.views[vid]
    stored = stored_view(
        ws,
        view,
        vid=vid,
        root=current.view["root_view_id"],
        previous=current.view["previous_view_id"],
    )
    current.view, current.errors = stored, {}
    ws.changed()
    return stored


def close_top(ws: Workspace, user: str, *, clear: bool = False) -> None:
    stack = ws.stacks.get(user, [])
    victims = list(stack) if clear else stack[-1:]
    for vid in victims:
        stack.remove(vid)
        ws.views.pop(vid, None)
    if not stack:
        ws.stacks.pop(user, None)
    ws.changed()


def views_open(ws: Workspace, args: JSON) -> JSON:
    view = parse_view(args)
    _check_external_id(ws, view)
    user = consume_trigger(ws, args.get("trigger_id") or args.get("interactivity_pointer"))
    return {"view": copy.deepcopy(open_view(ws, user, view))}


def views_push(ws: Workspace, args: JSON) -> JSON:
    view = parse_view(args)
    _check_external_id(ws, view)
    user = consume_trigger(ws, args.get("trigger_id") or args.get("interactivity_pointer"))
    return {"view": copy.deepcopy(push_view(ws, user, view))}


def views_update(ws: Workspace, args: JSON) -> JSON:
    view = parse_view(args)
    vid = args.get("view_id")
    if not vid and args.get("external_id"):
        vid = next(
            (v.id for v in ws.views.values() if v.view.get("external_id") == args["external_id"]),
            None,
        )
    if not vid or vid not in ws.views:
        raise ApiError("not_found")
    _check_external_id(ws, view, except_id=vid)
    if args.get("hash") and args["hash"] != ws.views[vid].view["hash"]:
        raise ApiError("hash_conflict")
    return {"view": copy.deepcopy(replace_view(ws, vid, view))}


def state_values(view: JSON, values: dict[str, dict[str, Any]]) -> JSON:
    """``view.state.values`` typed per element, for every input block of ``view``."""
    out: JSON = {}
    for block in view.get("blocks", []):
        if block.get("type") != "input":
            continue
        el = block["element"]
        kind, aid = el.get("type"), el.get("action_id", "")
        given = values.get(block["block_id"], {}).get(aid)
        entry: JSON = {"type": kind}
        if kind == "static_select":
            entry["selected_option"] = _option(el, given)
        elif kind == "checkboxes":
            wanted = given or []
            entry["selected_options"] = [o for o in el.get("options", []) if o["value"] in wanted]
        elif kind in ("number_input", "plain_text_input", "email_text_input", "url_text_input"):
            entry["value"] = None if given in (None, "") else str(given)
        else:
            entry["value"] = given
        out[block["block_id"]] = {aid: entry}
    return out


def _option(el: JSON, value: Any) -> JSON | None:
    return next((o for o in el.get("options", []) if o.get("value") == value), None)


HANDLERS: dict[str, Handler] = {
    "views.open": views_open,
    "views.push": views_push,
    "views.update": views_update,
}
