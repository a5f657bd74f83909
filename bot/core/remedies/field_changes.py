"""What a change did to each field, as people say it (pure): "memory limit 64Gi → 48Gi",
not the strategic-merge body that was sent.

``field_changes(before, after)`` compares the recorded state before and after a change (a dry
run's ``after`` is the server's dry-run answer) field by field; bookkeeping (resourceVersion,
generation, the container's name) is left out. Memory quantities are written as people write
them: whole or one-decimal ``Gi`` from 1 GiB up, ``Mi`` below (``34944Mi`` reads ``34.1Gi``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from bot.core.model.quantity import QuantityError, parse_quantity

#: recorded bookkeeping, not values a person changed
NOISE = frozenset({"resourceVersion", "generation", "container", "observedGeneration"})
GI, MI = 1024**3, 1024**2


class FieldDelta(BaseModel):
    """One field: ``field`` is its path (``resources.limits.memory``), values as people
    write them; "" before or after: unset."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    field: str
    before: str
    after: str


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for k, v in value.items():
            out |= _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: value}


def people_quantity(field: str, value: object) -> str:
    """``value`` as a person writes it: memory in Gi (one decimal at most) or Mi, booleans as
    Kubernetes writes them, anything else as it is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if not field.endswith(".memory"):
        return text
    try:
        size = parse_quantity(text).value()
    except QuantityError:
        return text
    if size >= GI:
        return f"{round(size / GI, 1):g}Gi"
    return f"{round(size / MI, 1):g}Mi"


def field_changes(before: Mapping[str, object], after: Mapping[str, object]) -> list[FieldDelta]:
    """Each field whose value differs between ``before`` and ``after`` (only fields ``after``
        states: the recorded ``before`` holds more than the change touched, e.g. env for undo), in
    the order of their paths."""
    old, new = _flatten(before), _flatten(after)
    out: list[FieldDelta] = []
    for name in sorted(new):  # one order, however the record was stored (JSON sorts keys)
        if name.split(".")[-1] in NOISE or name.startswith("env"):
            continue
        b, a = people_quantity(name, old.get(name)), people_quantity(name, new.get(name))
        if old.get(name) != new.get(name) and b != a:
            out.append(FieldDelta(field=name, before=b, after=a))
    return out
