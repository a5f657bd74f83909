"""The one Jinja2 environment for every rendered view (Slack mrkdwn, Markdown, text, YAML).

Why one: the same filters (bytes, percent, the mrkdwn escape) and the same strictness
(``StrictUndefined``: a missing value is a bug, never an empty string) everywhere.

Templates live in the repository's ``templates/`` during development and in the installed
package's ``bot/_templates`` (wheel force-include); the first that exists wins.

One environment per render locale, each with that locale's gettext catalog installed
(``bot.render.catalogs``): a template is one layout, ``templates/<kind>/<name>``, whose words
are marked (``{% trans %}``, ``_()``) and come from the catalog. Templates not merged yet
still have a copy per locale, ``templates/<kind>/<locale>/<name>``, with ``en`` as the
fallback. Locale spellings go through the one normaliser, ``bot.core.model.locales.normalize``.
Kube manifests (``templates/kube/...``) are not localised and are loaded by plain path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from bot.core.model import actors, locales
from bot.render import catalogs, filters
from bot.render.markers import marker_label

DEFAULT_LOCALE = locales.DEFAULT_LOCALE
#: the supported locales: the one list lives in ``bot.core.model.locales``
LOCALES: tuple[str, ...] = locales.SUPPORTED
_HERE = Path(__file__).resolve().parent


def normalize_locale(locale: str | None) -> str:
    """The locale a view renders in (``catalogs.render_locale``: ``bot.core.model.locales``'
    normaliser, ``en`` for anything it does not know; ``en-XA`` for tests)."""
    return catalogs.render_locale(locale)


@cache
def template_root() -> Path:
    """The templates directory: installed ``bot/_templates`` first, else the repository's."""
    for candidate in (_HERE.parent / "_templates", _HERE.parents[1] / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("gpunode templates not found (reinstall the package)")


class _Loader(jinja2.FileSystemLoader):
    """The templates folder, where an import of a per-locale copy that has been merged into
    one layout (``sentences/en/common.j2`` -> ``sentences/common.j2``) finds the merged one:
    the words then come from the importing environment's catalog."""

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        try:
            return super().get_source(environment, template)
        except jinja2.TemplateNotFound:
            parts = template.split("/")
            if len(parts) == 3 and parts[1] in _FOLDERS:
                return super().get_source(environment, f"{parts[0]}/{parts[2]}")
            raise


#: the per-locale template folders still present while the pairs are being merged
_FOLDERS = frozenset({*LOCALES, catalogs.PSEUDO_LOCALE})


def get_environment(*, locale: str, html: bool = False) -> jinja2.Environment:
    """The shared environment of one render locale (cached). Autoescape is off: each format
    escapes its own way, explicitly, through the filters (``mrkdwn``, ``md``) or pre-escaped
    view models. ``html=True``: the same with HTML autoescape on (the postmortem's HTML: every
    value is escaped unless a template marks it safe).

    ``jinja2.ext.i18n`` with the locale's catalog installed (new-style gettext: ``_("…
    %(node)s", node=x)``, ``{% trans %}`` blocks trimmed of layout whitespace), and the
    locale-bound Babel formats as filters (``duration``, ``number``) and globals
    (``locale``; ``quoted_error``: an error a gap quotes, worded in the locale).

    ``locale`` is required, like every renderer's: a forgotten one is a type error, never
    English by default (the cached helpers below are wrapped so that mypy sees this)."""
    return _environment(normalize_locale(locale), html)


@cache
def _environment(loc: str, html: bool) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=_Loader(str(template_root())),
        undefined=jinja2.StrictUndefined,
        autoescape=html,  # noqa: S701 - text formats escape per format (filters); HTML here
        keep_trailing_newline=True,
        # templates ship with the package and never change while the bot runs; without
        # this Jinja stats every file on every lookup (measured: 4 stats per slash command)
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    # a {% trans %} block's message id is its words, not the template's line breaks
    env.policies["ext.i18n.trimmed"] = True
    env.install_gettext_translations(catalogs.translations(loc), newstyle=True)  # type: ignore[attr-defined]
    env.filters.update(filters.FILTERS)
    t = catalogs.translator(loc)
    env.filters["duration"] = t.duration
    env.filters["number_l10n"] = t.number
    env.filters["when"] = t.when
    env.filters["clock"] = lambda iso: filters.fmt_clock(str(iso), locale=loc)
    env.filters["marker"] = lambda label, kind, params: marker_label(
        str(kind), params or {}, str(label), t
    )
    env.globals["locale"] = loc
    env.globals["quoted_error"] = functools.partial(_quoted_error, locale=loc)
    # who acted when it was not a person: templates branch on these, never on a spelled name
    env.globals["actors"] = {
        "gpunode": actors.GPUNODE,
        "alertmanager": actors.ALERTMANAGER,
        "machines": tuple(sorted(actors.MACHINES)),
    }
    return env


def _quoted_error(params: Mapping[str, object], prefix: str, *, locale: str) -> str:
    """``quoted_error(params, "error")`` in a template: an error a gap quotes, in the
    environment's locale (``bot.render.errors.quoted_error_text``)."""
    from bot.render.errors import quoted_error_text  # it renders with this module

    return quoted_error_text(params, prefix, locale)


def localized_name(kind: str, name: str, *, locale: str) -> str:
    """``<kind>/<name>`` (one layout for every locale, words from the catalog) if it exists;
    else the per-locale copy ``<kind>/<locale>/<name>`` (``locale`` normalised), else the
    ``en`` one. The per-locale copies are the layout forks being merged into one."""
    return _localized_name(kind, name, locale)


@cache
def _localized_name(kind: str, name: str, locale: str) -> str:
    root = template_root()
    if (root / kind / name).is_file():
        return f"{kind}/{name}"
    loc = normalize_locale(locale)
    for folder in (loc, DEFAULT_LOCALE):
        rel = f"{kind}/{folder}/{name}"
        if (root / rel).is_file():
            return rel
    raise jinja2.TemplateNotFound(f"{kind}/{name}")


def compile_views() -> int:
    """Compile every view template in every locale's environment (HTML ones in the HTML
    environments, the ``kube/`` manifests in the English one, which renders them); how many.
    Jinja compiles a template on its first use, 50 ms of CPU on average (3 s for all,
    measured), holding the interpreter lock on whichever thread renders (the diagnostic
    Job's manifest: the event loop itself): a serving bot pays it at start-up
    (``bot.wiring.warming``), not in its first diagnoses while slash commands wait for their
    acks (issue #25)."""
    count = 0
    manifests = normalize_locale(DEFAULT_LOCALE)
    for loc in dict.fromkeys(normalize_locale(locale) for locale in LOCALES):
        for html in (False, True):
            env = _environment(loc, html)
            for name in env.list_templates():
                if name.startswith("html/") != html:
                    continue
                if name.startswith("kube/") and loc != manifests:
                    continue
                env.get_template(name)
                count += 1
    return count


def get_template(kind: str, name: str, *, locale: str) -> jinja2.Template:
    loc = normalize_locale(locale)
    return _environment(loc, False).get_template(_localized_name(kind, name, loc))


def render(kind: str, name: str, *, locale: str, **ctx: Any) -> str:
    """Render one whole template to text."""
    return get_template(kind, name, locale=locale).render(**ctx)


def macros(kind: str, name: str, *, locale: str) -> Any:
    """The template's module: its macros are attributes (``macros(...).header(node=...)``).

    Used where Python builds the structure (Block Kit) and the template supplies each
    piece of wording.
    """
    return get_template(kind, name, locale=locale).module
