"""The one exception the Web API handlers raise: a Slack ``{"ok": false, "error": ...}``."""

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
