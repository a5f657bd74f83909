"""One template sentence per stable key: finding codes, talking-point keys, verdict
causes and plan warning codes.

Sentences live in ``templates/sentences/<category>.j2``, one macro per key (the
macro name is the key with non-identifier characters replaced by ``_``); each macro takes
``p``, the key's params already formatted by unit suffix (``_bytes`` -> ``62.0 GiB``) and
escaped for the output format, plus ``p.subject`` and ``p.raw`` (the unformatted params, for
conditions such as ``-1`` meaning "unknown"). A key without a sentence, or a sentence
that needs a param the analysis did not give, renders the ``fallback`` macro of
``common.j2`` (the key and its raw params) rather than failing the whole report; the tests
check that no fallback is used for any key the analysis can emit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

import jinja2

from bot.core.diagnosis.findings import Fact
from bot.render import environment
from bot.render.filters import ESCAPERS, format_param, format_value

Category = Literal["findings", "talking_points", "verdicts", "warnings", "notes"]
Fmt = Literal["mrkdwn", "markdown", "text"]
CATEGORIES: tuple[Category, ...] = (
    "findings",
    "talking_points",
    "verdicts",
    "warnings",
    "notes",
)
_NON_IDENT = re.compile(r"\W")


class MissingSentenceError(LookupError):
    """Raised only in ``strict`` mode (tests): a key has no usable sentence."""


def macro_name(key: str) -> str:
    name = _NON_IDENT.sub("_", key)
    return "_" + name if name[:1].isdecimal() else name


def _module(category: str, locale: str) -> object:
    return environment.macros("sentences", f"{category}.j2", locale=locale)


def defined_keys(category: Category, *, locale: str) -> set[str]:
    """Macro names defined for a category (compare with ``macro_name(key)``)."""
    rel = environment.localized_name("sentences", f"{category}.j2", locale=locale)
    source = (environment.template_root() / rel).read_text(encoding="utf-8")
    return set(re.findall(r"{%-?\s*macro\s+(\w+)\s*\(", source))


def _flat(text: str) -> str:
    return " ".join(text.split())


def sentence(
    category: Category,
    key: str,
    params: Mapping[str, str | int | float | None],
    *,
    fmt: Fmt,
    subject: str | None = None,
    severity: str | None = None,
    locale: str,
    strict: bool = False,
) -> str:
    """The sentence for ``key`` in ``fmt`` with every string param escaped for it."""
    esc = ESCAPERS[fmt]
    p: dict[str, object] = {k: esc(format_param(k, v, locale=locale)) for k, v in params.items()}
    p.setdefault("subject", esc(subject) if subject is not None else "")
    # raw numbers for conditions in the sentence (e.g. -1 = "unknown" sentinels)
    p["raw"] = dict(params)
    p["severity"] = severity or ""
    macro = getattr(_module(category, locale), macro_name(key), None)
    if macro is not None:
        try:
            text = _flat(str(macro(p)))
            if category == "verdicts" and "growth_rate_gib_per_h" in params:
                # the verdict's time dimension (bot/core/diagnosis/rules/growth.py), for every cause
                clause = getattr(_module(category, locale), "time_dimension", None)
                if clause is not None:
                    text += " " + _flat(str(clause(p)))
            return text
        except jinja2.UndefinedError as exc:
            if strict:
                raise MissingSentenceError(f"{category}/{key}: {exc}") from exc
    elif strict:
        raise MissingSentenceError(f"{category}/{key}: no sentence")
    raw = ", ".join(f"{esc(k)}={p[k]}" for k in sorted(params) if k not in ("raw", "severity"))
    common = environment.macros("sentences", "common.j2", locale=locale)
    return _flat(str(common.fallback(esc(key), raw)))


def middle_truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = limit - 1
    head = keep // 2
    return text[:head] + "…" + text[len(text) - (keep - head) :]


def value_text(fact: Fact, *, fmt: Fmt, locale: str) -> str:
    """``62.0 GiB working set``, ``99% of allocatable in limits``, ``1 pod to evict``: the
    value with its label as a reader says it (wording in ``common.j2`` ``fact_value``),
    escaped for ``fmt``."""
    esc = ESCAPERS[fmt]
    value = format_value(fact.value, fact.unit)
    common = environment.macros("sentences", "common.j2", locale=locale)
    return _flat(
        str(common.fact_value(esc(value or "none"), fact.label, esc(fact.label), fact.value))
    )


def fact_text(fact: Fact, *, fmt: Fmt, source_limit: int | None = 72, locale: str) -> str:
    """``62.0 GiB working set (cgroup:/kubepods/…)``, escaped for ``fmt``."""
    src = fact.source if source_limit is None else middle_truncate(fact.source, source_limit)
    return f"{value_text(fact, fmt=fmt, locale=locale)} ({ESCAPERS[fmt](src)})"
