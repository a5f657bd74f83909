"""The sandbox console's own labels (``templates/html/<locale>/console.j2``), as a dict.

The console (``bot/sandbox/slacksim/static``) is a static page; it fetches these with its
state and fills them in, so its wording lives with every other template and is reviewed (and
translated) in one place. A locale without the file falls back to ``en``.
"""

from __future__ import annotations

from functools import cache

from bot.render import environment


@cache
def console_labels(locale: str = "en") -> dict[str, str]:
    """Every label of the console in ``locale`` (placeholders such as ``{n}`` left in)."""
    labels = environment.macros("html", "console.j2", locale=locale).labels
    return {str(k): str(v) for k, v in labels.items()}
