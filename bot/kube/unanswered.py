"""A real write that was sent but got no answer: say so, with what it would have changed.

A slow etcd commit, an overloaded API server or a connection cut after the request went
out all look the same to the client: no answer. The server may have applied the write.
``unanswered`` turns exactly those failures (a read timeout, a connection broken after
sending) into ``WriteUnknownError`` carrying the change as it would have been recorded,
``before`` included, so the caller can re-read the object and, where the write landed,
offer the same undo as for a write that answered. A connection that never opened (refused,
DNS, TLS, connect timeout) sent nothing: it stays an ordinary failure. Dry runs change
nothing, so they are never "unknown".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from bot.errors import InvalidObjectError, WriteUnknownError
from bot.kube.doing import Doing
from bot.kube.errors import doing_params
from bot.kube.reading import controller_path
from bot.kube.transport import Transport

#: what a client sees when the request went out and no answer came back: urllib3 raises
#: these as they are for POST/PATCH (never retried: not idempotent); ``TimeoutError`` is
#: the socket's own read timeout
_SENT_NO_ANSWER = (
    urllib3.exceptions.ReadTimeoutError,
    urllib3.exceptions.ProtocolError,
    TimeoutError,
)


@contextmanager
def unanswered(
    t: Transport, what: Doing, pending: Mapping[str, Any], *, dry_run: bool
) -> Iterator[None]:
    """``with unanswered(t, Doing.of("cordon", node="x"), change_json, dry_run=False): <send
    the write>``. Keyed ``kube_write_unanswered`` with the request's label and the wait."""
    try:
        yield
    except _SENT_NO_ANSWER as exc:
        if dry_run:
            raise
        waited = float(t.timeout_s)
        raise WriteUnknownError(
            f"{what}: the cluster did not answer within {waited:g} s (the request was sent; "
            "it may or may not have been applied)",
            pending=dict(pending),
            waited_s=waited,
            key="kube_write_unanswered",
            params={**doing_params(what), "waited_s": waited},
        ) from exc


def target_path(kind: str, namespace: str, name: str) -> str:
    """The API path of an object a remedy step writes (node, pod, PriorityClass, controller)."""
    if kind == "Node":
        return f"/api/v1/nodes/{name}"
    if kind == "Pod":
        return f"/api/v1/namespaces/{namespace}/pods/{name}"
    if kind == "PriorityClass":
        return f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
    try:
        return controller_path(kind, namespace, name)
    except ValueError as exc:
        raise InvalidObjectError(str(exc)) from exc


def read_target(t: Transport, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The object as the API server has it now, or None when it does not exist (404)."""
    try:
        return t.get(target_path(kind, namespace, name))  # type: ignore[no-any-return]
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
