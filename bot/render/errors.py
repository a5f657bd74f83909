"""An error as a person reads it: ``GpunodeError.key`` and ``params`` worded in a language.

Errors keep their English text for logs and audit rows; presenters show ``error_text``,
whose words are in ``templates/slack/errors.j2`` and the catalogs. A key with no words (or no
key) falls back to the error's English text, so a new error is never lost, only untranslated.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.model.quoted_errors import error_of
from bot.render import environment


def error_text(key: str, params: Mapping[str, object], fallback: str, locale: str) -> str:
    """The error in ``locale``, plain and unescaped (the caller escapes it for its format)."""
    macro = (
        getattr(environment.macros("slack", "errors.j2", locale=locale), key, None) if key else None
    )
    if macro is None:
        return fallback
    p = dict(params)
    if p.get("doing_key"):  # the request the error answered, worded too
        p["doing"] = doing_text(str(p["doing_key"]), p.get("doing_params"), p.get("doing"), locale)
    if p.get("error_key"):  # ... or the error met on the way (a re-read that failed too)
        quoted = p.get("error_params")
        met = dict(quoted) if isinstance(quoted, Mapping) else {}
        p["error"] = error_text(str(p["error_key"]), met, str(p.get("error", "")), locale)
    if p.get("reason_key"):  # an error that quotes another (its cause): that one worded too
        quoted = p.get("reason_params")
        cause = dict(quoted) if isinstance(quoted, Mapping) else {}
        p["reason"] = error_text(str(p["reason_key"]), cause, str(p.get("reason", "")), locale)
    return str(macro(p)).strip()


def doing_text(key: str, params: object, fallback: object, locale: str) -> str:
    """What a Kubernetes request was doing (``bot.kube.doing``: a label key and its raw
    params) in ``locale``; a key without words reads as its English ``fallback``."""
    macro = getattr(environment.macros("slack", "doing.j2", locale=locale), key, None)
    if macro is None:
        return str(fallback or "")
    return str(macro(dict(params) if isinstance(params, Mapping) else {})).strip()


def doing_keys() -> tuple[str, ...]:
    """Every request label the catalog words (for tests; one layout, the same keys in every
    locale)."""
    module = environment.macros("slack", "doing.j2", locale="en")
    return tuple(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))


def error_keys() -> tuple[str, ...]:
    """Every error key the catalog words (for tests; one layout, the same keys in every
    locale)."""
    module = environment.macros("slack", "errors.j2", locale="en")
    return tuple(n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n)))


def quoted_error_text(params: Mapping[str, object], prefix: str, locale: str) -> str:
    """An error a gap quotes under ``prefix`` (``bot.core.model.quoted_errors``: its English
    text at ``prefix``, its key and flat params beside it) in ``locale``; its English text
    in English, or when it was written without a key."""
    english = str(params.get(prefix, ""))
    key, nested = error_of(prefix, params)
    if locale == "en" or not key:
        return english
    return error_text(key, nested, english, locale)


def gap_text(code: str, params: Mapping[str, object], fallback: str, locale: str) -> str:
    """Why a source was not verified (a ``Gap``'s code and params) in ``locale``, plain and
    unescaped; a gap without words for its code reads as its English ``fallback``."""
    module = environment.macros("sentences", "gaps.j2", locale=locale)
    return " ".join(str(module.words(code, dict(params), fallback)).split())


def refusal_mrkdwn(code: str, params: Mapping[str, object], locale: str) -> str:
    """A refusal's reason (``templates/slack/refusals.j2``) as mrkdwn in ``locale``. An error
    it quotes (``error_key``/``error_params`` beside its English ``message``) is worded too."""
    t = environment.macros("slack", "refusals.j2", locale=locale)
    p = dict(params)
    key = p.get("error_key")
    if key and "message" in p:
        raw = p.get("error_params")
        quoted = dict(raw) if isinstance(raw, Mapping) else {}
        p["message"] = error_text(str(key), quoted, str(p["message"]), locale)
    macro = getattr(t, code, None)
    return str(macro(p) if macro is not None else t.unknown(code, p)).strip()


def field_text(error: str, locale: str) -> str:
    """A form field's error (``bot.core.remedies.editing.FieldError``: its English text, a
    key and params) in ``locale``; plain text, as Slack shows it beside the field."""
    key = str(getattr(error, "key", ""))
    params = getattr(error, "params", {})
    return error_text(key, params if isinstance(params, Mapping) else {}, str(error), locale)
