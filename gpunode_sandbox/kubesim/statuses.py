"""API errors as real ``Status`` objects (kind Status, apiVersion v1, status Failure).

Handlers raise :class:`ApiError`; the app's middleware turns it into the JSON body and HTTP
code the official client parses into ``ApiException``.
"""

from __future__ import annotations

from typing import Any

REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """An error the API answers with a Status body."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        reason: str | None = None,
        name: str | None = None,
        kind: str | None = None,
        group: str | None = None,
        causes: list[dict[str, str]] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details: dict[str, Any] = {}
        if name is not None:
            self.details["name"] = name
        if group is not None:
            self.details["group"] = group
        if kind is not None:
            self.details["kind"] = kind
        if causes:
            self.details["causes"] = causes

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(plural: str, name: str, *, group: str = "") -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(404, f'{what} "{name}" not found', name=name, kind=plural, group=group or None)


def already_exists(plural: str, name: str, *, group: str = "") -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        f'{what} "{name}" already exists',
        reason="AlreadyExists",
        name=name,
        kind=plural,
        group=group or None,
    )


def conflict(plural: str, name: str, *, group: str = "") -> ApiError:
    what = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {what} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        reason="Conflict",
        name=name,
        kind=plural,
        group=group or None,
    )


def invalid(kind: str, name: str, causes: list[dict[str, str]], *, group: str = "") -> ApiError:
    """422 in the API server's words: ``Kind "name" is invalid: field: message``."""
    text = ", ".join(
        f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes
    )
    return ApiError(
        422,
        f'{kind} "{name}" is invalid: {text}',
        name=name,
        kind=kind,
        group=group or None,
        causes=causes,
    )
