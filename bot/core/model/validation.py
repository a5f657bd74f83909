"""What a pydantic ``ValidationError`` says, as one line a person can act on.

Every edge that validates input (settings, thresholds, the policy, Alertmanager and Slack
payloads, evidence files) turns the error into ``key.path: problem; key.path: problem``
through ``validation_message``. Pure: no I/O. The input value is never echoed unless the
caller's ``message`` chooses to (it may be megabytes, or a secret pasted by mistake).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import ValidationError

Loc = tuple[int | str, ...]
#: one of ``ValidationError.errors()``: ``loc``, ``msg``, ``type``, ``input``, ``ctx``
ErrorDetail = Mapping[str, object]


def dotted(loc: Loc) -> str:
    """``alerts.0.labels``: the key path as dots."""
    return ".".join(str(p) for p in loc)


def validation_message(
    exc: ValidationError,
    *,
    limit: int | None = None,
    count_rest: bool = False,
    where: Callable[[Loc], str] = dotted,
    top: str | None = "",
    message: Callable[[ErrorDetail], str] | None = None,
    line_of: Callable[[Loc], int | None] | None = None,
) -> str:
    """``where(loc): msg`` for the first ``limit`` errors (all when None), joined by ``; ``.

    ``top`` names an error at the top level (empty path); None shows the message alone.
    ``count_rest`` appends `` (and N more)`` when errors were left out. ``message`` rewords
    one error (default: pydantic's ``msg``); ``line_of`` prefixes ``line N: `` where the
    source line of a key path is known (YAML files)."""
    errors = exc.errors(include_url=False)
    shown = errors if limit is None else errors[:limit]
    parts = []
    for err in shown:
        loc = tuple(err["loc"])
        text = message(err) if message is not None else str(err["msg"])
        line = line_of(loc) if line_of is not None and loc else None
        prefix = f"line {line}: " if line else ""
        key = where(loc)
        if not key and top is None:
            parts.append(f"{prefix}{text}")
        else:
            parts.append(f"{prefix}{key or top}: {text}")
    out = "; ".join(parts)
    if count_rest and len(errors) > len(shown):
        out += f" (and {len(errors) - len(shown)} more)"
    return out
