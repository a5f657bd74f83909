"""What gpunode accepts from Slack, as pydantic models checked at the edge.

Two layers, so that no input reaches code that could crash on it:

- the *envelope* (``check_envelope``): the fields Bolt itself dereferences to route a request
  (``type``, ``user.id``, ``actions[0].action_id``, ``view.callback_id``, ``event.type``).
  Bolt indexes these without checks (``body["actions"][0]``), so a signed request with
  ``actions: []`` or a string ``view`` would otherwise end in a 500;
- the *content* our listeners use (``TierRef``, ``ConfirmMeta``, ``view_values``): a button
  value or a modal's metadata of the wrong shape is a ``PayloadError`` the listener answers
  with a clear message and an audit row.

Slack adds fields over time, so these models ignore unknown keys (``extra="ignore"``) and
only pin down what gpunode reads. Lengths are Slack's own limits (button ``value`` 2000,
``private_metadata`` 3000, ``plain_text_input`` 3000), so a 900k-character value is refused
here, before any parsing.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.core.model.validation import validation_message
from bot.errors import RequestError

#: Slack ids (U0123ABCD, C0123ABCD, T0123ABCD): a capital for the kind, then capitals and
#: digits, never "_"; Slack ids are < 30
SlackId = Annotated[str, Field(min_length=2, max_length=64, pattern=r"^[A-Z][A-Z0-9]+$")]
#: Kubernetes object names (DNS-1123 subdomain, at most 253 characters)
NodeName = Annotated[
    str,
    Field(
        max_length=253, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    ),
]
#: a button's ``[cluster/]node``: a DNS-1123 label, a '/', then a node name
NodeRef = Annotated[
    str,
    Field(
        max_length=317,
        pattern=r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?"
        r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
    ),
]
M = TypeVar("M", bound=BaseModel)
#: action and approval ids in button values (``runtime.new_id``: 12 hex characters)
RecordId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


class PayloadError(RequestError):
    """A signed request whose content gpunode cannot use; ``message`` says what was wrong,
    ``loc`` where (the path of keys to the bad field, empty when unknown)."""

    code = "malformed_payload"

    def __init__(self, message: str, *, loc: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.loc = loc


class _Foreign(BaseModel):
    """A Slack payload: unknown keys are ignored (Slack adds fields), known ones are typed."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class _Ref(_Foreign):
    id: SlackId


class _Action(_Foreign):
    action_id: str = Field(min_length=1, max_length=255)
    block_id: str | None = Field(None, max_length=255)
    value: str | None = Field(None, max_length=2000)


class BlockActions(_Foreign):
    type: Literal["block_actions"]
    user: _Ref
    actions: list[_Action] = Field(min_length=1, max_length=25)
    channel: _Ref | None = None
    container: dict[str, Any] = Field(default_factory=dict)
    trigger_id: str = Field("", max_length=255)

    @property
    def channel_id(self) -> str:
        if self.channel is not None:
            return self.channel.id
        found = self.container.get("channel_id")
        return found if isinstance(found, str) else ""


class _Element(_Foreign):
    type: str = Field(max_length=64)
    value: str | None = Field(None, max_length=3000)
    selected_option: dict[str, Any] | None = None
    selected_options: list[dict[str, Any]] | None = None


class _State(_Foreign):
    values: dict[str, dict[str, _Element]] = Field(default_factory=dict)


class _Block(_Foreign):
    block_id: str | None = None


class _View(_Foreign):
    id: str = Field("", max_length=255)
    blocks: list[_Block] = Field(default_factory=list)
    callback_id: str = Field(max_length=255)
    private_metadata: str = Field("", max_length=3000)
    state: _State = Field(default_factory=_State)


class ViewPayload(_Foreign):
    type: Literal["view_submission", "view_closed"]
    user: _Ref
    view: _View


class _ActionRoute(_Foreign):
    action_id: str = Field(min_length=1, max_length=255)
    block_id: str | None = Field(None, max_length=255)


class _BlockActionsRoute(_Foreign):
    type: Literal["block_actions"]
    user: _Ref
    actions: list[_ActionRoute] = Field(min_length=1, max_length=25)


class _ViewRoute(_Foreign):
    #: Bolt reads ``view.type`` to route a submission (Slack always sends "modal")
    type: str = Field(min_length=1, max_length=64)
    callback_id: str = Field(max_length=255)


class _ViewPayloadRoute(_Foreign):
    type: Literal["view_submission", "view_closed"]
    user: _Ref
    view: _ViewRoute


class _Event(_Foreign):
    type: str = Field(min_length=1, max_length=255)
    #: a channel id when present (Bolt reads it as a string to scope the event)
    channel: str | None = Field(None, max_length=255)


class EventCallback(_Foreign):
    type: Literal["event_callback"]
    event_id: str = Field("", max_length=255)
    event: _Event


class SlashCommand(_Foreign):
    command: str = Field(min_length=2, max_length=32)
    text: str = ""
    user_id: SlackId
    channel_id: SlackId


#: what Bolt dereferences to route each type; the listeners check the rest themselves (so
#: that they can answer in the modal, next to the field, which the edge cannot)
_ENVELOPES: dict[str, type[_Foreign]] = {
    "block_actions": _BlockActionsRoute,
    "view_submission": _ViewPayloadRoute,
    "view_closed": _ViewPayloadRoute,
    "event_callback": EventCallback,
}


def check_envelope(body: dict[str, Any]) -> None:
    """Raise PayloadError unless Bolt can route ``body`` without indexing into nothing.

    Slash commands (``command`` present) and the interaction and event types gpunode
    listens to are checked; other types Bolt answers itself (404 for no listener)."""
    model: type[_Foreign] | None = (
        SlashCommand if "command" in body else _ENVELOPES.get(str(body.get("type", "")))
    )
    if model is not None:
        parse(model, body)


def parse(model: type[M], data: Any) -> M:
    """``model`` validated from ``data``; PayloadError naming the first bad field, never
    echoing its value (it may be megabytes, or a secret pasted by mistake)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        raise PayloadError(describe(exc), loc=tuple(first["loc"])) from None


def describe(exc: ValidationError) -> str:
    """``field.path: problem`` for the first error, without the input value. Keys come from
    the request (block ids), so they are shown printable and short: this text reaches log
    lines, audit rows and Slack messages."""
    return validation_message(exc, limit=1, where=_printable_path, top="payload")


def _printable_path(loc: tuple[int | str, ...]) -> str:
    return ".".join(printable(str(p), 40) for p in loc)


def printable(text: str, limit: int) -> str:
    """``text`` with control and other unprintable characters as ``?``, cut to ``limit``."""
    shown = "".join(c if c.isprintable() else "?" for c in text[:limit])
    return shown + ("…" if len(text) > limit else "")


def addressee(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """Best-effort (user, channel) of a payload that failed validation, to tell them."""
    user = body.get("user") if "command" not in body else body.get("user_id")
    user_id = user.get("id") if isinstance(user, dict) else user
    channel = body.get("channel") if "command" not in body else body.get("channel_id")
    channel_id = channel.get("id") if isinstance(channel, dict) else channel
    if channel_id is None and isinstance(body.get("container"), dict):
        channel_id = body["container"].get("channel_id")
    ok = re.compile(r"^[A-Z][A-Z0-9]{1,63}$")
    return (
        user_id if isinstance(user_id, str) and ok.match(user_id) else None,
        channel_id if isinstance(channel_id, str) and ok.match(channel_id) else None,
    )


# -- content: what the listeners read ---------------------------------------------------


class TierRef(_Foreign):
    """A tier button's value: which plan of which incident."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    incident: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    plan_id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")


class ConfirmMeta(_Foreign):
    """The confirmation modal's ``private_metadata`` (written by ``requesting``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    incident: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    plan_id: str = Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_-]+$")
    tier: Literal[1, 2, 3]
    channel: SlackId


def parse_json(model: type[M], text: str | None, *, what: str) -> M:
    """``model`` from JSON text (a button value, a modal's metadata)."""
    try:
        data = json.loads(text or "")
    except ValueError:
        raise PayloadError(f"{what} is not JSON") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise PayloadError(f"{what}: {describe(exc)}") from None


FormValue = str | bool | None


def view_values(state_values: dict[str, dict[str, _Element]]) -> dict[str, FormValue]:
    """Flatten ``view.state.values`` to {block_id: value} for our one-element inputs:
    text -> str, checkboxes -> bool (any ticked), static_select -> the option's value."""
    out: dict[str, FormValue] = {}
    for block_id, actions in state_values.items():
        for element in actions.values():
            if element.type == "checkboxes":
                out[block_id] = bool(element.selected_options)
            elif element.type == "static_select":
                value = (element.selected_option or {}).get("value")
                if value is not None and not isinstance(value, str):
                    where = printable(block_id, 40)
                    raise PayloadError(f"{where}: the selected option has no text value")
                out[block_id] = value
            else:
                out[block_id] = element.value
    return out


def slack_unescape(text: str) -> str:
    """Undo Slack's escaping of user text (``&amp;`` ``&lt;`` ``&gt;``, nothing else; slash
    command and message ``text``), so that rendering escapes it exactly once."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
