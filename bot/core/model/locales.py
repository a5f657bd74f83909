"""Which language a message is written in (pure: no I/O, the inputs are arguments).

Supported: ``en`` and ``zh-CN`` (Simplified Chinese). The choice, first that applies:

1. ``explicit``: what the caller asked for (the CLI's ``--lang``);
2. ``channel``: the channel's override from the settings (``slack.channel_locales``), which
   covers every message in that channel, ephemeral ones too: a team that runs an English-only
   channel gets English whoever asks;
3. ``thread``: the locale the incident thread was opened in (it keeps the locale of the
   channel or of the person who opened it) -- for posts *in the thread* only; an ephemeral
   reply is for one person and skips this step;
4. ``user``: the asking person's Slack locale (``users.info`` with ``include_locale``);
5. ``DEFAULT_LOCALE`` (``en``).

Spellings are normalised (``normalize``): ``zh-CN``, ``zh_CN``, ``zh-cn``, ``zh-Hans(-CN)``,
``zh-SG`` and a bare ``zh`` are Simplified Chinese; ``en``, ``en-US``, ``en-GB``, ``en_US.UTF-8``
are English. ``zh-TW``, ``zh-HK`` and ``zh-Hant`` are *Traditional* Chinese, which gpunode does
not speak: they fall through to the next step (in practice English). Serving Simplified text to
a Traditional reader would change the script and, in Taiwan, much of the vocabulary
(内存/記憶體, 节点/節點); English is the language every gpunode reader is known to share.
Any other language (``ja-JP``, ``fr-FR``...) falls through the same way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

Locale = Literal["en", "zh-CN"]
Audience = Literal["thread", "person"]

SUPPORTED: Final[tuple[Locale, ...]] = get_args(Locale)
DEFAULT_LOCALE: Final[Locale] = "en"

#: ``lang[-_]rest`` with an optional POSIX ``.codeset`` / ``@modifier`` (``zh_CN.UTF-8``)
_TAG = re.compile(r"(?P<lang>[A-Za-z]{2,3})(?:[-_](?P<rest>[A-Za-z0-9_-]*))?(?:[.@].*)?")
_TRADITIONAL = {"tw", "hk", "mo", "hant", "yue"}  # Cantonese is written in Traditional


class UnsupportedLocaleError(ValueError):
    """An explicit locale (``--lang``, a setting) that gpunode cannot write in.

    A ``ValueError`` so argparse and pydantic report it as a bad value; the edges that
    catch it (CLI, settings) turn it into their own error with what to do."""

    def __init__(self, value: str) -> None:
        super().__init__(f"unsupported language {value!r}: use one of {', '.join(SUPPORTED)}")
        self.value = value


@functools.lru_cache(maxsize=256)
def normalize(tag: str | None) -> Locale | None:
    """The supported locale ``tag`` names, or None (unknown, Traditional Chinese, empty).
    Remembered per spelling (a regex per candidate was a tenth of a slash command's own work;
    the spellings are Slack's locales and the settings', a few dozen at most)."""
    if not tag:
        return None
    m = _TAG.fullmatch(tag.strip())
    if m is None:
        return None
    lang = m.group("lang").lower()
    subtags = {s.lower() for s in re.split(r"[-_]", m.group("rest") or "") if s}
    if lang == "en":
        return "en"
    if lang == "zh" and not subtags & _TRADITIONAL:
        return "zh-CN"
    return None


def parse_locale(value: str) -> Locale:
    """An explicit choice: its supported locale, else ``UnsupportedLocaleError`` (never a guess)."""
    locale = normalize(value)
    if locale is None:
        raise UnsupportedLocaleError(value)
    return locale


def choose_locale(
    *,
    explicit: str | None = None,
    channel: str | None = None,
    thread: str | None = None,
    user: str | None = None,
    audience: Audience = "thread",
) -> Locale:
    """The locale of one message, by the precedence in the module docstring.

    ``audience="person"`` (an ephemeral reply, a modal) ignores ``thread``: it follows the
    person who asked. Inputs that are not supported locales are skipped, not errors: a
    Slack locale gpunode does not speak is simply not a preference it can honour."""
    steps = (explicit, channel, thread if audience == "thread" else None, user)
    for candidate in steps:
        locale = normalize(candidate)
        if locale is not None:
            return locale
    return DEFAULT_LOCALE


def opening_locale(*, channel: str | None = None, user: str | None = None) -> Locale:
    """The locale a new incident thread keeps: the channel's, else the opener's."""
    return choose_locale(channel=channel, user=user)


#: public (C), private/group (G) and direct (D) conversation ids, as Slack writes them
_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{2,}")


def parse_channel_locales(value: Any) -> dict[str, str]:
    """The settings' ``slack.channel_locales``: ``{channel_id: locale}``, supported locales only.

    Accepts a mapping (YAML) or the environment's ``C0123=zh-CN,C0456=en``; values are
    normalised (``zh_CN`` -> ``zh-CN``). A ValueError names the key and the problem but, like
    every settings error, never echoes the value."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        pairs: dict[str, Any] = {}
        for item in filter(None, (p.strip() for p in value.split(","))):
            channel, sep, locale = item.partition("=")
            if not sep:
                raise ValueError("write each entry as CHANNEL_ID=LOCALE, separated by commas")
            pairs[channel.strip()] = locale.strip()
        value = pairs
    if not isinstance(value, Mapping):
        raise ValueError("must map channel IDs to a locale (C0123: zh-CN)")
    out: dict[str, str] = {}
    for channel, locale in value.items():
        if not isinstance(channel, str) or not _CHANNEL_ID.fullmatch(channel):
            raise ValueError("a key is not a Slack channel ID (C..., G... as in the channel URL)")
        found = normalize(locale) if isinstance(locale, str) else None
        if found is None:
            raise ValueError(
                f"channel {channel}: unsupported locale; use one of {', '.join(SUPPORTED)}"
            )
        out[channel] = found
    return out
