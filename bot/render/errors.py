"""An error as a person reads it: ``GpunodeError.key`` and ``params`` worded in a language.

Errors keep their English text for logs and audit rows; presenters show ``error_text``,
whose words are in ``templates/slack/errors.j2`` and the catalogs. A key with no words (or no
key) falls back to the error's English text, so a new error is never lost, only untranslated.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.render import environment


def error_text(key: str, params: Mapping[str, object], fallback: str, locale: str) -> str:
    """The error in ``locale``, plain and unescaped (the caller escapes it for its format)."""
    macro = (
        getattr(environment.macros("slack", "errors.j2", locale=locale), key, None) if key else None
    )
    if macro is None:
        return fallback
    return str(macro(dict(params))).strip()


def error_keys() -> tuple[str, ...]:
    """Every error key the catalog words (for tests)."""
    module = environment.macros("slack", "errors.j2")
    return tuple(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))


def gap_text(code: str, params: Mapping[str, object], fallback: str, locale: str) -> str:
    """Why a source was not verified (a ``Gap``'s code and params) in ``locale``, plain and
    unescaped; a gap without words for its code reads as its English ``fallback``."""
    module = environment.macros("sentences", "gaps.j2", locale=locale)
    return " ".join(str(module.words(code, dict(params), fallback)).split())
