"""The one error hierarchy of gpunode.

Every error that crosses a package boundary is one of these. Edges (``bot/kube``,
``bot/slack``, ``bot/store``, the collectors) translate foreign exceptions once, with
``raise GpunodeError(...) from exc``; nothing from ``kubernetes``, ``aiohttp`` or
``slack_sdk`` leaks past its edge. Each message tells the user what to do next.

::

    GpunodeError
    ├── ConfigError                  a setting is missing or malformed (fail fast at start)
    ├── UsageError                   a command line or slash command does not parse
    ├── UnknownClusterError          a cluster name that the settings do not list
    ├── CollectorError               the node collector could not produce a bundle at all
    ├── KubeError                    anything the Kubernetes API said or failed to say
    │   ├── NotFoundError            node / pod / controller does not exist (404)
    │   ├── ForbiddenError           RBAC refused the call (403)
    │   ├── ConflictError            resourceVersion conflict or already exists (409)
    │   ├── InvalidObjectError       the server refused the object (400/422)
    │   ├── TooManyRequestsError     429; for evictions: blocked by a PodDisruptionBudget
    │   ├── KubeUnavailableError     5xx, timeout, connection refused
    │   │   ├── ClusterUnreachableError  a named cluster did not answer in its time
    │   │   └── WriteUnknownError    a real write sent but not answered: it may have landed
    │   └── DiagnosticJobError       the diagnostic Job did not yield evidence (reason code)
    ├── SlackError                   a Slack Web API call failed after retries
    ├── PrometheusError              Prometheus unreachable, slow, or refused a query
    ├── StoreError                   the incident store failed or its schema is too new
    ├── PolicyError                  the role policy file is invalid
    ├── RequestError                 a request at the HTTP edge is unsigned, replayed or malformed
    └── ActionError                  an action could not be carried out (e.g. run twice)
"""

from __future__ import annotations

from bot.errorbase import CollectorError as CollectorError  # defined apart: the Job's two
from bot.errorbase import GpunodeError as GpunodeError  # (issue #25); the same classes

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from typing import Any


class ConfigError(GpunodeError):
    code = "config"


class UsageError(GpunodeError):
    """A command did not parse. ``usage`` is the usage line to show back."""

    code = "usage"

    def __init__(
        self,
        message: str,
        *,
        usage: str = "",
        key: str | None = None,
        params: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, key=key, params=params)
        self.usage = usage


class KubeError(GpunodeError):
    code = "kube"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        key: str | None = None,
        params: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, code=code, key=key, params=params)
        self.status = status


class NotFoundError(KubeError):
    code = "not_found"


class ForbiddenError(KubeError):
    code = "forbidden"


class ConflictError(KubeError):
    code = "conflict"


class InvalidObjectError(KubeError):
    code = "invalid"


class TooManyRequestsError(KubeError):
    code = "too_many_requests"


class KubeUnavailableError(KubeError):
    code = "unavailable"


class WriteUnknownError(KubeUnavailableError):
    """A real write was sent and no answer came in time (the client gave up, or the
    connection broke after the request went out): the API server may have applied it. The
    caller re-reads the object to learn what happened, never assumes either way.
    ``pending``: the change as it would have been recorded (``Change`` JSON with ``before``,
    captured just before sending; None if not known); ``waited_s``: how long the client
    waited."""

    code = "no_answer"

    def __init__(
        self,
        message: str,
        *,
        pending: dict[str, Any] | None = None,
        waited_s: float = 0.0,
        key: str | None = None,
        params: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, key=key, params=params)
        self.pending = pending
        self.waited_s = waited_s


class DiagnosticJobError(KubeError):
    """The diagnostic Job failed. ``code`` is one of: node_not_found, node_not_ready,
    image_pull, container_error, create_failed, not_admitted, deadline_exceeded,
    evidence_unreadable, job_failed; in daemonset mode (the node's agent, bot.kube.resident)
    also agent_not_found, agent_not_ready, agent_unverified, agent_unreachable,
    agent_refused, agent_failed, agent_token, agent_tls."""

    code = "job_failed"


class SlackError(GpunodeError):
    code = "slack"


#: a ``SlackError``'s code when ``views.open`` came more than 3 s after the click that gave
#: its trigger (Slack's limit): the form did not open, and pressing again would open it
EXPIRED_TRIGGER = "expired_trigger_id"


class StoreError(GpunodeError):
    code = "store"


class PolicyError(GpunodeError):
    code = "policy"


class RequestError(GpunodeError):
    """A request at the HTTP edge that gpunode refuses (answered 4xx, never a 5xx)."""

    code = "bad_request"


class ActionError(GpunodeError):
    code = "action"


class PrometheusError(GpunodeError):
    """Prometheus could not answer (unreachable, timeout, HTTP or query error).

    The diagnosis never fails for it: the history service turns it into a gap."""

    code = "prometheus"


class UnknownClusterError(GpunodeError):
    """A cluster name the settings do not list; the message names the known ones."""

    code = "unknown_cluster"

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        listed = ", ".join(known) or "none"
        super().__init__(
            f"no cluster named {name!r}; the clusters gpunode knows are: {listed}",
            key="unknown_cluster",
            params={"name": name, "known": list(known)},
        )
        self.name = name
        self.known = known


class ClusterUnreachableError(KubeUnavailableError):
    """One cluster's API server did not answer (refused, timed out, failed): named. The
    reason is ``cause``'s (its words too, by its key), else no answer within ``waited_s``
    seconds, else ``reason`` as given (none: no answer in time)."""

    code = "cluster_unreachable"

    def __init__(
        self,
        cluster: str,
        reason: str = "",
        *,
        cause: GpunodeError | None = None,
        waited_s: float | None = None,
    ) -> None:
        params: dict[str, object] = {"cluster": cluster}
        if cause is not None:
            reason = cause.message
            params |= {"reason_key": cause.key, "reason_params": dict(cause.params)}
        elif waited_s is not None:
            reason = f"no answer in {waited_s:g}s"
            params["waited_s"] = f"{waited_s:g}"
        elif not reason:
            reason = "no answer in time"
            params["late"] = True
        super().__init__(
            f"cluster {cluster} could not be reached ({reason}); check its API server and "
            "gpunode's credentials for it, then retry",
            key="cluster_unreachable",
            params={**params, "reason": reason},
        )
        self.cluster = cluster
        self.reason = reason
