"""The one Jinja2 environment for every rendered view (Slack mrkdwn, Markdown, text, YAML).

Why one: the same filters (bytes, percent, the mrkdwn escape) and the same strictness
(``StrictUndefined``: a missing value is a bug, never an empty string) everywhere.

Templates live in the repository's ``templates/`` during development and in the installed
package's ``bot/_templates`` (wheel force-include); the first that exists wins.

Locale-aware lookup: ``templates/<kind>/<locale>/<name>`` with ``en`` as the fallback, so a
locale can be added file by file. ``normalize_locale`` maps the spellings callers meet (Slack's
``users.info`` gives ``zh-CN``/``en-US``, a shell ``LANG`` gives ``zh_CN.UTF-8``, a person types
``zh``) onto the template folder names (``LOCALES``). Kube manifests (``templates/kube/...``)
are not localised and are loaded by plain path.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from bot.core import actors
from bot.render import filters

DEFAULT_LOCALE = "en"
#: the template locales (folder names under ``templates/<kind>/``)
LOCALES: tuple[str, ...] = ("en", "zh-CN")
#: Simplified Chinese spellings; Traditional (zh-TW, zh-HK, zh-Hant) is not Simplified and
#: falls back to English until it has its own templates
_SIMPLIFIED = {"zh", "zh-cn", "zh-sg", "zh-hans", "zh-hans-cn", "zh-hans-sg"}
_HERE = Path(__file__).resolve().parent


def normalize_locale(locale: str | None) -> str:
    """A template locale for any common spelling: ``zh``, ``zh_CN``, ``zh-cn``,
    ``zh_CN.UTF-8``, ``zh-Hans`` -> ``zh-CN``; ``en-US`` -> ``en``; anything unknown (or
    empty) -> ``en``. Pure; never raises."""
    if not locale:
        return DEFAULT_LOCALE
    tag = locale.split(".", 1)[0].split("@", 1)[0].replace("_", "-").strip().lower()
    if tag in _SIMPLIFIED:
        return "zh-CN"
    for known in LOCALES:
        if tag == known.lower() or tag.split("-", 1)[0] == known.lower():
            return known
    return DEFAULT_LOCALE


@cache
def template_root() -> Path:
    """The templates directory: installed ``bot/_templates`` first, else the repository's."""
    for candidate in (_HERE.parent / "_templates", _HERE.parents[1] / "templates"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("gpunode templates not found (reinstall the package)")


@cache
def get_environment() -> jinja2.Environment:
    """The shared environment (cached). Autoescape is off: each format escapes its own way,
    explicitly, through the filters (``mrkdwn``, ``md``) or pre-escaped view models."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_root())),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - not HTML; escaping is per format, see filters
        keep_trailing_newline=True,
        # templates ship with the package and never change while the bot runs; without
        # this Jinja stats every file on every lookup (measured: 4 stats per slash command)
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(filters.FILTERS)
    # who acted when it was not a person: templates branch on these, never on a spelled name
    env.globals["actors"] = {
        "gpunode": actors.GPUNODE,
        "alertmanager": actors.ALERTMANAGER,
        "machines": tuple(sorted(actors.MACHINES)),
    }
    return env


@cache
def localized_name(kind: str, name: str, *, locale: str = DEFAULT_LOCALE) -> str:
    """``<kind>/<locale>/<name>`` if that file exists (``locale`` normalised), else the
    ``en`` one."""
    root = template_root()
    for loc in (normalize_locale(locale), DEFAULT_LOCALE):
        rel = f"{kind}/{loc}/{name}"
        if (root / rel).is_file():
            return rel
    raise jinja2.TemplateNotFound(f"{kind}/{DEFAULT_LOCALE}/{name}")


def get_template(kind: str, name: str, *, locale: str = DEFAULT_LOCALE) -> jinja2.Template:
    return get_environment().get_template(localized_name(kind, name, locale=locale))


def render(kind: str, name: str, *, locale: str = DEFAULT_LOCALE, **ctx: Any) -> str:
    """Render one whole template to text."""
    return get_template(kind, name, locale=locale).render(**ctx)


def macros(kind: str, name: str, *, locale: str = DEFAULT_LOCALE) -> Any:
    """The template's module: its macros are attributes (``macros(...).header(node=...)``).

    Used where Python builds the structure (Block Kit) and the template supplies each
    piece of wording.
    """
    return get_template(kind, name, locale=locale).module
