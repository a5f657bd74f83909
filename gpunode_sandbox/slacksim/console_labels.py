"""The console's own words: one YAML file per locale in ``labels/``, keyed by label id.

The console is the stand-in's page, not gpunode's: its labels live here, beside it, and the
product's render code knows nothing of them. Which file the page gets, first that applies:
the ``?lang=`` the page asked for, the acting person's Slack locale (as Slack's own client
follows its user's language), else English. A tag names a file when it is that file's
locale in any spelling (``zh_CN``, ``zh-cn``, ``zh-Hans``, a bare ``zh`` for Simplified
Chinese; ``en-GB`` for English); Traditional Chinese (``zh-TW``, ``zh-HK``, ``zh-Hant``) is
not Simplified, so it falls through to the next choice.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

LABELS = Path(__file__).with_name("labels")
DEFAULT = "en"
#: ``lang[-_]rest`` with an optional POSIX ``.codeset`` / ``@modifier`` (``zh_CN.UTF-8``)
_TAG = re.compile(r"(?P<lang>[A-Za-z]{2,3})(?:[-_](?P<rest>[A-Za-z0-9_-]*))?(?:[.@].*)?")
_TRADITIONAL = {"tw", "hk", "mo", "hant"}


def locales() -> list[str]:
    """The locales the console has labels for (``en`` first)."""
    found = sorted(p.stem for p in LABELS.glob("*.yaml"))
    return sorted(found, key=lambda loc: loc != DEFAULT)


def match(tag: str | None) -> str | None:
    """The console locale ``tag`` names, or None."""
    m = _TAG.fullmatch((tag or "").strip())
    if m is None:
        return None
    lang = m.group("lang").lower()
    subtags = {s.lower() for s in re.split(r"[-_]", m.group("rest") or "") if s}
    if lang == "zh" and subtags & _TRADITIONAL:
        return None  # Simplified labels for a Traditional reader would change the script
    # one file per language: its locale serves every region of that language
    return next((loc for loc in locales() if loc.lower().partition("-")[0] == lang), None)


def choose(*, asked: str | None, person: str | None) -> str:
    """``asked`` if the console has it, else the person's Slack locale, else English."""
    return match(asked) or match(person) or DEFAULT


@cache
def labels(locale: str) -> dict[str, str]:
    """Every label of the console in ``locale`` (placeholders such as ``{n}`` left in)."""
    data = yaml.safe_load((LABELS / f"{locale}.yaml").read_text(encoding="utf-8"))
    return {str(k): str(v) for k, v in data.items()}
