"""Errors a person meets are worded in their language: an error carries a key and raw
parameters, the catalog words it, and English readers see exactly the error's own text."""

from __future__ import annotations

import pytest

from bot.core.governance.commands import parse
from bot.core.model.durations import parse_duration
from bot.core.model.evidence import SCHEMA_VERSION
from bot.core.reporting.outcomes import Notice
from bot.errors import (
    ClusterUnreachableError,
    DiagnosticJobError,
    GpunodeError,
    UnknownClusterError,
    UsageError,
)
from bot.kube.jobs import PodOutcome, failure, parse_evidence
from bot.render.errors import error_keys, error_text
from bot.render.notices import told_mrkdwn
from tests.render.test_catalogs import english_words
from tests.render.test_usage_words import MALFORMED

NODE = "gpu-node-07"


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


def _errors() -> list[GpunodeError]:
    """One of every keyed error, made by the code that raises it."""
    job = {"metadata": {"namespace": "gpunode"}}
    return [
        *_not_admitted(),
        *_usage_errors(),
        UnknownClusterError("prod-asia", ("prod-eu", "prod-us")),
        ClusterUnreachableError("prod-us", "connection refused"),
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
def errors() -> list[GpunodeError]:
    return _errors()


def test_every_worded_error_key_is_raised_somewhere(errors: list[GpunodeError]) -> None:
    assert {e.key for e in errors} == set(error_keys())


def test_an_english_reader_sees_exactly_the_errors_own_text(errors: list[GpunodeError]) -> None:
    for err in errors:
        assert error_text(err.key, err.params, "fallback", "en") == err.message


def test_a_chinese_reader_sees_no_english_sentence_in_an_error(errors: list[GpunodeError]) -> None:
    """The kubelet's own message is quoted as it said it, so it is left out of the check."""
    leaks = {
        err.key: words
        for err in errors
        if (
            words := english_words(
                error_text(err.key, err.params, err.message, "zh-CN").replace(
                    str(err.params.get("message", "")) or "\0", " "
                )
            )
        )
    }
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
