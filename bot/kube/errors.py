"""The one place where ``kubernetes``/``urllib3`` exceptions become ``bot.errors``.

Every call into the client goes through ``translate`` (or the ``translating`` context
manager); nothing from the client leaks past ``bot.kube``. Messages say what to do next.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException, ApiValueError, OpenApiException
from kubernetes.config.config_exception import ConfigException

from bot.errors import (
    ConfigError,
    ConflictError,
    ForbiddenError,
    GpunodeError,
    InvalidObjectError,
    KubeError,
    KubeUnavailableError,
    NotFoundError,
    TooManyRequestsError,
)


def status_body(exc: ApiException) -> dict[str, Any]:
    """The ``Status`` object the server sent with an error, or ``{}``."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _server_message(exc: ApiException) -> str:
    status = status_body(exc)
    return str(status.get("message") or exc.reason or "no message").strip()


def translate(exc: BaseException, *, what: str, write: bool = False) -> GpunodeError:
    """Map a client exception raised while doing ``what`` to a ``bot.errors`` error.

    ``write``: ``what`` was a real (not dry-run) change; if no answer came, the server may
    have applied it anyway, so the advice is to re-read before retrying."""
    if isinstance(exc, GpunodeError):
        return exc
    if isinstance(exc, ApiException):
        code = int(exc.status or 0)
        msg = _server_message(exc)
        if code == 404:
            return NotFoundError(
                f"{what}: not found ({msg}). Check the name and namespace.", status=code
            )
        if code in (401, 403):
            hint = (
                "the credentials were rejected; refresh the kubeconfig or token"
                if code == 401
                else "the request carried no credentials; set kube.token (--token) or a "
                "kubeconfig user"
                if 'User "system:anonymous"' in msg
                else "grant the gpunode ClusterRole this permission (see deploy/)"
            )
            return ForbiddenError(f"{what}: forbidden ({msg}); {hint}.", status=code)
        if code == 409:
            return ConflictError(
                f"{what}: conflict ({msg}); re-read the object and retry.", status=code
            )
        if code in (400, 422):
            return InvalidObjectError(
                f"{what}: the server refused the object ({msg}).", status=code
            )
        if code == 429:
            return TooManyRequestsError(
                f"{what}: too many requests ({msg}); retry later.", status=code
            )
        if code >= 500 or code == 0:
            return KubeUnavailableError(
                f"{what}: the API server failed ({code or 'no response'}: {msg}); "
                "check the API server's health and retry.",
                status=code or None,
            )
        return KubeError(f"{what}: HTTP {code} ({msg}).", status=code)
    if isinstance(exc, urllib3.exceptions.HTTPError | TimeoutError | ConnectionError) and write:
        return KubeUnavailableError(
            f"{what}: the API server did not answer ({type(exc).__name__}); the change may or "
            "may not have been made: re-diagnose to see the object as it is now before "
            "retrying."
        )
    if isinstance(exc, urllib3.exceptions.HTTPError | TimeoutError | ConnectionError):
        return KubeUnavailableError(
            f"{what}: the API server did not answer ({type(exc).__name__}); check that it is "
            "reachable from here (server URL, network, proxy) and retry."
        )
    if isinstance(exc, ConfigException):
        return ConfigError(
            f"Kubernetes configuration: {exc}. Set kube.mode/kubeconfig/context "
            "or kube.server and kube.token."
        )
    if isinstance(exc, ApiValueError | OpenApiException):
        return KubeError(f"{what}: the client refused the request ({exc}).")
    if isinstance(exc, OSError):
        return KubeUnavailableError(f"{what}: I/O error talking to the API server ({exc}).")
    if isinstance(exc, ValueError):
        return KubeError(f"{what}: the API server's answer was not understood ({exc}).")
    raise exc


@contextmanager
def translating(what: str) -> Iterator[None]:
    """``with translating("read node x"):`` re-raises client errors as ``bot.errors``."""
    try:
        yield
    except GpunodeError:
        raise
    except Exception as exc:
        raise translate(exc, what=what) from exc
