"""Client exceptions become bot.errors, with the status and a what-to-do message."""

from __future__ import annotations

import json

import pytest
import urllib3.exceptions
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from bot.errors import (
    ConfigError,
    ConflictError,
    ForbiddenError,
    InvalidObjectError,
    KubeError,
    KubeUnavailableError,
    NotFoundError,
    TooManyRequestsError,
)
from bot.kube.doing import Doing
from bot.kube.errors import refused_as, translate, translating


def _api(status: int, message: str = "boom") -> ApiException:
    exc = ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, NotFoundError),
        (403, ForbiddenError),
        (401, ForbiddenError),
        (409, ConflictError),
        (400, InvalidObjectError),
        (422, InvalidObjectError),
        (429, TooManyRequestsError),
        (500, KubeUnavailableError),
        (503, KubeUnavailableError),
        (0, KubeUnavailableError),
        (418, KubeError),
    ],
)
def test_http_statuses_map_to_the_error_tree(status: int, expected: type[KubeError]) -> None:
    err = translate(_api(status, "the server said no"), what=Doing.of("read_node", node="n1"))
    assert type(err) is expected
    assert "read node n1" in str(err)
    if status:
        assert "the server said no" in str(err)


@pytest.mark.parametrize(
    "exc",
    [
        urllib3.exceptions.ReadTimeoutError(None, "/api", "timed out"),  # type: ignore[arg-type]
        urllib3.exceptions.MaxRetryError(None, "/api"),  # type: ignore[arg-type]
        urllib3.exceptions.ProtocolError("connection reset"),
        ConnectionRefusedError("refused"),
        TimeoutError("slow"),
    ],
)
def test_transport_failures_are_unavailable_with_advice(exc: Exception) -> None:
    err = translate(exc, what=Doing.of("list_nodes"))
    assert isinstance(err, KubeUnavailableError)
    assert "reachable" in str(err) or "API server" in str(err)


def test_configuration_errors_say_which_setting_to_fix() -> None:
    err = translate(ConfigException("no kubeconfig"), what=Doing.of("load_config"))
    assert isinstance(err, ConfigError)
    assert "kube.mode" in str(err)


def test_translating_chains_the_original_exception() -> None:
    with (
        pytest.raises(NotFoundError) as info,
        translating(Doing.of("read_object", kind="Pod", namespace="a", name="b")),
    ):
        raise _api(404)
    assert isinstance(info.value.__cause__, ApiException)
    assert info.value.status == 404


@pytest.mark.parametrize(
    ("message", "said"),
    [
        (
            'pods "p" is forbidden: User "alice" cannot create resource "pods/eviction" in API '
            'group "" in the namespace "data-prep"',
            "the cluster refused: alice may not evict pods in data-prep;",
        ),
        (
            'deployments.apps "d" is forbidden: User "alice" cannot patch resource "deployments" '
            'in API group "apps" in the namespace "data-prep"',
            "the cluster refused: alice may not patch deployments in data-prep;",
        ),
        (
            'nodes "n" is forbidden: User "alice" cannot patch resource "nodes" in API group "" '
            "at the cluster scope",
            "the cluster refused: alice may not patch nodes (cluster-wide);",
        ),
        (
            'users "alice" is forbidden: User "system:serviceaccount:gpunode:gpunode" cannot '
            'impersonate resource "users" in API group "" at the cluster scope',
            "the cluster refused: gpunode may not act as user alice",
        ),
    ],
)
def test_a_refusal_while_acting_as_a_person_says_who_may_not_do_what(
    message: str, said: str
) -> None:
    refusal = refused_as(_api(403, message), "alice")
    assert refusal is not None and refusal.code == "cluster_refused"
    assert refusal.message.startswith(said), refusal.message


def test_only_a_403_is_a_refusal() -> None:
    assert refused_as(_api(404), "alice") is None
    assert refused_as(ValueError("x"), "alice") is None
