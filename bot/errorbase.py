"""The two errors ``gpunode collect`` can raise, ``GpunodeError`` and ``CollectorError``,
apart from the other nineteen: the diagnostic Job imports only these (creating ``bot.errors``'
21 classes is ~3M instructions, ~0.7 ms, of its run; issue #25). Everyone else imports them
from ``bot.errors``, their public home, which re-exports these very classes (their
``__module__`` says so too).
"""

from __future__ import annotations


class GpunodeError(Exception):
    """Base of every gpunode error. ``str(err)`` is safe to show a user.

    ``str(err)`` is the English text (logs, audit rows, JSON). An error a person can meet
    also carries ``key`` and ``params`` (raw values): a presenter words it in the reader's
    language from the catalog (``bot.render.errors``, ``templates/slack/errors.j2``), and
    falls back to the English text for a key it has no words for."""

    __module__ = "bot.errors"  # its public home, which re-exports it

    #: short machine-readable reason, stable across versions (used in JSON and audit rows)
    code: str = "error"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        key: str | None = None,
        params: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        #: which sentence words this error (``errors.j2``); empty: only the English text
        self.key = key or ""
        self.params: dict[str, object] = dict(params or {})

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.code


class CollectorError(GpunodeError):
    __module__ = "bot.errors"
    code = "collector"
