"""tests/schemas.py's ``validate_strict`` answers what ``kubernetes_validate.validate(...,
strict=True)`` answers: the same schema version for an object that passes, the same exception
and message for one that fails, whatever was validated before it (its validators are kept)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
from kubernetes_validate import utils as kv_utils

from bot.config import KubeSettings
from bot.kube.jobs import build_job
from tests.schemas import validate_strict


def _job() -> dict[str, Any]:
    return build_job(KubeSettings(), "gpu-node-01", "abc123")


def _misspelled(job: dict[str, Any]) -> None:
    job["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFileSystem"] = True


def _wrong_type(job: dict[str, Any]) -> None:
    job["spec"]["backoffLimit"] = "three"


def _unknown_kind(job: dict[str, Any]) -> None:
    job["kind"] = "Jobb"


def _unknown_group(job: dict[str, Any]) -> None:
    job["apiVersion"] = "batch.example.com/v9"


def _unchanged(job: dict[str, Any]) -> None:
    pass


CHANGES: dict[str, Callable[[dict[str, Any]], None]] = {
    "as rendered": _unchanged,
    "misspelled field": _misspelled,
    "wrong type": _wrong_type,
    "unknown kind": _unknown_kind,
    "unknown group": _unknown_group,
}
#: supported, with and without a leading "v", a patch release, one past the newest schema
VERSIONS = ("1.31.0", "v1.37.0", "1.35.4", "1.99.0")


def _answer(check: Callable[[], str]) -> tuple[str, str, str]:
    """(kind of answer, version or exception type, its message)."""
    try:
        return "ok", check(), ""
    except Exception as exc:
        return "raised", type(exc).__name__, str(getattr(exc, "message", exc))


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_validate_strict_answers_what_the_library_answers(change: str, version: str) -> None:
    job = _job()
    CHANGES[change](job)
    ours = [_answer(lambda: validate_strict(copy.deepcopy(job), version)) for _ in range(2)]
    theirs = _answer(lambda: kubernetes_validate.validate(copy.deepcopy(job), version, strict=True))
    assert ours == [theirs, theirs]


def test_a_failure_is_the_librarys_validation_error_with_its_path_and_version() -> None:
    job = _job()
    _wrong_type(job)
    with pytest.raises(kubernetes_validate.ValidationError) as ours:
        validate_strict(job, "1.31.0")
    with pytest.raises(kubernetes_validate.ValidationError) as theirs:
        kubernetes_validate.validate(job, "1.31.0", strict=True)
    assert (ours.value.version, list(ours.value.absolute_path), ours.value.message) == (
        theirs.value.version,
        list(theirs.value.absolute_path),
        theirs.value.message,
    )


def test_a_version_past_the_newest_schema_is_the_librarys_version_error() -> None:
    with pytest.raises(kv_utils.VersionNotSupportedError):
        validate_strict(_job(), "1.99.0")
