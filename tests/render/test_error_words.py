"""Errors a person meets are worded in their language: an error carries a key and raw
parameters, the catalog words it, and English readers see exactly the error's own text."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import cast, get_args

import pytest
import urllib3
import yaml
from kubernetes.client.exceptions import ApiException, ApiValueError
from kubernetes.config.config_exception import ConfigException

from bot.config.settings import KubeSettings
from bot.core.governance.commands import parse
from bot.core.model.actions import Step, StepVerb
from bot.core.model.cluster import Condition, NodeInfo
from bot.core.model.durations import parse_duration
from bot.core.model.evidence import SCHEMA_VERSION
from bot.core.remedies.landing import Landing
from bot.core.reporting.outcomes import Notice
from bot.errors import (
    ClusterUnreachableError,
    DiagnosticJobError,
    GpunodeError,
    NotFoundError,
    UnknownClusterError,
    UsageError,
    WriteUnknownError,
)
from bot.kube import resident
from bot.kube.doing import Doing
from bot.kube.errors import refused_as, translate
from bot.kube.gateway import Gateway
from bot.kube.jobs import PodOutcome, failure, parse_evidence
from bot.kube.transport import Transport
from bot.kube.unanswered import unanswered
from bot.render.errors import error_keys, error_text
from bot.render.notices import told_mrkdwn
from bot.services.executing import timed_out
from bot.services.settling import Settled
from tests.render.terminal_errors import NOT_DRIVEN, terminal_errors
from tests.render.test_catalogs import english_words
from tests.render.test_usage_words import MALFORMED

NODE = "gpu-node-07"
READ_POD = Doing.of("read_object", kind="Pod", namespace="a", name="b")


def _pod(reason: str = "", waiting: str = "", terminated: str = "") -> dict[str, object]:
    statuses: list[dict[str, object]] = []
    if waiting:
        statuses.append({"state": {"waiting": {"reason": waiting, "message": "back-off"}}})
    if terminated:
        statuses.append({"state": {"terminated": {"exitCode": 2, "reason": terminated}}})
    return {"status": {"reason": reason, "containerStatuses": statuses}, "spec": {}}


def _running() -> dict[str, object]:
    return {"status": {"containerStatuses": [{"state": {"running": {}}}]}}


def _raised(text: str) -> DiagnosticJobError:
    with pytest.raises(DiagnosticJobError) as caught:
        parse_evidence(text)
    return caught.value


def _rejected(reason: str, message: str, priority: int = 0) -> dict[str, object]:
    """A pod the kubelet refused, as its status says it."""
    status = {"phase": "Failed", "reason": reason, "message": f"Pod was rejected: {message}"}
    return {"spec": {"priority": priority}, "status": status}


def _not_admitted() -> list[GpunodeError]:
    """The kubelet's refusals: full requests, a node condition, another reason; with each
    advice (the fallback class, a class below critical, already critical)."""
    full = "Node didn't have enough resource: cpu, requested: 50, used: 95500, capacity: 95500"
    cases = [
        (_rejected("OutOfcpu", full), None),
        (_rejected("Evicted", "The node had condition: [MemoryPressure]. "), "gpunode-high"),
        (_rejected("UnexpectedAdmissionError", "", 2000001000), "system-node-critical"),
    ]
    return [
        failure(PodOutcome("failed", pod), None, node=NODE, timeout_s=60, priority_class=cls)
        for pod, cls in cases
    ]


class _Api:
    """The API reads ``find_agent`` makes, answered from a fixed world."""

    def __init__(self, daemonset: bool, pods: list[dict[str, object]]) -> None:
        self.daemonset, self.pods = daemonset, pods

    def get(self, path: str, **query: object) -> dict[str, object]:
        if "/daemonsets/" in path:
            if not self.daemonset:
                raise ApiException(status=404, reason="Not Found")
            return {"metadata": {"uid": "u1"}, "spec": {"template": {"spec": {}}}}
        return {"items": self.pods}


def _caught(call: Callable[[], object]) -> GpunodeError:
    with pytest.raises(DiagnosticJobError) as caught:
        call()
    return caught.value


#: the agent's errors that need a live agent on the network to happen (no answer, a
#: certificate it cannot prove, a slow, garbled or oversized answer); their English is checked
#: by tests/kube/test_resident.py
AGENT_NOT_DRIVEN = {
    "agent_unreachable",
    "agent_unverified",
    "agent_slow",
    "agent_garbage",
    "agent_too_much",
}


def _agent_errors(tmp: Path) -> list[GpunodeError]:
    """The node agent's errors (DaemonSet mode), raised by bot.kube.resident itself."""
    settings = KubeSettings(
        agent_token_file=str(tmp / "absent-token"), agent_ca_file=str(tmp / "absent-ca")
    )
    owned = {
        "metadata": {
            "name": "gpunode-agent-x1",
            "ownerReferences": [
                {
                    "kind": "DaemonSet",
                    "name": settings.agent_daemonset,
                    "uid": "u1",
                    "controller": True,
                }
            ],
        },
        "spec": {"nodeName": NODE},
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    empty = tmp / "empty-token"
    empty.write_text("")
    at: dict[str, object] = {"agent": "gpunode-agent-x1", "node": NODE, "address": "10.0.0.7:8443"}
    where = "the agent gpunode-agent-x1 on gpu-node-07 (10.0.0.7:8443)"
    return [
        _caught(lambda: resident.find_agent(_Api(False, []), settings, NODE)),  # type: ignore[arg-type]
        _caught(lambda: resident.find_agent(_Api(True, []), settings, NODE)),  # type: ignore[arg-type]
        _caught(lambda: resident.find_agent(_Api(True, [owned]), settings, NODE)),  # type: ignore[arg-type]
        _caught(lambda: resident._read_token(settings)),
        _caught(
            lambda: resident._read_token(
                settings.model_copy(update={"agent_token_file": str(empty)})
            )
        ),
        _caught(lambda: resident.agent_tls(settings)),
        resident._refused(where, at, 403, b'{"error": "token audience"}'),
        resident._refused(where, at, 500, b"{}"),
    ]


class _Nodes:
    """A gateway whose cluster has no node by the asked name."""

    async def get_node(self, node: str) -> NodeInfo:
        raise NotFoundError(f"read node {node}: not found", status=404)


def _node_errors() -> list[GpunodeError]:
    """The node checks before the collector runs (``Gateway._check_node``): gone, NotReady."""
    not_ready = NodeInfo(
        name=NODE,
        ready=False,
        conditions=[Condition(type="Ready", status="False", reason="KubeletNotReady")],
    )
    out: list[GpunodeError] = []
    for known in (None, not_ready, not_ready.model_copy(update={"conditions": []})):
        with pytest.raises(DiagnosticJobError) as caught:
            asyncio.run(Gateway._check_node(_Nodes(), NODE, known))  # type: ignore[arg-type]
        out.append(caught.value)
    return out


def _usage_errors() -> list[GpunodeError]:
    """Every usage error of the command grammar and the durations, as they raise it."""
    out: list[GpunodeError] = []
    for text in MALFORMED:
        try:
            parse(text, clusters=("prod-eu", "prod-us"))
        except UsageError as err:
            out.append(err)
    for text in ("soon", "0m", "999999w"):
        try:
            parse_duration(text)
        except UsageError as err:
            out.append(err)
    return out


def _api(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


#: the API server's 403 messages as RBAC writes them: a person's missing right (namespaced,
#: cluster-wide), gpunode's missing impersonation, and one that does not say who
_DENIED = (
    'pods "p" is forbidden: User "alice" cannot create resource "pods/eviction" in API group '
    '"" in the namespace "data-prep"',
    'nodes "n" is forbidden: User "alice" cannot patch resource "nodes" in API group "" at '
    "the cluster scope",
    'users "alice" is forbidden: User "system:serviceaccount:gpunode:gpunode" cannot '
    'impersonate resource "users" in API group "" at the cluster scope',
    "admission webhook denied the request",
)


def _kube_errors() -> list[GpunodeError]:
    """What the API server said (every HTTP status class), or that it said nothing (refused,
    timed out, broke off, DNS), a broken configuration, and its refusals of a person."""
    statuses = [
        translate(_api(status, message), what=Doing.of("read_node", node=NODE), cluster=cluster)
        for status, message in (
            (404, f'nodes "{NODE}" not found'),
            (404, 'pods "p" not found'),
            (404, 'namespaces "ml" not found'),
            (401, "Unauthorized"),
            (403, 'User "system:anonymous" cannot get resource "nodes"'),
            (403, 'User "bot" cannot get resource "nodes"'),
            (409, "the object has been modified"),
            (422, "spec.containers: Required value"),
            (429, "storage is (re)initializing"),
            (500, "etcdserver: request timed out"),
            (0, "connection reset"),
            (418, "I'm a teapot"),
        )
        for cluster in ("prod-eu", "")
    ]
    pool = urllib3.HTTPConnectionPool("api.example", 6443)
    conn = urllib3.connection.HTTPConnection("api.example", 6443)
    transport = [
        urllib3.exceptions.MaxRetryError(
            pool, "/api", urllib3.exceptions.NewConnectionError(conn, "refused")
        ),
        urllib3.exceptions.MaxRetryError(
            pool,
            "/api",
            urllib3.exceptions.NameResolutionError("api.example", conn, socket.gaierror()),
        ),
        urllib3.exceptions.MaxRetryError(pool, "/api", urllib3.exceptions.SSLError("bad")),
        urllib3.exceptions.ReadTimeoutError(pool, "/api", "timed out"),
        urllib3.exceptions.ProtocolError("connection reset"),
        ConnectionError("odd"),
    ]
    unanswered = [
        translate(exc, what=Doing.of("cordon", node=NODE), write=write)
        for exc in transport
        for write in (False, True)
    ]
    try:
        yaml.safe_load("clusters: [")
    except yaml.YAMLError as exc:
        unanswered.append(translate(exc, what=Doing.of("load_config")))
    refusals = [refused_as(_api(403, said), "alice") for said in _DENIED]
    return [
        *statuses,
        *unanswered,
        translate(ConfigException("no kubeconfig"), what=Doing.of("load_config")),
        translate(ApiValueError("missing name"), what=READ_POD),
        translate(OSError("disk full"), what=READ_POD),
        translate(ValueError("not JSON"), what=READ_POD),
        *(r for r in refusals if r is not None),
    ]


def _write_errors() -> list[GpunodeError]:
    """A real write that got no answer (``bot.kube.unanswered``), and what the re-read after
    it found: it did not land, it landed without its state before, the re-read failed too."""
    t = cast(Transport, SimpleNamespace(timeout_s=10))
    timed_out = urllib3.exceptions.ReadTimeoutError(None, "/api", "timed out")  # type: ignore[arg-type]
    cordon = Doing.of("cordon", node=NODE)
    with (
        pytest.raises(WriteUnknownError) as caught,
        unanswered(t, cordon, {"verb": "cordon"}, dry_run=False),
    ):
        raise timed_out
    sent = caught.value
    step = Step(verb="cordon", kind="Node", name=NODE)
    return [
        sent,
        *(
            Settled(step, sent, Landing(landed=landed, seen="schedulable")).failure()
            for landed in (False, True)
        ),
        Settled(step, sent, None, reread_error="no answer").failure(),
    ]


#: a step of every verb, as a plan holds it (kind, namespace, name, the verb's params)
STEPS = [
    Step(verb="cordon", kind="Node", name=NODE),
    Step(verb="uncordon", kind="Node", name=NODE),
    Step(verb="evict", kind="Pod", namespace="ml", name="train-0"),
    Step(
        verb="ensure_priority_class",
        kind="PriorityClass",
        name="gpunode-protected",
        params={"value": 1000},
    ),
    Step(
        verb="set_priority_class",
        kind="Deployment",
        namespace="ml",
        name="train",
        params={"priority_class": "gpunode-protected"},
    ),
    Step(
        verb="patch_resources",
        kind="Deployment",
        namespace="ml",
        name="train",
        params={"container": "trainer"},
    ),
    Step(verb="resize_pod", kind="Pod", namespace="ml", name="train-0", params={"container": "t"}),
    Step(verb="annotate_node", kind="Node", name=NODE, params={"annotations": {"a": "b"}}),
]


def _timed_out_errors() -> list[GpunodeError]:
    """Every step cut off after the step timeout, for a real write and a dry run, and an
    eviction (whose label names no kind)."""
    assert {s.verb for s in STEPS} == set(get_args(StepVerb))
    return [
        *(timed_out(step, write=write) for step in STEPS for write in (True, False)),
        *(timed_out(STEPS[2], write=write, eviction=True) for write in (True, False)),
    ]


def _errors(tmp: Path) -> list[GpunodeError]:
    """One of every keyed error, made by the code that raises it."""
    job = {"metadata": {"namespace": "gpunode"}}
    return [
        *_agent_errors(tmp),
        *_node_errors(),
        *_not_admitted(),
        *_usage_errors(),
        *_kube_errors(),
        *_write_errors(),
        *_timed_out_errors(),
        *terminal_errors(tmp),
        UnknownClusterError("prod-asia", ("prod-eu", "prod-us")),
        ClusterUnreachableError("prod-us", "connection refused"),
        ClusterUnreachableError("prod-us", waited_s=2.5),
        ClusterUnreachableError("prod-us"),
        ClusterUnreachableError(
            "prod-us",
            cause=translate(ConnectionRefusedError("refused"), what=Doing.of("list_nodes")),
        ),
        failure(
            PodOutcome("image_pull", _pod(waiting="ErrImagePull")), job, node=NODE, timeout_s=60
        ),
        failure(
            PodOutcome("container_error", _pod(waiting="CreateContainerError")),
            job,
            node=NODE,
            timeout_s=60,
        ),
        failure(
            PodOutcome("create_failed", None, "exceeded quota: gpunode"),
            job,
            node=NODE,
            timeout_s=60,
        ),
        failure(
            PodOutcome("failed", _pod(reason="Error", terminated="Error")),
            job,
            node=NODE,
            timeout_s=60,
        ),
        failure(PodOutcome("timeout", None), job, node=NODE, timeout_s=60),
        failure(PodOutcome("timeout", _pod()), job, node=NODE, timeout_s=60),
        failure(
            PodOutcome("failed", _pod(reason="DeadlineExceeded")), job, node=NODE, timeout_s=60
        ),
        failure(PodOutcome("deleted", _running()), job, node=NODE, timeout_s=60),
        _raised("no json here"),
        _raised('{"schema_version": "99.0"}'),
        _raised('{"schema_version": "' + SCHEMA_VERSION + '"}'),
    ]


@pytest.fixture(scope="module")
def errors(tmp_path_factory: pytest.TempPathFactory) -> list[GpunodeError]:
    return _errors(tmp_path_factory.mktemp("agent"))


def test_every_worded_error_key_is_raised_somewhere(errors: list[GpunodeError]) -> None:
    """A form field's errors (``field_*``) are checked by test_field_words.py, an eviction's
    reasons (``eviction_*``) by test_refused_step_words.py."""
    worded = {k for k in error_keys() if not k.startswith(("field_", "eviction_"))}
    assert {e.key for e in errors} | AGENT_NOT_DRIVEN | NOT_DRIVEN.keys() == worded


def test_an_english_reader_sees_exactly_the_errors_own_text(errors: list[GpunodeError]) -> None:
    for err in errors:
        assert error_text(err.key, err.params, "fallback", "en") == err.message


#: params quoted as they were said, in every locale: the left-out parts of a leak check
QUOTED = ("message", "error", "said", "detail")


def _unquoted(err: GpunodeError, locale: str) -> str:
    """The error's words in ``locale``, without what it quotes as said (``QUOTED``)."""
    text = error_text(err.key, err.params, err.message, locale)
    for quoted in QUOTED:
        if err.params.get(quoted):
            text = text.replace(str(err.params[quoted]), " ")
    return text


def test_a_chinese_reader_sees_no_english_sentence_in_an_error(errors: list[GpunodeError]) -> None:
    """Quoted words (the kubelet's message, an OS error such as "No such file or directory",
    the API server's own message) are left as they were said, so they are left out of the
    check; the request the error answered is worded, so it is checked."""

    leaks = {err.key: found for err in errors if (found := english_words(_unquoted(err, "zh-CN")))}
    assert leaks == {}


def test_a_pseudo_locale_reader_sees_every_errors_words_from_the_catalog(
    errors: list[GpunodeError],
) -> None:
    """en-XA accents every catalog word: plain English left in an error's wording is a
    sentence that does not go through the catalog."""

    leaks = {err.key: found for err in errors if (found := english_words(_unquoted(err, "en-XA")))}
    assert leaks == {}


def test_an_error_without_words_falls_back_to_its_english_text() -> None:
    assert error_text("", {}, "the English text", "zh-CN") == "the English text"
    assert error_text("no_such_key", {}, "the English text", "zh-CN") == "the English text"


def test_a_failed_diagnosis_notice_words_its_error_in_the_readers_language() -> None:
    err = UnknownClusterError("prod-asia", ("prod-eu", "prod-us"))
    told = Notice(
        key="command_failed",
        params={
            "message": err.message,
            "code": err.code,
            "error_key": err.key,
            "error_params": err.params,
        },
    )
    assert "没有名为 'prod-asia' 的集群" in told_mrkdwn(told, "zh-CN")
    assert err.message in told_mrkdwn(told, "en")


def test_a_step_the_cluster_did_not_answer_in_time_is_named_in_chinese() -> None:
    """The step's English label (its verb's code, kind and target) is worded, not quoted."""
    for err in _timed_out_errors():
        text = error_text(err.key, err.params, "«no words»", "zh-CN")
        assert str(err.params["step"]) not in text, text
        assert not text.startswith(str(err.params["verb"])), text
        assert str(err.params["target"]) in text, text
