"""What the terminal commands print, in a locale (wording in
``templates/text/<locale>/cli.txt.j2``; the commands themselves are bot/cli/ops.py)."""

from __future__ import annotations

from typing import Any

from bot.render import environment


def line(name: str, *args: Any, locale: str) -> str:
    """One macro of ``cli.txt.j2`` rendered: ``line("resolved", "INC-0007")``."""
    macro = getattr(environment.macros("text", "cli.txt.j2", locale=locale), name)
    return str(macro(*args))
