"""The one place where ``kubernetes``/``urllib3`` exceptions become ``bot.errors``.

Every call into the client goes through ``translate`` (or the ``translating`` context
manager); nothing from the client leaks past ``bot.kube``. Messages say what to do next.
"""

from __future__ import annotations

import json
import re
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


_RBAC_DENIAL = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API '
    r'group "(?P<group>[^"]*)" (?:in the namespace "(?P<namespace>[^"]+)"|at the cluster scope)'
)
#: RBAC (verb, resource) -> how a person says it
_DOING = {
    ("create", "pods/eviction"): "evict pods",
    ("patch", "pods/resize"): "resize pods",
    ("update", "pods/resize"): "resize pods",
}


def refused_as(exc: BaseException, user: str) -> ForbiddenError | None:
    """A 403 met while impersonating ``user``, said as a person says it: "the cluster
    refused: alice may not evict pods in data-prep" (None for anything else)."""
    if not isinstance(exc, ApiException) or int(exc.status or 0) != 403:
        return None
    msg = _server_message(exc)
    found = _RBAC_DENIAL.search(msg)
    if found is None:
        return ForbiddenError(f"the cluster refused: {msg}", code="cluster_refused", status=403)
    verb, resource, who = found["verb"], found["resource"], found["user"]
    if verb == "impersonate":
        name = msg.split('"', 2)[1] if msg.count('"') >= 2 else user
        return ForbiddenError(
            f"the cluster refused: gpunode may not act as {resource.split('/')[0][:-1]} "
            f"{name} (its ServiceAccount lacks impersonate on {resource} {name}); add it to "
            "the impersonation ClusterRole (deploy/overlays/impersonation)",
            code="cluster_refused",
            status=403,
        )
    doing = _DOING.get((verb, resource), f"{verb} {resource}")
    where = f" in {found['namespace']}" if found["namespace"] else " (cluster-wide)"
    return ForbiddenError(
        f"the cluster refused: {who or user} may not {doing}{where}; a cluster admin grants "
        "that through Kubernetes RBAC, or someone who holds it acts",
        code="cluster_refused",
        status=403,
    )


@contextmanager
def translating(what: str) -> Iterator[None]:
    """``with translating("read node x"):`` re-raises client errors as ``bot.errors``."""
    try:
        yield
    except GpunodeError:
        raise
    except Exception as exc:
        raise translate(exc, what=what) from exc
