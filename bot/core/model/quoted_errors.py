"""An error quoted inside a gap, as flat params a gap can hold (pure).

A gap's params are single values (``GapParam``: a word or a count), while an error a person
meets carries a key and params of its own (``GpunodeError.key``/``params``; a request label's
params nested as a mapping). ``flat_error`` writes such an error under a prefix:

- ``{prefix}_key``: the error's key (which sentence words it, ``templates/slack/errors.j2``);
- ``{prefix}.{name}``: each of its params; a mapping's (``doing_params``, a quoted error's
  ``error_params``) as ``{prefix}.{name}.{sub}``, and so on (an empty mapping is left out);
  a flag as 0 or 1.

``error_of`` reads them back, for a presenter to word the error in its reader's language. The
gap keeps the error's English text beside them (under ``{prefix}`` itself), for logs, English
readers and anything that cannot be written this way: an error whose params hold a value a
gap cannot (a fraction, a list, None) gets no key, so it is shown by its English text.
"""

from __future__ import annotations

from collections.abc import Mapping

#: a flat param's value: a word or a count (``bot.core.model.evidence.GapParam``'s scalars)
Flat = str | int


def flat_error(prefix: str, key: str, params: Mapping[str, object]) -> dict[str, Flat]:
    """``key`` and ``params`` as flat params under ``prefix``; empty when the error has no key
    or a param no gap can hold (then its English text is all there is)."""
    if not key:
        return {}
    out: dict[str, Flat] = {f"{prefix}_key": key}
    if not _flatten(params, f"{prefix}.", out):
        return {}
    return out


def _flatten(params: Mapping[str, object], path: str, out: dict[str, Flat]) -> bool:
    for name, value in params.items():
        here = f"{path}{name}"
        if isinstance(value, bool):
            out[here] = int(value)
        elif isinstance(value, str | int):
            out[here] = value
        elif isinstance(value, float) and value.is_integer():
            out[here] = int(value)
        elif isinstance(value, Mapping):  # an empty one is left out (read back: absent)
            if not _flatten(value, f"{here}.", out):
                return False
        else:
            return False
    return True


def error_of(prefix: str, params: Mapping[str, object]) -> tuple[str, dict[str, object]]:
    """The key and params of the error ``flat_error`` wrote under ``prefix`` in ``params``
    (``("", {})`` when none was)."""
    key = params.get(f"{prefix}_key")
    if not isinstance(key, str) or not key:
        return "", {}
    start = f"{prefix}."
    nested: dict[str, object] = {}
    for name, value in params.items():
        if not name.startswith(start):
            continue
        *parents, leaf = name[len(start) :].split(".")
        level = nested
        for part in parents:
            inner = level.setdefault(part, {})
            if not isinstance(inner, dict):
                break
            level = inner
        else:
            level[leaf] = value
    return key, nested
