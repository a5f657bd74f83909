"""Block Kit validation with Slack's limits and Slack's error strings.

Each check yields ``[ERROR] <what> [json-pointer:<path>]`` as Slack puts them in
``response_metadata.messages`` of an ``invalid_blocks`` / ``invalid_arguments`` error
(reference/slack.md section 2.3). Limits are those of section 3. After our own checks, every
block also goes through ``slack_sdk``'s models (``Block.parse(b).to_dict()``), which is what a
careful bot runs client-side; anything it rejects is reported too.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

JSON = dict[str, Any]
MESSAGE_BLOCKS_MAX = 50
VIEW_BLOCKS_MAX = 100
BLOCKS_TEXT_MAX = 12_000  # undocumented cumulative limit, observed at ~12-13k (slack.md 2.3)
KNOWN = {
    "section",
    "divider",
    "image",
    "actions",
    "context",
    "input",
    "file",
    "header",
    "markdown",
    "rich_text",
    "video",
    "call",
    "table",
}
MESSAGE_ONLY_FORBIDDEN = {"input"}


def _err(what: str, pointer: str) -> str:
    return f"[ERROR] {what} [json-pointer:{pointer}]"


def _text_obj(obj: Any, ptr: str, *, limit: int, plain_only: bool = False) -> list[str]:
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        return [_err("must provide an object", ptr)]
    errors = []
    allowed = ("plain_text",) if plain_only else ("plain_text", "mrkdwn")
    if obj.get("type") not in allowed:
        errors.append(_err(f"must be one of {list(allowed)}", f"{ptr}/type"))
    if len(obj["text"]) > limit:
        errors.append(_err(f"must be less than {limit + 1} characters", f"{ptr}/text"))
    if not obj["text"]:
        errors.append(_err("must be more than 0 characters", f"{ptr}/text"))
    return errors


def _max_len(value: Any, limit: int, ptr: str) -> list[str]:
    if isinstance(value, str) and len(value) > limit:
        return [_err(f"must be less than {limit + 1} characters", ptr)]
    return []


def _options(options: Any, ptr: str, *, limit: int) -> list[str]:
    if not isinstance(options, list):
        return [_err("must provide an array", ptr)]
    errors = []
    if len(options) > limit:
        errors.append(_err(f"no more than {limit} items allowed", ptr))
    for i, opt in enumerate(options):
        errors += _text_obj(opt.get("text"), f"{ptr}/{i}/text", limit=75)
        errors += _max_len(opt.get("value"), 150, f"{ptr}/{i}/value")
    return errors


def _confirm(obj: Any, ptr: str) -> list[str]:
    if not isinstance(obj, dict):
        return [_err("must provide an object", ptr)]
    errors = []
    for key, limit in (("title", 100), ("text", 300), ("confirm", 30), ("deny", 30)):
        errors += _text_obj(obj.get(key), f"{ptr}/{key}", limit=limit, plain_only=key != "text")
    if obj.get("style") not in (None, "primary", "danger"):
        errors.append(_err("must be one of [primary, danger]", f"{ptr}/style"))
    return errors


def element_errors(el: Any, ptr: str) -> list[str]:
    """Limits of one interactive element (button, selects, inputs, checkboxes)."""
    if not isinstance(el, dict):
        return [_err("must provide an object", ptr)]
    kind = el.get("type")
    errors = _max_len(el.get("action_id"), 255, f"{ptr}/action_id")
    if kind == "button":
        errors += _text_obj(el.get("text"), f"{ptr}/text", limit=75, plain_only=True)
        errors += _max_len(el.get("value"), 2000, f"{ptr}/value")
        errors += _max_len(el.get("url"), 3000, f"{ptr}/url")
        if el.get("style") not in (None, "primary", "danger"):
            errors.append(_err("must be one of [primary, danger]", f"{ptr}/style"))
    elif kind == "static_select":
        errors += _options(el.get("options"), f"{ptr}/options", limit=100)
    elif kind == "checkboxes":
        errors += _options(el.get("options"), f"{ptr}/options", limit=10)
    elif kind == "overflow":
        opts = el.get("options")
        errors += _options(opts, f"{ptr}/options", limit=5)
    elif kind == "number_input":
        if not isinstance(el.get("is_decimal_allowed"), bool):
            errors.append(_err("must provide a boolean", f"{ptr}/is_decimal_allowed"))
    elif kind not in (
        "plain_text_input",
        "datepicker",
        "timepicker",
        "users_select",
        "conversations_select",
        "channels_select",
        "multi_static_select",
        "radio_buttons",
        "image",
        "email_text_input",
        "url_text_input",
        "multi_users_select",
        "external_select",
    ):
        errors.append(_err(f"unsupported element type {kind!r}", f"{ptr}/type"))
    if "placeholder" in el:
        errors += _text_obj(el["placeholder"], f"{ptr}/placeholder", limit=150, plain_only=True)
    if "confirm" in el:
        errors += _confirm(el["confirm"], f"{ptr}/confirm")
    return errors


def _block_errors(block: Any, ptr: str, *, surface: str) -> list[str]:
    if not isinstance(block, dict):
        return [_err("must provide an object", ptr)]
    kind = block.get("type")
    if kind not in KNOWN or (surface == "message" and kind in MESSAGE_ONLY_FORBIDDEN):
        return [_err(f"unsupported type {kind!r} for {surface}", f"{ptr}/type")]
    errors = _max_len(block.get("block_id"), 255, f"{ptr}/block_id")
    if kind == "section":
        if "text" not in block and "fields" not in block:
            errors.append(_err("must provide text or fields", ptr))
        if "text" in block:
            errors += _text_obj(block["text"], f"{ptr}/text", limit=3000)
        fields = block.get("fields", [])
        if len(fields) > 10:
            errors.append(_err("no more than 10 items allowed", f"{ptr}/fields"))
        for i, f in enumerate(fields):
            errors += _text_obj(f, f"{ptr}/fields/{i}", limit=2000)
        if "accessory" in block:
            errors += element_errors(block["accessory"], f"{ptr}/accessory")
    elif kind == "header":
        errors += _text_obj(block.get("text"), f"{ptr}/text", limit=150, plain_only=True)
    elif kind in ("context", "actions"):
        elements = block.get("elements")
        limit = 10 if kind == "context" else 25
        if not isinstance(elements, list) or not elements:
            errors.append(_err("must provide a non-empty array", f"{ptr}/elements"))
            elements = []
        if len(elements) > limit:
            errors.append(_err(f"no more than {limit} items allowed", f"{ptr}/elements"))
        for i, el in enumerate(elements):
            sub = f"{ptr}/elements/{i}"
            if kind == "actions":
                errors += element_errors(el, sub)
            elif isinstance(el, dict) and el.get("type") in ("mrkdwn", "plain_text"):
                errors += _text_obj(el, sub, limit=3000)
        if kind == "actions":
            ids = [e.get("action_id") for e in elements if isinstance(e, dict)]
            if len([i for i in ids if i]) != len({i for i in ids if i}):
                errors.append(_err("action_id must be unique in a block", f"{ptr}/elements"))
    elif kind == "input":
        errors += _text_obj(block.get("label"), f"{ptr}/label", limit=2000, plain_only=True)
        errors += element_errors(block.get("element"), f"{ptr}/element")
    elif kind == "markdown":
        errors += _max_len(block.get("text"), 12_000, f"{ptr}/text")
    return errors


def _sdk_errors(block: Any, ptr: str) -> list[str]:
    try:
        parsed = Block.parse(block)
        if parsed is None:
            return [_err("unsupported block type", f"{ptr}/type")]
        parsed.to_dict()
    except (SlackObjectFormationError, KeyError, TypeError, ValueError) as exc:
        return [_err(str(exc), ptr)]
    return []


def blocks_errors(blocks: Any, *, pointer: str = "/blocks", surface: str = "message") -> list[str]:
    """Every problem in ``blocks``; empty when Slack would accept them."""
    if not isinstance(blocks, list):
        return [_err("must provide an array", pointer)]
    limit = MESSAGE_BLOCKS_MAX if surface == "message" else VIEW_BLOCKS_MAX
    errors = []
    if len(blocks) > limit:
        errors.append(_err(f"no more than {limit} items allowed", pointer))
    seen: set[str] = set()
    for i, block in enumerate(blocks):
        ptr = f"{pointer}/{i}"
        own = _block_errors(block, ptr, surface=surface)
        errors += own or _sdk_errors(block, ptr)
        bid = block.get("block_id") if isinstance(block, dict) else None
        if bid in seen:
            errors.append(_err(f"duplicate block_id {bid!r}", f"{ptr}/block_id"))
        if bid:
            seen.add(bid)
    return errors


def view_errors(view: Any, *, kind: str = "modal") -> list[str]:
    """Problems of a ``view`` of type ``kind`` (``invalid_arguments`` messages): a modal
    (views.open/push/update) or a Home tab (views.publish). A Home tab has no title, submit
    or close: those belong to modals (Slack's view reference)."""
    if not isinstance(view, dict):
        return [_err("must provide an object", "/view")]
    errors = []
    if view.get("type") != kind:
        errors.append(_err(f"must be one of [{kind}]", "/view/type"))
    if kind == "home":
        for key in ("title", "submit", "close"):
            if key in view:
                errors.append(_err(f"{key} is not allowed for a home view", f"/view/{key}"))
    else:
        errors += _text_obj(view.get("title"), "/view/title", limit=24, plain_only=True)
        for key in ("submit", "close"):
            if key in view:
                errors += _text_obj(view[key], f"/view/{key}", limit=24, plain_only=True)
    errors += _max_len(view.get("private_metadata"), 3000, "/view/private_metadata")
    errors += _max_len(view.get("callback_id"), 255, "/view/callback_id")
    errors += blocks_errors(view.get("blocks"), pointer="/view/blocks", surface="view")
    raw_blocks = view.get("blocks")
    blocks: list[Any] = raw_blocks if isinstance(raw_blocks, list) else []
    has_input = any(isinstance(b, dict) and b.get("type") == "input" for b in blocks)
    if kind == "modal" and has_input and "submit" not in view and not errors:
        errors.append(_err("must provide submit when input blocks are present", "/view/submit"))
    return errors
