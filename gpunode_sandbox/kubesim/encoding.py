"""JSON as the API server writes it, and a list answer joined from its items' encodings.

Compact, no blank after "," or ":" (Go's ``encoding/json``): Python's default separators
made a 500-pod page 7% longer, to write and to read. Output is ASCII (``ensure_ascii``), so
an encoding's bytes are its text's, and a list's encoding is its items' joined by ",": an
answer made of items encoded one by one (``list_body``, from the store's cached encodings)
is byte for byte the answer encoded whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

#: the text of a JSON value, compact
encode = json.JSONEncoder(separators=(",", ":")).encode


def encode_bytes(value: Any) -> bytes:
    """``encode(value)`` as the bytes sent."""
    return encode(value).encode()


def list_body(head: dict[str, Any], items: Iterable[bytes]) -> bytes:
    """``encode_bytes({**head, "items": [...]})`` for items already encoded (``items``: each
    one's ``encode_bytes``); ``head`` must not hold ``items``."""
    start = encode(head)[:-1] + "," if head else "{"
    return b"".join((start.encode(), b'"items":[', b",".join(items), b"]}"))
