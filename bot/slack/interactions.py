"""Buttons and modals: each handler acks first, then hands the work to ``ActService``
(registered by ``bot.slack.bolt``; the slash command and events are ``bot.slack.app``).

The identity acted on is always ``body["user"]["id"]`` from the signed payload, and roles
are checked by the service at the moment of the click. Button values carry only ids.
The modal's validation runs inside the ack (``response_action: errors``) because Slack
shows those errors next to the fields; everything slower runs in the background.

Every payload is validated with the models of ``bot.slack.payloads`` before use (Socket Mode
requests do not pass the HTTP edge, so the listeners check for themselves): a click or a
submission of the wrong shape is told to the user (ephemeral, or next to the modal's field)
and audited, never dropped and never a 500.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Coroutine
from typing import Any

from pydantic import TypeAdapter, ValidationError
from slack_bolt.async_app import AsyncApp

from bot.core.model.clusters import NodeRef as CoreNodeRef
from bot.core.model.clusters import split_node_ref
from bot.errors import UnknownClusterError
from bot.render.acting import APPLY, APPROVE, CANCEL, CONFIRM_CALLBACK, DENY, REDIAGNOSE, UNDO
from bot.render.blocks import DETAILS_ACTION, PREVENTION_ACTION
from bot.render.errors import field_text
from bot.services.chatops import BotServices, permitted, report_malformed
from bot.services.prevention import prevention_button
from bot.slack.details import open_details
from bot.slack.payloads import (
    BlockActions,
    ConfirmMeta,
    FormValue,
    NodeRef,
    PayloadError,
    RecordId,
    TierRef,
    ViewPayload,
    addressee,
    parse,
    parse_json,
    view_values,
)

log = logging.getLogger(__name__)
TIER_ACTION = re.compile(r"^gpunode_tier([123])$")
DAMAGED_FORM = "this form arrived damaged ({problem}); close it and press the tier button again"


def _refuse_malformed(
    s: BotServices, kind: str, user: str | None, channel: str | None, err: PayloadError
) -> None:
    log.warning("refused a malformed %s from %s: %s", kind, user, err.message)
    report = report_malformed(
        s, kind=f"slack.{kind}", user=user, channel=channel, problem=err.message
    )
    s.bg.spawn(report, name="malformed")


def _field_of(body: dict[str, Any], loc: tuple[str | int, ...]) -> str:
    """The modal block an error at ``loc`` belongs to, if the view has it; else ``reason``
    (the one input every confirmation modal has)."""
    if len(loc) > 3 and loc[:3] == ("view", "state", "values"):
        view = body.get("view")
        blocks = view.get("blocks") if isinstance(view, dict) else None
        ids = (
            {b.get("block_id") for b in blocks if isinstance(b, dict)}
            if isinstance(blocks, list)
            else set()
        )
        if loc[3] in ids:
            return str(loc[3])
    return "reason"


def _click(s: Any, body: dict[str, Any], what: str) -> BlockActions | None:
    """The validated click, or None after telling the user (and auditing) why not."""
    try:
        return parse(BlockActions, body)
    except PayloadError as err:
        _refuse_malformed(s, what, *addressee(body), err)
        return None


def _button_value(s: Any, click: BlockActions, what: str, model: Any) -> Any:
    """The button's value validated as ``model`` (a pydantic type), or None (reported)."""
    try:
        return TypeAdapter(model).validate_python(click.actions[0].value or "")
    except ValidationError:
        err = PayloadError(f"the {what} button carries no valid value")
        _refuse_malformed(s, what, click.user.id, click.channel_id, err)
        return None


def register_interactions(app: AsyncApp, s: BotServices) -> None:
    """The tier, Apply, Cancel, Undo, Approve, Deny and Re-diagnose buttons and the
    confirmation modal on ``app``; ``s.act`` must be set."""
    act = s.act
    assert act is not None, "buttons need the action service"

    @app.action(TIER_ACTION)
    async def on_tier(ack: Any, body: dict[str, Any]) -> None:
        await ack()
        click = _click(s, body, "tier")
        if click is None:
            return
        tier = int(TIER_ACTION.match(click.actions[0].action_id).group(1))  # type: ignore[union-attr]
        try:
            ref = parse_json(TierRef, click.actions[0].value, what="the tier button's value")
        except PayloadError as err:
            _refuse_malformed(s, f"tier{tier}", click.user.id, click.channel_id, err)
            return
        # views.open must follow within 3 s of the click: the task starts at once, and being
        # tracked by Background lets shutdown and tests wait for it
        s.bg.spawn(
            act.open_confirmation(
                tier=tier,
                incident_id=ref.incident,
                plan_id=ref.plan_id,
                user=click.user.id,
                channel=click.channel_id,
                trigger_id=click.trigger_id,
            ),
            name="confirm",
        )

    @app.view(CONFIRM_CALLBACK)
    async def on_confirm(ack: Any, body: dict[str, Any]) -> None:
        try:
            submission = parse(ViewPayload, body)
        except PayloadError as err:
            _refuse_malformed(s, "view_submission", addressee(body)[0], None, err)
            field = _field_of(body, err.loc)
            message = (
                "too long or of the wrong kind; enter a short value"
                if field != "reason"
                else DAMAGED_FORM.format(problem=err.message)
            )
            await ack(response_action="errors", errors={field: message})
            return
        user = submission.user.id
        try:
            meta = parse_json(
                ConfirmMeta, submission.view.private_metadata, what="the form's metadata"
            )
            values: dict[str, FormValue] = view_values(submission.view.state.values)
        except PayloadError as err:
            _refuse_malformed(s, "view_submission", user, None, err)
            await ack(
                response_action="errors",
                errors={"reason": DAMAGED_FORM.format(problem=err.message)},
            )
            return
        plan, errors = await act.validate_submission(meta.model_dump(), values, user=user)
        if errors or plan is None:
            # beside each field, in the person's language (a field error carries its key)
            locale = await s.diagnose.locales.for_person(meta.channel, user)
            worded = {field: field_text(e, locale) for field, e in errors.items()}
            await ack(response_action="errors", errors=worded or {"reason": "cannot proceed"})
            return
        await ack()
        s.bg.spawn(
            act.submitted(
                meta=meta.model_dump(),
                plan=plan,
                reason=str(values.get("reason") or "").strip(),
                user=user,
            ),
            name="dry-run",
        )

    def _button(
        name: str,
        run: Callable[[Any, BlockActions], Coroutine[Any, Any, None]],
        value: Any = RecordId,
    ) -> Any:
        """A button's handler: ack, validate the click and its value (as ``value``, a
        pydantic type; a bad one is told and audited), then ``run(value, click)`` in the
        background. It starts at once: a button that opens a view must call ``views.open``
        within 3 s of the click, and Background lets shutdown and tests wait for it."""

        async def handler(ack: Any, body: dict[str, Any]) -> None:
            await ack()
            click = _click(s, body, name)
            if click is None:
                return
            found = _button_value(s, click, name, value)
            if found is None:
                return
            s.bg.spawn(run(found, click), name=name)

        return handler

    # each button names the use case it drives (typed calls, no dispatch by method name)
    app.action(APPLY)(
        _button("apply", lambda i, c: act.apply(action_id=i, user=c.user.id, channel=c.channel_id))
    )
    app.action(CANCEL)(
        _button(
            "cancel", lambda i, c: act.cancel(action_id=i, user=c.user.id, channel=c.channel_id)
        )
    )
    app.action(UNDO)(
        _button("undo", lambda i, c: act.undo(action_id=i, user=c.user.id, channel=c.channel_id))
    )
    app.action(APPROVE)(
        _button(
            "approve",
            lambda i, c: act.vote(approval_id=i, user=c.user.id, channel=c.channel_id, yes=True),
        )
    )
    app.action(DENY)(
        _button(
            "deny",
            lambda i, c: act.vote(approval_id=i, user=c.user.id, channel=c.channel_id, yes=False),
        )
    )
    app.action(PREVENTION_ACTION)(
        _button(
            "prevention",
            lambda i, c: prevention_button(s, i, user=c.user.id, channel=c.channel_id),
        )
    )
    app.action(DETAILS_ACTION)(
        _button(
            "details",
            lambda i, c: open_details(
                s, i, user=c.user.id, channel=c.channel_id, trigger_id=c.trigger_id
            ),
        )
    )
    app.action(REDIAGNOSE)(
        _button(
            "rediagnose",
            lambda ref, c: _rediagnose(s, ref, user=c.user.id, channel=c.channel_id),
            NodeRef,
        )
    )


async def _rediagnose(s: BotServices, value: str, *, user: str, channel: str) -> None:
    """The Re-diagnose button's ``[CLUSTER/]NODE`` (no cluster: a button posted before
    clusters, the default one's node)."""
    cluster, node = split_node_ref(value)
    try:
        at = CoreNodeRef(cluster=s.clusters.choose(cluster), node=node)
    except UnknownClusterError as err:  # a cluster removed from the settings since
        _refuse_malformed(s, "rediagnose", user, channel, PayloadError(err.message))
        return
    if await permitted(s, "diagnose", user=user, channel=channel, cluster=at.cluster):
        await s.diagnose.diagnose(at, channel=channel, user=user)
