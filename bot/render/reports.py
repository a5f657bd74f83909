"""Shared context for whole-document templates (Markdown report, terminal report).

``say`` and ``fact`` are handed to the template bound to one output format, so a template
cannot forget to escape a sentence's parameters or a fact's source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bot.core.diagnosis.findings import Fact
from bot.render.sentences import Category, Fmt, fact_text, sentence, value_text
from bot.render.views import DiagnosisView


def context_for(
    view: DiagnosisView,
    *,
    fmt: Fmt,
    incident: str | None,
    locale: str,
    source_limit: int | None,
    footnotes: bool = False,
) -> dict[str, Any]:
    """Template context. With ``footnotes`` (Markdown), ``fact()`` gives ``62.0 GiB working
    set[^3]`` and ``sources()`` lists each distinct source once, numbered by first use."""

    def say(
        category: Category,
        key: str,
        params: Mapping[str, str | int | float | None],
        subject: str | None,
        severity: str | None = None,
    ) -> str:
        return sentence(
            category, key, params, fmt=fmt, subject=subject, severity=severity, locale=locale
        )

    sources: dict[str, int] = {}

    def fact(f: Fact) -> str:
        if not footnotes:
            return fact_text(f, fmt=fmt, source_limit=source_limit, locale=locale)
        n = sources.setdefault(f.source, len(sources) + 1)
        return f"{value_text(f, fmt=fmt, locale=locale)}[^{n}]"

    def sources_list() -> list[tuple[int, str]]:
        """Footnotes so far: ``(number, source)`` in first-use order."""
        return [(n, src) for src, n in sources.items()]

    helpers: dict[str, Callable[..., Any]] = {"say": say, "fact": fact, "sources": sources_list}
    return {"v": view, "incident": incident, **helpers}
