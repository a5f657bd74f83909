"""The stand-in's exceptions: ``ApiError``, the one the Web API handlers raise (a Slack
``{"ok": false, "error": ...}``), and ``DriverError``, a test or the console asking the
driver for something the workspace does not have (an unknown user, a closed view)."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A Slack API error. ``extra`` is merged into the response (e.g. response_metadata)."""

    def __init__(self, error: str, *, status: int = 200, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.error, **self.extra}


class DriverError(LookupError):
    """The driver was asked to act for a user, channel, message or view the workspace does
    not have; the message says which, and how to add it."""
