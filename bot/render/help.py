"""The command help in a locale: the grammar (verbs, their arguments, the usage line) is
``bot.core.governance.commands``; the words (descriptions, the argument note) are
``templates/sentences/commands.j2``. The layout is ``commands.help_text``'s, so the
English help is the same text the grammar shows with a usage error.
"""

from __future__ import annotations

from typing import Any

from bot.core.governance import commands
from bot.render import environment
from bot.render.filters import display_width, pad


def _t(locale: str) -> Any:
    return environment.macros("sentences", "commands.j2", locale=locale)


def help_text(verb: str | None = None, *, prog: str = commands.DEFAULT_PROG, locale: str) -> str:
    """All commands with one line each, or one command's usage and description."""
    t = _t(locale)
    arg_help = str(t.arg_help()).strip()
    if verb is not None:
        description = str(t.description(verb)).strip()
        return f"{commands.usage(verb, prog=prog)}\n  {description}\n{arg_help}"
    usages = [commands.usage(v, prog=prog) for v in commands.VERBS]
    width = max(display_width(u) for u in usages)
    lines = [
        f"{pad(u, width)}  {str(t.description(v)).strip()}"
        for u, v in zip(usages, commands.VERBS, strict=True)
    ]
    return "\n".join([str(t.commands_title()).strip(), *lines, arg_help])
