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
import yaml
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


#: kinds the API server keeps outside namespaces: a "not found" for these never hints at one
CLUSTER_SCOPED = frozenset(
    {
        "nodes",
        "namespaces",
        "priorityclasses",
        "runtimeclasses",
        "clusterroles",
        "clusterrolebindings",
        "persistentvolumes",
        "storageclasses",
        "apiservices",
        "customresourcedefinitions",
        "validatingadmissionpolicies",
    }
)


def _not_found_hint(exc: ApiException, msg: str) -> str:
    """ "Check the name" (and the namespace, for a namespaced kind): a node has none."""
    details = status_body(exc).get("details") or {}
    kind = str(details.get("kind") or "") if isinstance(details, dict) else ""
    kind = kind or msg.split(" ", 1)[0]  # 'nodes "x" not found' names its kind first
    return "Check the name." if kind in CLUSTER_SCOPED else "Check the name and namespace."


def _server_url(exc: urllib3.exceptions.HTTPError) -> str:
    """The URL a connection error was for (``scheme://host:port``), or "" if unknown."""
    pool = getattr(exc, "pool", None)
    host = getattr(pool, "host", None)
    if not host:
        return ""
    scheme = getattr(pool, "scheme", None) or "https"
    port = getattr(pool, "port", None)
    return f"{scheme}://{host}" + (f":{port}" if port else "")


def _unreachable(exc: BaseException) -> str:
    """Why no answer came, in words (and the URL asked): DNS, refused, TLS, timeout."""
    reason = (
        getattr(exc, "reason", None) if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    )
    url = _server_url(exc) if isinstance(exc, urllib3.exceptions.HTTPError) else ""
    at = f" at {url}" if url else ""
    host = url.split("://", 1)[-1].rsplit(":", 1)[0] if url else "the server's host"
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        why = f"the name {host} does not resolve (DNS); check the server URL's host name"
    elif isinstance(reason, urllib3.exceptions.SSLError):
        why = (
            "the TLS handshake failed; if the server speaks plain HTTP use an http:// URL, "
            "otherwise check its certificate (kube.ca_file, kube.verify_tls)"
        )
    elif isinstance(reason, urllib3.exceptions.NewConnectionError | ConnectionRefusedError):
        # before timeouts: urllib3 keeps NewConnectionError a ConnectTimeoutError subclass
        why = "the connection was refused; check the server URL's port and that it is up"
    elif isinstance(reason, urllib3.exceptions.ConnectTimeoutError | TimeoutError) or isinstance(
        exc, urllib3.exceptions.TimeoutError
    ):
        why = "the connection timed out; check the network path and firewall"
    elif isinstance(reason, urllib3.exceptions.ProtocolError):
        why = "the connection broke off; if the server speaks TLS use an https:// URL"
    else:
        why = (
            f"no answer ({type(reason or exc).__name__}); check that it is reachable from "
            "here (server URL, network, proxy)"
        )
    return f"the API server{at} did not answer: {why}"


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
                f"{what}: not found ({msg}). {_not_found_hint(exc, msg)}", status=code
            )
        if code == 401:
            return ForbiddenError(
                f"{what}: unauthorized: the API server did not accept the credentials (401 "
                f"{msg}); the token is wrong or expired: refresh the kubeconfig or the token "
                "(--token, kube.token).",
                status=code,
            )
        if code == 403:
            hint = (
                "the request carried no credentials; set kube.token (--token) or a kubeconfig user"
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
            f"{what}: {_unreachable(exc)}; the change may or may not have been made: "
            "re-diagnose to see the object as it is now before retrying."
        )
    if isinstance(exc, urllib3.exceptions.HTTPError | TimeoutError | ConnectionError):
        return KubeUnavailableError(f"{what}: {_unreachable(exc)}; then retry.")
    if isinstance(exc, ConfigException):
        return ConfigError(
            f"Kubernetes configuration: {exc}. Set kube.mode/kubeconfig/context "
            "or kube.server and kube.token."
        )
    if isinstance(exc, yaml.YAMLError):
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        return ConfigError(
            f"Kubernetes configuration: the kubeconfig is not valid YAML{at}: "
            f"{getattr(exc, 'problem', None) or exc}. Fix the file, or pass another with "
            "--kubeconfig (kube.kubeconfig)."
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
