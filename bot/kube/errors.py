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
from bot.kube.doing import Doing


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


def _not_found_target(exc: ApiException, msg: str) -> tuple[str, str]:
    """The kind (resource, plural) and name a 404 was about: the Status's ``details``, else
    the message (``nodes "x" not found`` names its kind first)."""
    details = status_body(exc).get("details") or {}
    kind = str(details.get("kind") or "") if isinstance(details, dict) else ""
    name = str(details.get("name") or "") if isinstance(details, dict) else ""
    said = re.match(r'(?P<kind>[a-z0-9.]+) "(?P<name>[^"]*)" not found', msg)
    if said is not None:
        kind, name = kind or said["kind"].split(".", 1)[0], name or said["name"]
    return kind or msg.split(" ", 1)[0], name


def _not_found(exc: ApiException, msg: str, what: Doing, cluster: str) -> NotFoundError:
    """A 404 with what to do: a node is looked up among the cluster's nodes; any other object
    by its name (and its namespace, for a namespaced kind)."""
    kind, name = _not_found_target(exc, msg)
    where = f" in cluster {cluster}" if cluster else ""
    if kind == "nodes" and name:
        return NotFoundError(
            f"node {name} not found{where}; check the name: `kubectl get nodes` or "
            "`gpunode top` lists the cluster's nodes",
            status=404,
            key="kube_node_not_found",
            params={"node": name, "cluster": cluster, **doing_params(what)},
        )
    namespaced = kind not in CLUSTER_SCOPED
    hint = "check the name and namespace" if namespaced else "check the name"
    return NotFoundError(
        f"{what}: not found{where} ({msg}); {hint}",
        status=404,
        key="kube_not_found",
        params={**doing_params(what), "said": msg, "cluster": cluster, "namespaced": namespaced},
    )


def doing_params(what: Doing) -> dict[str, object]:
    """An error's params for the request it answered: its English words (``doing``, as logs
    and English messages say it), its label's key and params (``doing_key``,
    ``doing_params``: each presenter words them for its reader, ``templates/slack/doing.j2``)."""
    return {"doing": str(what), "doing_key": what.key, "doing_params": what.as_params()}


def _server_url(exc: urllib3.exceptions.HTTPError) -> str:
    """The URL a connection error was for (``scheme://host:port``), or "" if unknown."""
    pool = getattr(exc, "pool", None)
    host = getattr(pool, "host", None)
    if not host:
        return ""
    scheme = getattr(pool, "scheme", None) or "https"
    port = getattr(pool, "port", None)
    return f"{scheme}://{host}" + (f":{port}" if port else "")


#: why no answer came (``kube_unreachable``'s ``cause``) -> what to check, in English
_NO_ANSWER = {
    "dns": "the name {host} does not resolve (DNS); check the server URL's host name",
    "dns_unknown": "the server's host name does not resolve (DNS); check the server URL",
    "tls": (
        "the TLS handshake failed; if the server speaks plain HTTP use an http:// URL, "
        "otherwise check its certificate (kube.ca_file, kube.verify_tls)"
    ),
    "refused": "the connection was refused; check the server URL's port and that it is up",
    "timeout": "the connection timed out; check the network path and firewall",
    "broken": "the connection broke off; if the server speaks TLS use an https:// URL",
    "other": (
        "no answer ({kind}); check that it is reachable from here (server URL, network, proxy)"
    ),
}


def _no_answer_cause(exc: BaseException) -> tuple[str, str]:
    """Why no answer came (a ``_NO_ANSWER`` key) and the exception's type name."""
    reason = (
        getattr(exc, "reason", None) if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
    )
    kind = type(reason or exc).__name__
    if isinstance(reason, urllib3.exceptions.NameResolutionError):
        return "dns", kind
    if isinstance(reason, urllib3.exceptions.SSLError):
        return "tls", kind
    if isinstance(reason, urllib3.exceptions.NewConnectionError | ConnectionRefusedError):
        # before timeouts: urllib3 keeps NewConnectionError a ConnectTimeoutError subclass
        return "refused", kind
    if isinstance(reason, urllib3.exceptions.ConnectTimeoutError | TimeoutError) or isinstance(
        exc, urllib3.exceptions.TimeoutError
    ):
        return "timeout", kind
    if isinstance(reason, urllib3.exceptions.ProtocolError):
        return "broken", kind
    return "other", kind


def _unreachable(exc: BaseException, what: Doing, *, write: bool) -> KubeUnavailableError:
    """No answer at all: why (DNS, refused, TLS, timeout) and the URL asked; for a real write,
    that it may have landed all the same."""
    url = _server_url(exc) if isinstance(exc, urllib3.exceptions.HTTPError) else ""
    host = url.split("://", 1)[-1].rsplit(":", 1)[0] if url else ""
    cause, kind = _no_answer_cause(exc)
    if cause == "dns" and not host:
        cause = "dns_unknown"
    at = f" at {url}" if url else ""
    then = (
        "the change may or may not have been made: re-diagnose to see the object as it is now "
        "before retrying."
        if write
        else "then retry."
    )
    why = _NO_ANSWER[cause].format(host=host, kind=kind)
    return KubeUnavailableError(
        f"{what}: the API server{at} did not answer: {why}; {then}",
        key="kube_unreachable",
        params={
            **doing_params(what),
            "url": url,
            "host": host,
            "cause": cause,
            "kind": kind,
            "write": write,
        },
    )


def _http(exc: ApiException, what: Doing, cluster: str) -> GpunodeError:
    """An HTTP error status from the API server, with what to do about it."""
    code = int(exc.status or 0)
    msg = _server_message(exc)
    said: dict[str, object] = {**doing_params(what), "said": msg}
    if code == 404:
        return _not_found(exc, msg, what, cluster)
    if code == 401:
        return ForbiddenError(
            f"{what}: unauthorized: the API server did not accept the credentials (401 "
            f"{msg}); the token is wrong or expired: refresh the kubeconfig or the token "
            "(--token, kube.token).",
            status=code,
            key="kube_unauthorized",
            params=said,
        )
    if code == 403:
        anonymous = 'User "system:anonymous"' in msg
        hint = (
            "the request carried no credentials; set kube.token (--token) or a kubeconfig user"
            if anonymous
            else "grant the gpunode ClusterRole this permission (see deploy/)"
        )
        return ForbiddenError(
            f"{what}: forbidden ({msg}); {hint}.",
            status=code,
            key="kube_forbidden",
            params={**said, "anonymous": anonymous},
        )
    if code == 409:
        return ConflictError(
            f"{what}: conflict ({msg}); re-read the object and retry.",
            status=code,
            key="kube_conflict",
            params=said,
        )
    if code in (400, 422):
        return InvalidObjectError(
            f"{what}: the server refused the object ({msg}); correct it and retry.",
            status=code,
            key="kube_invalid",
            params=said,
        )
    if code == 429:
        return TooManyRequestsError(
            f"{what}: too many requests ({msg}); retry later.",
            status=code,
            key="kube_too_many_requests",
            params=said,
        )
    if code >= 500 or code == 0:
        return KubeUnavailableError(
            f"{what}: the API server failed ({code or 'no response'}: {msg}); "
            "check the API server's health and retry.",
            status=code or None,
            key="kube_server_failed",
            params={**said, "status": code},
        )
    return KubeError(
        f"{what}: HTTP {code} ({msg}); check the request and retry.",
        status=code,
        key="kube_http",
        params={**said, "status": code},
    )


def translate(
    exc: BaseException, *, what: Doing, write: bool = False, cluster: str = ""
) -> GpunodeError:
    """Map a client exception raised while doing ``what`` to a ``bot.errors`` error, keyed
    and with raw params so each presenter words it in its reader's language
    (``templates/slack/errors.j2``; the server's own message is quoted as ``said``; the
    request ``what`` is carried as ``doing``, ``doing_key`` and ``doing_params``).

    ``write``: ``what`` was a real (not dry-run) change; if no answer came, the server may
    have applied it anyway, so the advice is to re-read before retrying. ``cluster``: how the
    caller names the cluster asked (a "not found" says where it looked)."""
    if isinstance(exc, GpunodeError):
        return exc
    if isinstance(exc, ApiException):
        return _http(exc, what, cluster)
    if isinstance(exc, urllib3.exceptions.HTTPError | TimeoutError | ConnectionError):
        return _unreachable(exc, what, write=write)
    if isinstance(exc, ConfigException):
        return ConfigError(
            f"Kubernetes configuration: {exc}. Set kube.mode/kubeconfig/context "
            "or kube.server and kube.token.",
            key="kube_config",
            params={"said": str(exc)},
        )
    if isinstance(exc, yaml.YAMLError):
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where else ""
        problem = str(getattr(exc, "problem", None) or exc)
        return ConfigError(
            f"Kubernetes configuration: the kubeconfig is not valid YAML{at}: {problem}. Fix "
            "the file, or pass another with --kubeconfig (kube.kubeconfig).",
            key="kube_config_yaml",
            params={
                "line": where.line + 1 if where else 0,
                "column": where.column + 1 if where else 0,
                "said": problem,
            },
        )
    said: dict[str, object] = {**doing_params(what), "said": str(exc)}
    if isinstance(exc, ApiValueError | OpenApiException):
        return KubeError(
            f"{what}: the client refused the request ({exc}).",
            key="kube_client_refused",
            params=said,
        )
    if isinstance(exc, OSError):
        return KubeUnavailableError(
            f"{what}: I/O error talking to the API server ({exc}); retry.",
            key="kube_io",
            params=said,
        )
    if isinstance(exc, ValueError):
        return KubeError(
            f"{what}: the API server's answer was not understood ({exc}).",
            key="kube_not_understood",
            params=said,
        )
    raise exc


_RBAC_DENIAL = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API '
    r'group "(?P<group>[^"]*)" (?:in the namespace "(?P<namespace>[^"]+)"|at the cluster scope)'
)
#: RBAC (verb, resource) -> what a person calls it (``cluster_refused``'s ``act``)
_ACTS = {
    ("create", "pods/eviction"): "evict_pods",
    ("patch", "pods/resize"): "resize_pods",
    ("update", "pods/resize"): "resize_pods",
}
_ACT_WORDS = {"evict_pods": "evict pods", "resize_pods": "resize pods"}


def refused_as(exc: BaseException, user: str) -> ForbiddenError | None:
    """A 403 met while impersonating ``user``, said as a person says it: "the cluster
    refused: alice may not evict pods in data-prep" (None for anything else). Keyed
    (``cluster_refused*``) with raw params, so each presenter words it for its reader."""
    if not isinstance(exc, ApiException) or int(exc.status or 0) != 403:
        return None
    msg = _server_message(exc)
    found = _RBAC_DENIAL.search(msg)
    if found is None:
        return ForbiddenError(
            f"the cluster refused: {msg}",
            code="cluster_refused",
            status=403,
            key="cluster_refused_said",
            params={"said": msg},
        )
    verb, resource, who = found["verb"], found["resource"], found["user"]
    if verb == "impersonate":
        name = msg.split('"', 2)[1] if msg.count('"') >= 2 else user
        kind = resource.split("/")[0][:-1]
        return ForbiddenError(
            f"the cluster refused: gpunode may not act as {kind} {name} (its ServiceAccount "
            f"lacks impersonate on {resource} {name}); add it to the impersonation ClusterRole "
            "(deploy/overlays/impersonation)",
            code="cluster_refused",
            status=403,
            key="cluster_refused_impersonate",
            params={"kind": kind, "name": name, "resource": resource},
        )
    act = _ACTS.get((verb, resource), "")
    doing = _ACT_WORDS.get(act, f"{verb} {resource}")
    namespace = found["namespace"] or ""
    where = f" in {namespace}" if namespace else " (cluster-wide)"
    return ForbiddenError(
        f"the cluster refused: {who or user} may not {doing}{where}; a cluster admin grants "
        "that through Kubernetes RBAC, or someone who holds it acts",
        code="cluster_refused",
        status=403,
        key="cluster_refused",
        params={
            "who": who or user,
            "act": act,
            "verb": verb,
            "resource": resource,
            "namespace": namespace,
        },
    )


@contextmanager
def translating(what: Doing) -> Iterator[None]:
    """``with translating(Doing.of("read_node", node="x")):`` re-raises client errors as
    ``bot.errors``."""
    try:
        yield
    except GpunodeError:
        raise
    except Exception as exc:
        raise translate(exc, what=what) from exc
