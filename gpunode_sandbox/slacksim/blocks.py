"""Block Kit handling that Slack does on its side: ids, flags, lookups, plain text.

Slack stores blocks a little differently from how they were posted: a block without
``block_id`` gets a short random one, mrkdwn text objects get ``"verbatim": false`` and
plain_text objects get ``"emoji": true``. The bot later sees those ids in
``actions[].block_id``, so the stand-in does the same. Pure functions, except for the random
block ids.
"""

from __future__ import annotations

import copy
import secrets
import string
from collections.abc import Iterator
from typing import Any

JSON = dict[str, Any]
_ID_CHARS = string.ascii_letters + string.digits


def _flag_text_objects(node: Any) -> None:
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
            node.setdefault("verbatim", False)
        elif node.get("type") == "plain_text" and isinstance(node.get("text"), str):
            node.setdefault("emoji", True)
        for value in node.values():
            _flag_text_objects(value)
    elif isinstance(node, list):
        for item in node:
            _flag_text_objects(item)


def normalize_blocks(blocks: list[JSON]) -> list[JSON]:
    """A stored copy of ``blocks``: block ids assigned, text objects flagged."""
    out = copy.deepcopy(blocks)
    taken = {b.get("block_id") for b in out}
    for block in out:
        if not block.get("block_id"):
            new = "".join(secrets.choice(_ID_CHARS) for _ in range(4))
            while new in taken:
                new = "".join(secrets.choice(_ID_CHARS) for _ in range(4))
            taken.add(new)
            block["block_id"] = new
    _flag_text_objects(out)
    return out


def iter_elements(blocks: list[JSON]) -> Iterator[tuple[JSON, JSON]]:
    """Every interactive element with its block: actions elements, accessories, inputs."""
    for block in blocks:
        for element in block.get("elements") or []:
            if block.get("type") == "actions" and isinstance(element, dict):
                yield block, element
        for key in ("accessory", "element"):
            element = block.get(key)
            if isinstance(element, dict):
                yield block, element


def find_element(
    blocks: list[JSON], action_id: str, *, block_id: str | None = None
) -> tuple[JSON, JSON] | None:
    """The (block, element) with ``action_id`` (and ``block_id`` when given), or None."""
    for block, element in iter_elements(blocks):
        if element.get("action_id") != action_id:
            continue
        if block_id is None or block.get("block_id") == block_id:
            return block, element
    return None


def _text(obj: Any) -> str:
    return str(obj.get("text", "")) if isinstance(obj, dict) else ""


def block_lines(block: JSON) -> list[str]:
    """A plain-text rendering of one block (for transcripts and tests)."""
    kind = block.get("type")
    if kind == "header":
        return [f"# {_text(block.get('text'))}"]
    if kind == "divider":
        return ["---"]
    if kind == "section":
        lines = [_text(block.get("text"))] if block.get("text") else []
        lines += [_text(f) for f in block.get("fields") or []]
        acc = block.get("accessory")
        if isinstance(acc, dict) and acc.get("type") == "button":
            lines.append(f"[{_text(acc.get('text'))}]")
        return lines
    if kind == "context":
        return [" | ".join(_text(e) or e.get("alt_text", "") for e in block.get("elements", []))]
    if kind == "actions":
        labels = [f"[{_text(e.get('text')) or e.get('type', '')}]" for e in block["elements"]]
        return [" ".join(labels)]
    if kind in ("markdown",):
        return [str(block.get("text", ""))]
    if kind == "input":
        return [f"{_text(block.get('label'))}: <{block.get('element', {}).get('type', '')}>"]
    if kind == "rich_text":
        return [_rich_text(block)]
    return [f"<{kind}>"]


def _rich_text(node: Any) -> str:
    if isinstance(node, dict):
        if node.get("type") == "text":
            return str(node.get("text", ""))
        return "".join(_rich_text(e) for e in node.get("elements", []))
    return ""


def message_text(message: JSON) -> str:
    """Blocks rendered as lines when present, else the message's ``text``."""
    blocks = message.get("blocks") or []
    if not blocks:
        return str(message.get("text", ""))
    lines: list[str] = []
    for block in blocks:
        lines += block_lines(block)
    return "\n".join(lines)


def text_length(blocks: list[JSON]) -> int:
    """Total characters of all text in ``blocks`` (for Slack's ~12k cumulative limit)."""
    total = 0

    def walk(node: Any) -> None:
        nonlocal total
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                total += len(node["text"])
            for value in node.values():
                if isinstance(value, dict | list):
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks)
    return total
