"""Buttons and modals: each handler acks first, then hands the work to ``ActService``.

The identity acted on is always ``body["user"]["id"]`` from the signed payload, and roles
are checked by the service at the moment of the click. Button values carry only ids.
The modal's validation runs inside the ack (``response_action: errors``) because Slack
shows those errors next to the fields; everything slower runs in the background.
"""

from __future__ import annotations

import json
import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.render.acting import APPLY, APPROVE, CANCEL, CONFIRM_CALLBACK, DENY, REDIAGNOSE, UNDO

TIER_ACTION = re.compile(r"^gpunode_tier([123])$")


def _value(body: dict[str, Any]) -> str:
    return str(body["actions"][0].get("value") or "")


def _who(body: dict[str, Any]) -> tuple[str, str]:
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get(
        "channel_id", ""
    )
    return str(body["user"]["id"]), str(channel)


def view_values(view: dict[str, Any]) -> dict[str, Any]:
    """Flatten ``view.state.values`` to {block_id: value} for our one-element inputs."""
    out: dict[str, Any] = {}
    for block_id, actions in (view.get("state", {}).get("values") or {}).items():
        for element in actions.values():
            kind = element.get("type")
            if kind == "checkboxes":
                out[block_id] = bool(element.get("selected_options"))
            elif kind == "static_select":
                selected = element.get("selected_option") or {}
                out[block_id] = selected.get("value")
            else:
                out[block_id] = element.get("value")
    return out


def register_interactions(app: AsyncApp, s: Any) -> None:
    act = s.act

    @app.action(TIER_ACTION)
    async def on_tier(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        user, channel = _who(body)
        tier = int(TIER_ACTION.match(body["actions"][0]["action_id"]).group(1))  # type: ignore[union-attr]
        try:
            ref = json.loads(_value(body))
            incident, plan_id = str(ref["incident"]), str(ref["plan_id"])
        except (ValueError, KeyError, TypeError):
            return
        # views.open must follow within 3 s of the click: the task starts at once, and being
        # tracked by Background lets shutdown and tests wait for it
        s.bg.spawn(
            act.open_confirmation(
                tier=tier,
                incident_id=incident,
                plan_id=plan_id,
                user=user,
                channel=channel,
                trigger_id=str(body.get("trigger_id", "")),
            ),
            name="confirm",
        )

    @app.view(CONFIRM_CALLBACK)
    async def on_confirm(ack: Any, body: dict[str, Any], view: dict[str, Any]) -> None:
        try:
            meta = json.loads(view.get("private_metadata") or "{}")
        except ValueError:
            await ack(
                response_action="errors", errors={"reason": "this form is damaged; reopen it"}
            )
            return
        values = view_values(view)
        who = body.get("user")
        user = str(who.get("id", "")) if isinstance(who, dict) else ""
        plan, errors = await act.validate_submission(meta, values, user=user)
        if errors or plan is None:
            await ack(response_action="errors", errors=errors or {"reason": "cannot proceed"})
            return
        await ack()
        s.bg.spawn(
            act.submitted(
                meta=meta,
                plan=plan,
                reason=str(values.get("reason", "")).strip(),
                user=str(body["user"]["id"]),
            ),
            name="dry-run",
        )

    def _background(name: str, method: str, **extra: Any) -> Any:
        async def handler(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            user, channel = _who(body)
            s.bg.spawn(
                getattr(act, method)(
                    user=user, channel=channel, **extra, **{_ID_ARG[method]: _value(body)}
                ),
                name=name,
            )

        return handler

    app.action(APPLY)(_background("apply", "apply"))
    app.action(CANCEL)(_background("cancel", "cancel"))
    app.action(UNDO)(_background("undo", "undo"))
    app.action(APPROVE)(_background("approve", "vote", yes=True))
    app.action(DENY)(_background("deny", "vote", yes=False))

    @app.action(REDIAGNOSE)
    async def on_rediagnose(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        user, channel = _who(body)
        s.bg.spawn(_rediagnose(s, _value(body), user=user, channel=channel), name="rediag")


async def _rediagnose(s: Any, node: str, *, user: str, channel: str) -> None:
    from bot.slack.app import permitted

    if await permitted(s, "diagnose", user=user, channel=channel):
        await s.diagnose.diagnose(node, channel=channel, user=user)


_ID_ARG = {"apply": "action_id", "cancel": "action_id", "undo": "action_id", "vote": "approval_id"}
