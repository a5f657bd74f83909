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


class KeyedValueError(ValueError):
    """A validator's own complaint with a key and raw params beside its English text, so
    ``problems`` can hand it to a presenter (pydantic keeps it in the error's ``ctx``)."""

    def __init__(self, message: str, *, key: str, params: Mapping[str, object]) -> None:
        super().__init__(message)
        self.key = key
        self.params = dict(params)


def _plain(value: object) -> object:
    """A ctx value as a presenter may show it: numbers, text and flags as they are, anything
    else (an exception, a pattern object) as its text. A whole float reads as pydantic writes
    it (``greater than 0``, not ``0.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, str | int | float | bool) else str(value)


def _choices(expected: str) -> list[str]:
    """pydantic's ``'a', 'b' or 'c'`` as its choices (``, `` and `` or `` joined back give the
    same text)."""
    head, _, last = expected.rpartition(" or ")
    return [*head.split(", "), last] if head else [last]


def problems(
    exc: ValidationError,
    *,
    where: Callable[[Loc], str] = dotted,
    message: Callable[[ErrorDetail], str] | None = None,
    line_of: Callable[[Loc], int | None] | None = None,
) -> list[dict[str, object]]:
    """Each error of ``exc`` keyed for a presenter, in the order ``validation_message``
    writes them: ``at`` (``where(loc)``), ``type`` (pydantic's error type, or a
    ``KeyedValueError``'s key), ``ctx`` (pydantic's context, or that error's params, plain
    values only), ``choices`` (literal and enum errors), ``line`` (when ``line_of`` knows
    it) and ``msg``: the English text ``validation_message`` shows, which a presenter quotes
    for a type it has no words for. The input value is never kept."""
    out: list[dict[str, object]] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        raw = err.get("ctx") or {}
        cause = raw.get("error") if isinstance(raw, dict) else None
        kind = str(err["type"])
        ctx = {str(k): _plain(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        if isinstance(cause, KeyedValueError):
            kind, ctx = cause.key, dict(cause.params)
        problem: dict[str, object] = {
            "at": where(loc),
            "type": kind,
            "ctx": ctx,
            "msg": message(err) if message is not None else str(err["msg"]),
        }
        if kind in ("literal_error", "enum") and isinstance(ctx.get("expected"), str):
            problem["choices"] = _choices(str(ctx["expected"]))
        line = line_of(loc) if line_of is not None and loc else None
        if line:
            problem["line"] = line
        out.append(problem)
    return out
