"""The stand-in remembers objects it found valid (every start seeds the same ones), and that
memory never lets an invalid object through: a changed field, a timestamp of the wrong type, or
a tuple where the schema wants a list is still refused after its valid twin was remembered."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpunode_sandbox.kubesim import validation
from gpunode_sandbox.kubesim.statuses import ApiError

VERSION = "1.35"


def _pod(created: Any = "2026-03-14T09:30:00Z") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "memo-twin", "namespace": "default", "creationTimestamp": created},
        "spec": {"containers": [{"name": "app", "image": "busybox", "args": ["sleep", "1"]}]},
    }


def _refused(obj: dict[str, Any]) -> str:
    with pytest.raises(ApiError) as caught:
        validation.validate_object(obj, VERSION)
    assert caught.value.code == 422
    return str(caught.value.message)


def test_a_valid_object_is_remembered_and_accepted_again_at_another_time() -> None:
    validation.validate_object(_pod(), VERSION)

    assert validation._memo_key(_pod(), VERSION) in validation._valid
    assert validation._memo_key(_pod("2031-01-01T00:00:00Z"), VERSION) in validation._valid
    validation.validate_object(_pod("2031-01-01T00:00:00Z"), VERSION)


def test_a_changed_field_is_still_refused_after_its_valid_twin_was_remembered() -> None:
    validation.validate_object(_pod(), VERSION)
    bad = _pod()
    bad["spec"]["containers"][0]["name"] = 5

    assert "spec.containers.0.name: 5 is not of type 'string'" in _refused(bad)


def test_a_timestamp_that_is_not_a_string_is_still_refused() -> None:
    validation.validate_object(_pod(), VERSION)

    assert "metadata.creationTimestamp" in _refused(_pod(created=1710408600))


def test_a_tuple_where_the_schema_wants_a_list_is_not_its_list_twin() -> None:
    validation.validate_object(_pod(), VERSION)
    tupled = copy.deepcopy(_pod())
    tupled["spec"]["containers"][0]["args"] = ("sleep", "1")

    assert "spec.containers.0.args" in _refused(tupled)


def test_the_memory_masks_the_timestamp_only_where_the_schema_allows_any_string() -> None:
    assert validation._memo_masks_time(VERSION, "Pod", "v1")
    assert validation._memo_masks_time(VERSION, "Deployment", "apps/v1")
    assert not validation._memo_masks_time(VERSION, "NoSuchKind", "v1")


def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation, "MEMO_MAX", 10)

    for i in range(25):
        pod = _pod()
        pod["metadata"]["name"] = f"memo-{i}"
        validation.validate_object(pod, VERSION)

    assert 0 < len(validation._valid) <= 10
